#!/usr/bin/env python3
"""Strong and weak scaling sweeps (issue 11; how to report: validation.md §8).

Runs `nendo run` for each method, kind and rank count, `--reps` times, and takes the median of the
step time that nendo prints at the end of a run (steps only: no set-up, output or checkpoints).
Writes scaling.csv (one row per case, medians) and runs.csv (every run) and, per method, a PNG
with speed-up, efficiency, particle-steps/s per core, MPI share and imbalance.

Cases:
  mpm         jobs/bench/mpm/collision.yaml: strong on 1 024 000 particles; weak 512 000 per
              rank (the blocks stretched along z with the rank count).
  pbd_powder  jobs/scenes/pbd_powder/large-pour.yaml as a resting block: strong on 200 000
              particles; weak 100 000 per rank; re-balanced by measured time every frame.

The node's own ceiling: in every repeat, two independent 1-rank runs of the weak 1-rank case (the
work of one rank of the 2-rank runs, no communication) run side by side, each pinned to its own
core. Their slowdown against the same run alone is what sharing the node costs (memory bandwidth,
caches, frequency) whatever the code does; `node_ceiling` = T(1 alone) / T(pair) bounds the
2-rank efficiency from above, and `efficiency_vs_node` = efficiency / node_ceiling is the part
nendo is responsible for.

--scale shrinks every case along z (the test suite runs the sweep at 1/16 to check the driver).
--check-ranks runs a few steps on more ranks (here 3 and 4 on 2 cores: for correctness, not
timing) and requires the last diagnostics row (energies and momenta, 17 digits) to be the same
as on one rank.

    python3 jobs/scaling/run.py                          # 1 and 2 ranks, median of 3, ~15 min
    python3 jobs/scaling/run.py --ranks 1,2,4,8,16 --launcher srun   # on a cluster (jobs/slurm/)
    python3 jobs/scaling/run.py --mpirun-args "--mca btl tcp,self"   # the TCP path over loopback
"""
import argparse
import csv
import os
import re
import shlex
import statistics
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MPM_SCENE = os.path.join(ROOT, "jobs", "bench", "mpm", "collision.yaml")
PBD_SCENE = os.path.join(ROOT, "jobs", "scenes", "pbd_powder", "large-pour.yaml")


def mpm_case(kind, ranks, scale):
    """The collision benchmark: 0.2 m of z per 512 000 particles."""
    z = (0.4 if kind == "strong" else 0.2 * ranks) * scale
    return MPM_SCENE, ["--set", f"bodies.0.max=[0.4,0.4,{z:g}]", "--set", f"bodies.1.max=[0.8,0.4,{z:g}]"]


def pbd_case(kind, ranks, scale):
    """A resting block of powder, 100 x 20 particles in x and y, 100 (strong) or 50 per rank in z.
    Balanced by measured time after every frame: the particles on the floor and under the weight of
    the rest cost more than those on top, so an even count leaves one rank waiting (11 % here)."""
    z = (0.5 if kind == "strong" else 0.25 * ranks) * scale
    body = f"[{{shape: box, min: [0, 0, 0], max: [0.5, 0.1, {z:g}], material: powder}}]"
    return PBD_SCENE, ["--set", "emitters=[]", "--set", f"bodies={body}",
                       "--set", "balance={every_steps: 1, threshold: 1.05, weights: time}"]


METHODS = {"mpm": (mpm_case, 50), "pbd_powder": (pbd_case, 3)}  # case, timed steps

STEPS_LINE = re.compile(r"nendo: (\d+) steps took ([0-9.]+) s \(max over ranks\), ([0-9.e+-]+) particle-steps/s; "
                        r"particles per rank max/mean ([0-9.]+)")
MPI_LINE = re.compile(r"MPI calls took ([0-9.]+)% of the step time \(mean over ranks; min ([0-9.]+)%, max "
                      r"([0-9.]+)%\); work per rank max/mean ([0-9.]+)")
TRAFFIC_LINE = re.compile(r"per step and rank: ([0-9.]+) messages, ([0-9]+) bytes sent \(max ([0-9.]+), ([0-9]+)\); "
                          r"([0-9.]+) collective calls; halo copies at the end ([0-9]+) \(max ([0-9]+)\)")
PARTICLES_LINE = re.compile(r"nendo: \S+ \dD, (\d+) particles on (\d+) ranks")


def launch(args, ranks):
    if args.launcher == "srun":
        return ["srun", "-n", str(ranks)] + shlex.split(args.mpirun_args)
    return ["mpirun", "-np", str(ranks)] + shlex.split(args.mpirun_args)


NO_OUTPUT = ["--set", "output={every_steps: 1000000}"]  # timed runs write only their first state


def nendo_command(args, method, kind, ranks, steps, out, extra=(), launcher=None):
    scene, sets = METHODS[method][0](kind, ranks, args.scale)
    return ((launcher or launch(args, ranks)) + [args.nendo, "run", scene, "--steps", str(steps), "--output", out, "--overwrite"] +
            sets + list(extra))


def run_nendo(args, method, kind, ranks, steps, out, extra=()):
    cmd = nendo_command(args, method, kind, ranks, steps, out, extra)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-3000:]}")
    return cmd, proc.stdout


def timed_run(args, method, kind, ranks):
    out = os.path.join(args.out, f"{method}-{kind}-{ranks}")
    steps = args.steps or METHODS[method][1]
    cmd, text = run_nendo(args, method, kind, ranks, steps, out, NO_OUTPUT)
    s, m, p, t = STEPS_LINE.search(text), MPI_LINE.search(text), PARTICLES_LINE.search(text), TRAFFIC_LINE.search(text)
    if not (s and m and p and t):
        sys.exit(f"no timing lines in the output of {' '.join(cmd)}\n{text[-3000:]}")
    return {"method": method, "kind": kind, "ranks": ranks, "particles": int(p.group(1)), "steps": int(s.group(1)),
            "seconds": float(s.group(2)), "mpi_share": float(m.group(1)) / 100, "mpi_share_max": float(m.group(3)) / 100,
            "work_imbalance": float(m.group(4)), "particle_imbalance": float(s.group(4)),
            "messages_per_step": float(t.group(1)), "bytes_per_step": int(t.group(2)),
            "collectives_per_step": float(t.group(5)), "halo_copies": int(t.group(6))}


def pair_run(args, method):
    """Two 1-rank weak cases at once, on cores 0 and 1; the slower one's step time."""
    procs = []
    for core in (0, 1):
        pinned = ["taskset", "-c", str(core), "mpirun", "-np", "1", "--bind-to", "none"] + shlex.split(args.mpirun_args)
        cmd = nendo_command(args, method, "weak", 1, args.steps or METHODS[method][1],
                            os.path.join(args.out, f"{method}-pair-{core}"), NO_OUTPUT, launcher=pinned)
        procs.append((cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    seconds = []
    for cmd, proc in procs:
        text, _ = proc.communicate()
        s = STEPS_LINE.search(text)
        if proc.returncode != 0 or not s:
            sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{text[-3000:]}")
        seconds.append(float(s.group(2)))
    return {"method": method, "kind": "pair", "ranks": 2, "seconds": max(seconds),
            "seconds_pair": " ".join(f"{t:.3f}" for t in seconds)}


def last_diagnostics(out):
    with open(os.path.join(out, "diagnostics.csv")) as f:
        rows = [line for line in f.read().splitlines() if line and not line.startswith("#")]
    return rows[-1].split(",")[1:]  # without the wall-clock column, if any differs it is caught below


def check_ranks(args, method):
    """The last diagnostics row on each of --check-ranks equals the one-rank row (explicit: bitwise)."""
    steps = max(2, (args.steps or METHODS[method][1]) // 5)
    rows = {}
    for ranks in [1] + [r for r in args.check_ranks if r != 1]:
        out = os.path.join(args.out, f"{method}-check-{ranks}")
        run_nendo(args, method, "strong", ranks, steps, out, ["--set", f"output={{every_steps: {steps}}}"])
        rows[ranks] = last_diagnostics(out)
        same = rows[ranks] == rows[1]
        print(f"  check {method} on {ranks} ranks after {steps} steps: "
              f"{'same diagnostics as 1 rank' if same else 'DIFFERENT from 1 rank'}", flush=True)
        if not same:
            sys.exit(f"{method}: {ranks} ranks give {rows[ranks]}, 1 rank {rows[1]}")


def summarise(runs):
    """Median of the repeats per (method, kind, ranks) and the speed-up/efficiency against 1 rank."""
    cases, pairs = {}, {}
    for r in runs:
        if r["kind"] == "pair":
            pairs.setdefault(r["method"], []).append(r["seconds"])
        else:
            cases.setdefault((r["method"], r["kind"], r["ranks"]), []).append(r)
    rows = []
    for (method, kind, ranks), reps in sorted(cases.items()):
        median = sorted(reps, key=lambda r: r["seconds"])[len(reps) // 2]
        row = dict(median, reps=len(reps), seconds_all=" ".join(f"{r['seconds']:.3f}" for r in reps))
        row["particle_steps_per_s"] = row["particles"] * row["steps"] / row["seconds"]
        row["per_core"] = row["particle_steps_per_s"] / ranks
        rows.append(row)
    for row in rows:
        base = next((b for b in rows if (b["method"], b["kind"], b["ranks"]) == (row["method"], row["kind"], 1)), None)
        if base is None:
            row["speedup"] = row["efficiency"] = float("nan")
        elif row["kind"] == "strong":
            row["speedup"] = base["seconds"] / row["seconds"]
            row["efficiency"] = row["speedup"] / row["ranks"]
        else:  # weak: the same work per rank, so T(1)/T(p) is the efficiency
            row["efficiency"] = base["seconds"] / row["seconds"]
            row["speedup"] = row["efficiency"] * row["ranks"]
        alone = next((b for b in rows if (b["method"], b["kind"], b["ranks"]) == (row["method"], "weak", 1)), None)
        if row["ranks"] == 2 and alone and pairs.get(row["method"]):
            row["node_ceiling"] = alone["seconds"] / statistics.median(pairs[row["method"]])
            row["efficiency_vs_node"] = row["efficiency"] / row["node_ceiling"]
    return rows


COLUMNS = ["method", "kind", "ranks", "particles", "steps", "reps", "seconds", "seconds_all", "particle_steps_per_s",
           "per_core", "speedup", "efficiency", "node_ceiling", "efficiency_vs_node", "mpi_share", "mpi_share_max", "particle_imbalance", "work_imbalance",
           "messages_per_step", "bytes_per_step", "collectives_per_step", "halo_copies"]


def write_csv(path, rows, columns):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})


def plot(rows, path_pattern):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = [("speedup", "speed-up"), ("efficiency", "efficiency"), ("per_core", "particle-steps/s per core"),
              ("mpi_share", "share of step time in MPI"), ("particle_imbalance", "particles per rank max/mean")]
    for method in sorted({r["method"] for r in rows}):
        fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.4))
        for ax, (key, label) in zip(axes, panels):
            for kind, style in (("strong", "o-"), ("weak", "s--")):
                pts = sorted((r["ranks"], r[key]) for r in rows if r["method"] == method and r["kind"] == kind)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=kind)
            ranks = sorted({r["ranks"] for r in rows if r["method"] == method})
            if key == "speedup":
                ax.plot(ranks, ranks, ":", color="grey", label="ideal")
            if key == "efficiency":
                ax.axhline(0.95, ls=":", color="grey", label="95 %")
                ceiling = [r["node_ceiling"] for r in rows if r["method"] == method and "node_ceiling" in r][:1]
                if ceiling:
                    ax.plot([2], ceiling, "k_", ms=16, mew=2, label="node ceiling")
                ax.set_ylim(0, 1.1)
            ax.set_xscale("log", base=2)
            ax.set_xticks(ranks, [str(r) for r in ranks])
            ax.set_xlabel("ranks")
            ax.set_title(label, fontsize=10)
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize=8)
        fig.suptitle(f"{method}: strong and weak scaling (median of repeats)")
        fig.tight_layout()
        fig.savefig(path_pattern.format(method=method), dpi=110)
        plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--methods", default="mpm,pbd_powder")
    ap.add_argument("--kinds", default="strong,weak")
    ap.add_argument("--ranks", default="1,2", help="rank counts to time")
    ap.add_argument("--check-ranks", default="2,3,4", help="rank counts to check against 1 rank ('' for none)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--steps", type=int, default=0, help="timed steps (default: 50 MPM, 3 PBD frames)")
    ap.add_argument("--scale", type=float, default=1.0, help="particles per case times this (tests: 1/16)")
    ap.add_argument("--no-pair", action="store_true", help="skip the node ceiling (two 1-rank runs side by side)")
    ap.add_argument("--launcher", choices=["mpirun", "srun"], default="mpirun")
    ap.add_argument("--mpirun-args", default="", help="extra launcher arguments, e.g. '--mca btl tcp,self'")
    ap.add_argument("--nendo", default=os.path.join(ROOT, "build", "src", "app", "nendo"))
    ap.add_argument("--out", default="/tmp/nendo-scaling")
    args = ap.parse_args()
    args.check_ranks = [int(r) for r in args.check_ranks.split(",") if r]
    os.makedirs(args.out, exist_ok=True)
    methods, kinds = args.methods.split(","), args.kinds.split(",")
    ranks = [int(r) for r in args.ranks.split(",")]
    if 1 not in ranks:
        ranks = [1] + ranks  # speed-up and efficiency are against one rank
    pair = 2 in ranks and args.launcher == "mpirun" and not args.no_pair  # on one node only

    for method in methods:
        if args.check_ranks:
            check_ranks(args, method)
    runs = []
    for rep in range(args.reps):  # repeats interleaved, so slow drift of the machine hits every case alike
        for method in methods:
            for kind in kinds:
                for p in ranks:
                    r = timed_run(args, method, kind, p)
                    runs.append(r)
                    print(f"  {method} {kind} {p} ranks rep {rep + 1}: {r['particles']} particles, {r['seconds']:.3f} s, "
                          f"MPI {100 * r['mpi_share']:.1f} %, imbalance {r['particle_imbalance']:.3f}", flush=True)
            if pair and "weak" in kinds:
                r = pair_run(args, method)
                runs.append(r)
                print(f"  {method} two 1-rank runs side by side rep {rep + 1}: {r['seconds_pair']} s", flush=True)
    rows = summarise(runs)
    write_csv(os.path.join(args.out, "runs.csv"), runs, list(dict.fromkeys(k for r in runs for k in r)))
    write_csv(os.path.join(args.out, "scaling.csv"), rows, COLUMNS)
    plot(rows, os.path.join(args.out, "scaling-{method}.png"))
    print(f"{'method':<11} {'kind':<6} {'ranks':>5} {'particles':>10} {'s':>8} {'p-steps/s/core':>14} {'eff':>6} "
          f"{'node':>6} {'eff/node':>8} {'MPI':>6} {'imbal':>6}")
    for r in rows:
        node, vs = r.get("node_ceiling", float("nan")), r.get("efficiency_vs_node", float("nan"))
        print(f"{r['method']:<11} {r['kind']:<6} {r['ranks']:>5} {r['particles']:>10} {r['seconds']:>8.3f} "
              f"{r['per_core']:>14.3e} {r['efficiency']:>6.3f} {node:>6.3f} {vs:>8.3f} {100 * r['mpi_share']:>5.1f}% "
              f"{r['particle_imbalance']:>6.3f}")
    print(f"written: {args.out}/scaling.csv, runs.csv, scaling-*.png")


if __name__ == "__main__":
    main()
