#!/usr/bin/env python3
"""The implicit-MPM benchmark of issue 6 (docs/performance.md, "Implicit MPM").

A 3-D fixed-corotated block of 201,600 particles (jobs/bench/implicit/drop.yaml) falls at 1 m/s
onto the ground at two stiffnesses. For each it runs explicit MPM at the CFL step dx / c (c the
P-wave speed) and the implicit integrator at multiples of that step (PLAN below: the matrix-free defaults at
20, 100 and 500x, multigrid and backward Euler at 100x, the assembled operator with GAMG where its
assembly is affordable), all over the same simulated span under
`mpirun -np RANKS build/src/app/nendo run`. It writes a CSV (wall time, Newton and KSP iterations
per step, peak resident bytes per particle, centre-of-mass drop and rebound velocity against the
explicit run) and a plot of the centre-of-mass velocity, and prints a Markdown table. Bytes per
particle: the peak resident sets of all ranks (libraries, MPI and PETSc included) over the
particle count.

    python3 jobs/bench/implicit/run.py [--ranks 2] [--out /tmp/nendo-implicit-bench] [--only SUBSTRING]
        [--reuse]   (finished runs of an earlier invocation are read back, not run again)

The centre-of-mass velocity comes from diagnostics.csv (momentum / mass, written every
output.every); its height is its integral (trapezoid rule) from the start.
"""
import argparse
import csv
import json
import math
import os
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCENE = os.path.join(ROOT, "jobs", "bench", "implicit", "drop.yaml")
DX, NU, RHO = 0.01, 0.3, 1000.0
DROP_SPEED = 1.0  # m/s, the block's initial velocity (drop.yaml)
PARTICLES = 30 * 28 * 30 * 8
OPERATORS = {
    "mf": ["--set", "implicit.operator=matrix_free"],  # the defaults: midpoint, Eisenstat-Walker, Jacobi
    "mf-mg": ["--set", "implicit.operator=matrix_free", "--set", "implicit.preconditioner=multigrid"],
    "mf-be": ["--set", "implicit.operator=matrix_free", "--set", "implicit.scheme=backward_euler"],
    "gamg": ["--set", "implicit.operator=assembled"],
    "hypre": ["--set", "implicit.operator=assembled", "--set", "implicit.petsc_options=-pc_type hypre"],
}
# (E, explicit or an OPERATORS key, dt / CFL step). At E = 1e7, 500x the step (43 ms) is longer
# than the span; the assembled operator runs where few Newton iterations keep its assembly
# (about 25 s per Newton iteration at this size, see docs/performance.md) affordable. Since issue
# 30 the defaults are the midpoint rule with Eisenstat-Walker forcing (mf); backward Euler (mf-be)
# and multigrid (mf-mg) once each. hypre (BoomerAMG, 0.08-0.39x in the first runs) is left out of
# the plan; run it with --only hypre after adding its rows.
PLAN = [
    (1e9, "explicit", 1), (1e9, "mf", 20), (1e9, "mf", 100), (1e9, "mf", 500), (1e9, "mf-mg", 100),
    (1e9, "mf-be", 100), (1e9, "gamg", 500),
    (1e7, "explicit", 1), (1e7, "mf", 20), (1e7, "mf", 100), (1e7, "mf-mg", 100), (1e7, "gamg", 100),
]


# Each rank runs nendo under this, which prints the child's peak resident set (VmHWM) in KiB.
PEAK_RSS = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]); "
            "print('peak_rss_kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, flush=True); "
            "sys.exit(code)")


def wave_speed(young):
    return math.sqrt(young * (1 - NU) / ((1 + NU) * (1 - 2 * NU)) / RHO)


def cfl_step(young):
    return DX / wave_speed(young)


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def com_history(out):
    rows = read_csv(os.path.join(out, "diagnostics.csv"))
    t = [float(r["time"]) for r in rows]
    v = [float(r["momentum_y"]) / float(r["mass"]) for r in rows]
    y = [0.0]
    for i in range(1, len(t)):
        y.append(y[-1] + 0.5 * (v[i] + v[i - 1]) * (t[i] - t[i - 1]))
    return t, v, y


def run(args, name, young, multiple, integrator, operator):
    # The explicit run just below nendo's stable limit dx / (c + |v|) (the block falls at 1 m/s;
    # dx / c itself is refused since the limit counts |v|), the implicit runs at multiples of dx / c.
    dt = cfl_step(young) * (multiple if integrator == "implicit" else 0.999 / (1 + DROP_SPEED / wave_speed(young)))
    out = os.path.join(args.out, name)
    saved = os.path.join(args.out, name + ".json")
    if args.reuse and os.path.exists(saved):  # a finished run of an earlier invocation
        with open(saved) as f:
            row = json.load(f)
        return row, com_history(out) if row["exit"] == 0 else None
    cmd = ["mpirun", "-np", str(args.ranks), sys.executable, "-c", PEAK_RSS, os.path.join(args.build, "src", "app", "nendo"), "run", SCENE, "--overwrite",
           "--output", out, "--set", f"materials.block.E={young}", "--set", f"time.dt={dt:.6g}",
           "--set", f"time.end={args.end}", "--set", f"time.integrator={integrator}"]
    if integrator == "implicit":
        cmd += OPERATORS[operator]
    subprocess.run(["rm", "-rf", out], check=True)
    start = time.perf_counter()
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - start
    rss = sum(int(line.split()[1]) for line in result.stdout.splitlines() if line.startswith("peak_rss_kib"))
    log = os.path.join(args.out, name + ".log")
    with open(log, "w") as f:
        f.write(" ".join(cmd) + "\n" + result.stdout)
    row = {"run": name, "E": young, "integrator": integrator, "operator": operator if integrator == "implicit" else "",
           "dt_over_cfl": multiple, "dt": dt, "exit": result.returncode, "wall_s": round(wall, 2),
           "steps": "", "newton_per_step": "", "ksp_per_step": "", "ksp_per_newton": "", "retries": "",
           "bytes_per_particle": round(rss * 1024 / PARTICLES),
           "particle_steps_per_s": ""}
    if result.returncode != 0:
        print(f"{name}: exit {result.returncode}, see {log}", file=sys.stderr)
        return row, None
    steps = round(args.end / dt)
    row["steps"] = steps
    row["particle_steps_per_s"] = f"{PARTICLES * steps / wall:.3g}"
    solver = os.path.join(out, "solver.csv")
    if os.path.exists(solver):
        rows = read_csv(solver)
        newton = sum(int(r["newton_iterations"]) for r in rows)
        ksp = sum(int(r["ksp_iterations"]) for r in rows)
        row["newton_per_step"] = round(newton / len(rows), 2)
        row["ksp_per_step"] = round(ksp / len(rows), 1)
        row["ksp_per_newton"] = round(ksp / max(newton, 1), 1)
        row["retries"] = sum(int(r["substeps"]) - 1 for r in rows) // 2
    with open(saved, "w") as f:
        json.dump(row, f)
    return row, com_history(out)


def compare(row, history, reference):
    """Lowest centre-of-mass height and the largest upward velocity after it, against explicit."""
    t, v, y = history
    low = min(range(len(y)), key=lambda i: y[i])
    rebound = max(v[low:])
    row["com_min_mm"] = round(1e3 * y[low], 3)
    row["t_bounce_ms"] = round(1e3 * t[low], 2)
    row["rebound_m_s"] = round(rebound, 4)
    if reference:
        ref_low = reference["com_min_mm"]
        row["com_min_vs_explicit"] = f"{(row['com_min_mm'] - ref_low) / abs(ref_low):+.2%}"
        row["rebound_vs_explicit"] = f"{rebound - reference['rebound_m_s']:+.4f}"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--out", default="/tmp/nendo-implicit-bench")
    p.add_argument("--end", type=float, default=0.02, help="simulated span [s]")
    p.add_argument("--only", default="", help="run only the PLAN entries whose name contains this")
    p.add_argument("--reuse", action="store_true", help="take finished runs from an earlier invocation")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    env = os.environ
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl_vader_single_copy_mechanism="none")
    rows, curves, references = [], {}, {}
    for young, kind, multiple in PLAN:
        label = f"E{young:.0e}".replace("+0", "")
        name = f"{label}-explicit" if kind == "explicit" else f"{label}-{kind}-{multiple}x"
        if args.only not in name:
            continue
        integrator = "explicit" if kind == "explicit" else "implicit"
        row, history = run(args, name, young, multiple, integrator, kind)
        if history:
            compare(row, history, references.get(young))
            curves[name] = history
            if kind == "explicit":
                references[young] = row
            elif young in references:
                row["speedup_vs_explicit"] = round(references[young]["wall_s"] / row["wall_s"], 2)
        rows.append(row)
        print(row, flush=True)
    stiffnesses = sorted({young for young, _, _ in PLAN}, reverse=True)
    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    table = os.path.join(args.out, "implicit-bench.csv")
    with open(table, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {table}")
    shown = ["run", "wall_s", "speedup_vs_explicit", "steps", "newton_per_step", "ksp_per_newton",
             "bytes_per_particle", "com_min_vs_explicit", "t_bounce_ms", "rebound_m_s"]
    print("| " + " | ".join(shown) + " |\n|" + "---|" * len(shown))
    for r in rows:
        print("| " + " | ".join(str(r.get(k, "")) for k in shown) + " |")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, len(stiffnesses), figsize=(6 * len(stiffnesses), 4), squeeze=False)
        for ax, young in zip(axes[0], stiffnesses):
            label = f"E{young:.0e}".replace("+0", "")
            for name, (t, v, _) in curves.items():
                if name.startswith(label):
                    ax.plot([1e3 * x for x in t], v, "-" if "explicit" in name else "--", label=name[len(label) + 1:])
            ax.set_title(f"E = {young:.0e} Pa")
            ax.set_xlabel("t [ms]")
            ax.set_ylabel("centre-of-mass velocity [m/s]")
            ax.legend(fontsize=7)
        fig.tight_layout()
        png = os.path.join(args.out, "implicit-bench.png")
        fig.savefig(png, dpi=110)
        print(f"wrote {png}")
    except ImportError:
        pass


if __name__ == "__main__":
    main()
