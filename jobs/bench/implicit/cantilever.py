#!/usr/bin/env python3
"""The swinging-beam benchmark of issue 30 ("Implicit MPM that pays").

Stiff beams (E = 1 GPa) held by sticky walls swing under a heavy body load for two bending periods
(jobs/bench/implicit/*.yaml, each with its Euler-Bernoulli deflection and period in its header):

    cantilever-2d, cantilever-3d   clamped at one end; the tip is followed
    bridge-2d, bridge-3d           clamped at both ends; the midspan is followed

For each scene it runs `mpirun -np RANKS nendo run` explicitly at the CFL step (CFL x dx / c, c the
P-wave speed; CFL 0.8 by default, as 0.9 already diverges on these beams) and implicitly at 100x and
250x that step with the implicit defaults (no other setting), plus the --extra runs. Per run: wall
time of the whole mpirun (start-up and output included) and the speed-up against explicit, steps,
Newton iterations per step and KSP iterations per Newton iteration (OUT/solver.csv), bytes per
particle (peak resident sets of all ranks over the particle count, libraries included), and the
motion against the explicit run: the mean vertical displacement of the particles of the beam's last
cell (the tip; for a bridge those within half a cell of midspan), followed by id through the
particle files; its first two troughs and the period between them; and the motion error,
max |y(t) - y_explicit(t)| over the run's output times (explicit interpolated linearly) over the
explicit peak-to-peak swing.

    /usr/bin/python3 jobs/bench/implicit/cantilever.py [--ranks 2] [--build BUILD] [--out DIR]
        [--only SUBSTRING] [--reps 3] [--reuse] [--quick | --end 0.01] [--multiples 100 250]
        [--extra NAME MULTIPLE [KEY=VALUE ...]] [--set KEY=VALUE] [--timeout SECONDS]

    --only cantilever-3d                      the runs whose "scene/run" name contains this
    --quick                                   a twentieth of each span: checks that all runs work
    --extra midpoint 100 implicit.scheme=midpoint                  an extra implicit run per scene
    --extra mg-250 250 "implicit.petsc_options=-pc_type mg"        (its name, step / explicit step,
                                                                    --set overrides)

Writes OUT/cantilever-bench.csv (one row per run), OUT/<scene>/<run>-motion.csv (the displacement
over time), OUT/cantilever-bench.png (if matplotlib is there) and prints a Markdown table. A failed
run is a row with its exit code and log. Needs h5py for the tip; without it the centre of mass (the
integral of momentum / mass from diagnostics.csv) stands in.
"""
import argparse
import bisect
import csv
import glob
import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import time

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
HERE = os.path.join(ROOT, "jobs", "bench", "implicit")
SCENES = {"cantilever-2d": "tip", "cantilever-3d": "tip", "bridge-2d": "midspan", "bridge-3d": "midspan"}

# Each rank runs nendo under this, which writes the child's peak resident set (VmHWM) in KiB to
# its own file argv[1].RANK (printed lines of the ranks can interleave in mpirun's output).
PEAK_RSS = ("import os, resource, subprocess, sys; code = subprocess.call(sys.argv[2:]); "
            "rank = os.environ.get('OMPI_COMM_WORLD_RANK', os.environ.get('PMI_RANK', str(os.getpid()))); "
            "open(sys.argv[1] + '.' + rank, 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); "
            "sys.exit(code)")


def floor_digits(x, digits=4):
    """x rounded down to `digits` significant digits (a step never above the limit it comes from)."""
    scale = 10 ** (math.floor(math.log10(x)) - digits + 1)
    return math.floor(x / scale * (1 + 1e-12)) * scale


def cfl_step(scene, cfl):
    """cfl * dx / c with c the largest P-wave speed sqrt((lambda + 2 mu) / rho) of the materials."""
    speeds = []
    for m in scene["materials"].values():
        young, nu, rho = float(m["E"]), float(m["nu"]), float(m["density"])
        speeds.append(math.sqrt(young * (1 - nu) / ((1 + nu) * (1 - 2 * nu)) / rho))
    return floor_digits(cfl * float(scene["grid"]["dx"]) / max(speeds))


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def motion_from_particles(out, kind, dx):
    """Mean vertical displacement of the tip (midspan) particles at every output, by id."""
    import h5py
    import numpy as np
    files = sorted(glob.glob(os.path.join(out, "particles_*.h5")),
                   key=lambda f: int(re.search(r"particles_(\d+)\.h5$", f).group(1)))
    if not files:
        raise RuntimeError(f"no particles_*.h5 in {out}")
    t, y, chosen, y0 = [], [], None, None
    for path in files:
        with h5py.File(path, "r") as h:
            ids, pos = h["particles/id"][:], h["particles/position"][:]
            when = float(h.attrs["time"])
        order = np.argsort(ids)
        ids, pos = ids[order], pos[order]
        if chosen is None:  # the first output (t = 0) picks the particles
            x = pos[:, 0]
            if kind == "tip":
                near = x > x.max() - dx
            else:
                near = np.abs(x - 0.5 * (x.min() + x.max())) < 0.5 * dx
            chosen = ids[near]
            y0 = pos[near, 1].mean()
        rows = np.searchsorted(ids, chosen)
        if rows.max(initial=0) >= len(ids) or not np.array_equal(ids[rows], chosen):
            raise RuntimeError(f"{path}: some followed particles are missing")
        t.append(when)
        y.append(float(pos[rows, 1].mean() - y0))
    return t, y


def motion_from_diagnostics(out):
    """Centre-of-mass height change: the integral of momentum_y / mass (trapezoid rule)."""
    rows = read_csv(os.path.join(out, "diagnostics.csv"))
    t = [float(r["time"]) for r in rows]
    v = [float(r["momentum_y"]) / float(r["mass"]) for r in rows]
    y = [0.0]
    for i in range(1, len(t)):
        y.append(y[-1] + 0.5 * (v[i] + v[i - 1]) * (t[i] - t[i - 1]))
    return t, y


def motion(out, kind, dx):
    try:
        return motion_from_particles(out, kind, dx), kind
    except ImportError:
        print("cantilever.py: no h5py (run /usr/bin/python3): the centre of mass stands in for the tip",
              file=sys.stderr)
        return motion_from_diagnostics(out), "com"


def troughs(t, y):
    """Times and depths of the local minima below half the deepest point, refined by a parabola."""
    low, found = min(y), []
    for i in range(1, len(y) - 1):
        if y[i] < y[i - 1] and y[i] <= y[i + 1] and y[i] < 0.5 * low:
            a, b, c = y[i - 1], y[i], y[i + 1]
            curv = a - 2 * b + c
            s = 0.5 * (a - c) / curv if curv > 0 else 0.0  # vertex offset in samples, |s| <= 1/2
            h = t[i + 1] - t[i] if s > 0 else t[i] - t[i - 1]
            found.append((t[i] + s * h, b - 0.25 * (a - c) * s))
    return found


def interp(x, xs, ys):
    """Linear interpolation of (xs, ys) at x, xs ascending and x within them."""
    i = max(1, min(len(xs) - 1, bisect.bisect_left(xs, x)))
    w = (x - xs[i - 1]) / (xs[i] - xs[i - 1]) if xs[i] > xs[i - 1] else 0.0
    return ys[i - 1] + w * (ys[i] - ys[i - 1])


def run_once(cmd, timeout):
    """Run cmd in its own process group; on timeout end that group. Returns (code, output, wall)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            output, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            output, _ = proc.communicate()
        output += f"\ncantilever.py: killed after the --timeout of {timeout} s\n"
        return "timeout", output, time.perf_counter() - start
    return proc.returncode, output, time.perf_counter() - start


def load_saved(out):
    """The row and motion of a run of an earlier invocation (None if there is none)."""
    if not os.path.exists(out + ".json"):
        return None
    with open(out + ".json") as f:
        row = json.load(f)
    if row["exit"] == 0 and os.path.exists(out + "-motion.csv"):
        rows = read_csv(out + "-motion.csv")
        return row, ([float(r["time"]) for r in rows], [float(r["y_mm"]) / 1e3 for r in rows])
    return row, None


def run(args, scene_name, scene, run_name, dt, multiple, settings, end):
    out = os.path.join(args.out, scene_name, run_name)
    saved = out + ".json"
    kind, dx = SCENES[scene_name], float(scene["grid"]["dx"])
    earlier = load_saved(out) if args.reuse else None
    if earlier and (earlier[0]["end_s"], earlier[0]["dt_us"], earlier[0]["settings"]) == (
            end, round(dt * 1e6, 4), " ".join(settings + args.set)):
        return earlier  # the same run, finished by an earlier invocation
    scene_file = os.path.join(HERE, scene_name + ".yaml")
    rss_file = os.path.join(args.out, scene_name, run_name + ".peak-rss-kib")
    cmd = ["mpirun", "-np", str(args.ranks), sys.executable, "-c", PEAK_RSS, rss_file,
           os.path.join(args.build, "src", "app", "nendo"), "run", scene_file, "--output", out, "--overwrite",
           "--set", f"time.dt={dt:.6g}", "--set", f"time.end={end:.6g}"]
    for s in settings + args.set:
        cmd += ["--set", s]
    row = {"scene": scene_name, "run": run_name, "dt_us": round(dt * 1e6, 4), "dt_over_explicit": multiple,
           "settings": " ".join(settings + args.set), "end_s": end, "exit": "", "log": out + ".log", "wall_s": "",
           "nendo_loop_s": "", "steps": "", "newton_per_step": "", "ksp_per_newton": "", "ksp_per_step": "",
           "retries": "", "particles": "", "peak_rss_mb": "", "bytes_per_particle": ""}
    walls = []
    for _ in range(args.reps):
        subprocess.run(["rm", "-rf", out] + glob.glob(rss_file + ".*"), check=True)
        code, output, wall = run_once(cmd, args.timeout)
        walls.append(wall)
        with open(row["log"], "w") as f:
            f.write(" ".join(f"'{c}'" if " " in c else c for c in cmd) + "\n" + output)
        row["exit"] = code
        if code != 0:
            break
    row["wall_s"] = round(statistics.median(walls), 2)
    if row["exit"] != 0:
        print(f"{scene_name}/{run_name}: exit {row['exit']}, see {row['log']}", file=sys.stderr)
        with open(saved, "w") as f:
            json.dump(row, f)
        return row, None
    done = re.search(r"nendo: (\d+) steps to t = \S+ in ([0-9.]+) s", output)
    if done:
        row["steps"], row["nendo_loop_s"] = int(done.group(1)), float(done.group(2))
    ranks = glob.glob(rss_file + ".*")
    rss = sum(int(open(f).read()) for f in ranks)
    if len(ranks) != args.ranks:
        row["note"] = f"peak resident set of {len(ranks)} of {args.ranks} ranks"
    diagnostics = read_csv(os.path.join(out, "diagnostics.csv"))
    row["particles"] = int(diagnostics[0]["particles"])
    row["peak_rss_mb"] = round(rss / 1024, 1)
    row["bytes_per_particle"] = round(rss * 1024 / row["particles"])
    solver = os.path.join(out, "solver.csv")
    if os.path.exists(solver):
        steps = read_csv(solver)
        newton = sum(int(r["newton_iterations"]) for r in steps)
        ksp = sum(int(r["ksp_iterations"]) for r in steps)
        row["newton_per_step"] = round(newton / max(len(steps), 1), 2)
        row["ksp_per_newton"] = round(ksp / max(newton, 1), 1)
        row["ksp_per_step"] = round(ksp / max(len(steps), 1), 1)
        row["retries"] = sum(int(r["substeps"]) > 1 for r in steps)
    try:
        (t, y), probe = motion(out, kind, dx)
    except Exception as e:  # a run that finished but cannot be measured is still a row
        row["note"] = f"motion not measured: {e}"
        print(f"{scene_name}/{run_name}: {row['note']}", file=sys.stderr)
        t, y, probe = None, None, ""
    row["probe"] = probe
    if t is not None:
        with open(out + "-motion.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["time", "y_mm"])
            w.writerows([a, f"{1e3 * b:.6g}"] for a, b in zip(t, y))
    with open(saved, "w") as f:
        json.dump(row, f)
    return row, (t, y) if t is not None else None


def compare(row, curve, reference, ref_row):
    """The first two troughs, the period between them, and the motion error against explicit."""
    t, y = curve
    found = troughs(t, y)
    for k, (when, depth) in enumerate(found[:2], 1):
        row[f"trough{k}_ms"], row[f"trough{k}_mm"] = round(1e3 * when, 3), round(1e3 * depth, 3)
    if len(found) >= 2:
        row["period_ms"] = round(1e3 * (found[1][0] - found[0][0]), 3)
    row["peak_to_peak_mm"] = round(1e3 * (max(y) - min(y)), 3)
    if reference is curve:
        row["speedup"] = 1
    if reference is None or reference is curve:
        return
    rt, ry = reference
    window = [b for a, b in zip(rt, ry) if a <= t[-1] * (1 + 1e-9)]  # explicit over this run's span
    span = max(window) - min(window)
    common = [(a, b) for a, b in zip(t, y) if a <= rt[-1] * (1 + 1e-9)]
    if span > 0 and common:
        row["motion_error"] = f"{max(abs(b - interp(a, rt, ry)) for a, b in common) / span:.2%}"
    for key in ("trough1_mm", "trough2_mm", "period_ms"):
        if key in row and ref_row.get(key):
            row[key.split("_")[0] + "_vs_explicit"] = f"{row[key] / ref_row[key] - 1:+.1%}"
    if ref_row.get("wall_s") and row.get("wall_s"):
        row["speedup"] = round(ref_row["wall_s"] / row["wall_s"], 2)


def plot(path, scenes, curves):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
        return
    fig, axes = plt.subplots(len(scenes), 1, figsize=(9, 3.2 * len(scenes)), squeeze=False)
    for ax, name in zip(axes[:, 0], scenes):
        for run_name, (t, y) in curves.get(name, {}).items():
            style = dict(lw=2, color="k") if run_name == "explicit" else dict(ls="--", marker=".", ms=3)
            ax.plot([1e3 * a for a in t], [1e3 * b for b in y], label=run_name, **style)
        ax.set_title(f"{name}: {'midspan' if SCENES[name] == 'midspan' else 'tip'} displacement")
        ax.set_xlabel("t [ms]")
        ax.set_ylabel("y - y0 [mm]")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--out", default="/tmp/nendo-cantilever-bench")
    p.add_argument("--only", default="", help="run only the runs whose scene/run name contains this")
    p.add_argument("--reuse", action="store_true", help="take finished runs from an earlier invocation")
    p.add_argument("--reps", type=int, default=1, help="runs per case; the wall time is their median")
    p.add_argument("--cfl", type=float, default=0.8, help="explicit step = CFL dx / c (default 0.8)")
    p.add_argument("--multiples", type=float, nargs="+", default=[100, 250],
                   help="implicit steps as multiples of the explicit step (default 100 250)")
    p.add_argument("--end", type=float, help="simulated span [s] of every run (default: the scene's)")
    p.add_argument("--quick", action="store_true", help="a twentieth of each scene's span (a test)")
    p.add_argument("--extra", nargs="+", action="append", default=[], metavar="NAME MULTIPLE [KEY=VALUE]",
                   help="an extra implicit run per scene: its name, its step as a multiple of the explicit "
                        "step and --set overrides (repeatable)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a --set override for every run, explicit too (repeatable)")
    p.add_argument("--timeout", type=float, default=None, help="end a run after this many seconds")
    args = p.parse_args()
    extras = []
    for e in args.extra:
        if len(e) < 2:
            p.error("--extra needs NAME MULTIPLE [KEY=VALUE ...]")
        extras.append((e[0], float(e[1]), [s for s in e[2:]]))
    os.makedirs(args.out, exist_ok=True)
    os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                      OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl_vader_single_copy_mechanism="none",
                      OMPI_MCA_pml="ob1")
    rows, curves, shown_scenes = [], {}, []
    for scene_name in SCENES:
        with open(os.path.join(HERE, scene_name + ".yaml")) as f:
            scene = yaml.safe_load(f)
        end = args.end or float(scene["time"]["end"]) / (20 if args.quick else 1)
        step = cfl_step(scene, args.cfl)
        plan = [("explicit", 1, ["time.integrator=explicit"])]
        plan += [(f"implicit-{m:g}x", m, ["time.integrator=implicit"]) for m in args.multiples]
        plan += [(name, m, ["time.integrator=implicit"] + s) for name, m, s in extras]
        reference, ref_row = None, {}
        for run_name, multiple, settings in plan:
            if args.only not in f"{scene_name}/{run_name}":
                if run_name != "explicit" or not any(args.only in f"{scene_name}/{r}" for r, _, _ in plan):
                    continue
                earlier = load_saved(os.path.join(args.out, scene_name, "explicit"))
                if not earlier:  # the reference is not run here and there is none from before
                    continue
                row, curve = earlier  # an earlier invocation's explicit run is the reference
                row["note"] = "explicit run of an earlier invocation"
            else:
                os.makedirs(os.path.join(args.out, scene_name), exist_ok=True)
                row, curve = run(args, scene_name, scene, run_name, multiple * step, multiple, settings, end)
            if curve:
                if run_name == "explicit":
                    reference, ref_row = curve, row
                compare(row, curve, reference, ref_row)
                curves.setdefault(scene_name, {})[run_name] = curve
            rows.append(row)
            if scene_name not in shown_scenes:
                shown_scenes.append(scene_name)
            print(json.dumps(row), flush=True)
    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    table = os.path.join(args.out, "cantilever-bench.csv")
    with open(table, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {table}")
    shown = ["scene", "run", "dt_us", "wall_s", "speedup", "steps", "newton_per_step", "ksp_per_newton",
             "bytes_per_particle", "trough1_mm", "trough1_vs_explicit", "trough2_vs_explicit", "period_ms",
             "period_vs_explicit", "motion_error", "exit"]
    print("\n| " + " | ".join(shown) + " |\n|" + "---|" * len(shown))
    for r in rows:
        cells = [str(r.get(k, "")) for k in shown]
        if r.get("exit") not in (0, ""):
            cells[-1] = f"{r['exit']} ({r['log']})"
        print("| " + " | ".join(cells) + " |")
    if curves:
        plot(os.path.join(args.out, "cantilever-bench.png"), shown_scenes, curves)


if __name__ == "__main__":
    main()
