#!/usr/bin/env python3
"""The hierarchical-FEM benchmark of spec 004 (section 7 Fig. 2, section 8 tests 5 and 6).

The Fig. 2 cantilever (jobs/scenes/fem/cantilever-small.yaml, E = 1e7 Pa, 0.5 s = 16 667 steps;
cantilever-large.yaml, E = 3e5 Pa, 2 s = 10 000 steps), each run twice: hierarchical (the scene as
written: levels 0..3 chosen per step) and on the uniform finest mesh (--set fem.min_level=3, the
paper's reference). Per step: the wall time of the step's stages (view + select + forces +
integrate + migrate, the `time per stage (max over ranks)` line of nendo, so output is excluded;
20 small outputs per run, of the node status only, give the largest number of active nodes), the
median of --reps repetitions (all of them are in the CSV and the table); also nendo's
particle-steps per second (particles = active nodes, so fewer for the hierarchical run) and the
whole wall time per step. Memory: the peak resident sets (VmHWM, read by a wrapper around each
rank's nendo process, so mpirun itself is not counted) of all ranks, libraries, MPI and PETSc
included, and that over the 2 673 nodes of the hierarchy (B/node): both runs build and keep the
whole hierarchy (all 12 288 tets and their homogenised constants), so bytes per *active* particle
would only say how few the hierarchical run uses (20 in the small case); most of the resident set
is the libraries.

Ranks: the Fig. 2 scenes have grid.dx = 0.45 m (at least 2.5 level-0 edges, the fem method's halo
rule) and the beam is 0.4 m long, so the whole beam is in one block and one rank owns every node;
2 ranks measure the overhead of the second rank, not a parallel speed-up. With 2 ranks the stage
times (each the max over ranks) can add up to more than the wall time.

    python3 jobs/bench/fem/run.py [--out /tmp/nendo-fem-bench] [--ranks 1 2] [--reps 3] [--quick]
        [--cases small large] [--integrator explicit|implicit] [--build build] [--set KEY=VALUE ...]

--quick: 0.1 s of the small case and 0.4 s of the large one (the large case refines from about
0.1 s on), 1 repetition unless --reps is given.

--integrator implicit: the same cases with backward Euler (time.integrator: implicit, the scenes'
implicit defaults: matrix-free Newton-CG with Jacobi) at time.dt multiplied by
--implicit-dt-multiple (default 10).

The stage times are printed with 10 ms resolution: for short runs (--quick, the small hierarchical
case) the whole wall time per step (also in the table) is the more precise figure.
"""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCENES = {"small": os.path.join(ROOT, "jobs", "scenes", "fem", "cantilever-small.yaml"),
          "large": os.path.join(ROOT, "jobs", "scenes", "fem", "cantilever-large.yaml")}
END = {"small": 0.5, "large": 2.0}
QUICK_END = {"small": 0.1, "large": 0.4}
HIERARCHY_NODES = 2673  # nodes of levels 0..3, all held (with all 12 288 tets) by either run
MESHES = {"hier": [], "fine": ["--set", "fem.min_level=3"]}
# Each rank runs nendo under this, which prints the child's peak resident set (VmHWM) in KiB.
PEAK_RSS = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]); "
            "print('peak_rss_kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, flush=True); "
            "sys.exit(code)")
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


def nendo(args, ranks, scene, extra):
    cmd = ["mpirun", "-np", str(ranks), "--bind-to", "none", sys.executable, "-c", PEAK_RSS,
           os.path.join(args.build, "src", "app", "nendo"), "run", scene, "--overwrite", *extra]
    done = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **MPI_ENV))
    if done.returncode != 0:
        raise SystemExit("%s\n%s\n%s" % (" ".join(cmd), done.stdout, done.stderr))
    return done.stdout


def max_particles(out):
    with open(os.path.join(out, "diagnostics.csv"), newline="") as f:
        return max(int(r["particles"]) for r in csv.DictReader(f))


def measure(stdout, out):
    line = re.search(r"time per stage \(max over ranks\): (.*)", stdout).group(1)
    stages = {name: float(sec) for name, sec in re.findall(r"(\w+) (\S+) s \(", line)}
    done = re.search(r"(\d+) steps to t = \S+ in (\S+) s \((\S+) particle-steps/s\)", stdout)
    steps, wall, rate = int(done.group(1)), float(done.group(2)), float(done.group(3))
    rss = sum(int(k) for k in re.findall(r"peak_rss_kib (\d+)", stdout))
    particles = max_particles(out)
    return {"steps": steps, "ms_per_step": 1e3 * sum(stages.values()) / steps,
            "wall_ms_per_step": 1e3 * wall / steps, "particle_steps_per_s": rate,
            "max_particles": particles, "peak_rss_mib": rss / 1024.0,
            "bytes_per_node": rss * 1024 // HIERARCHY_NODES,
            "select_ms_per_step": 1e3 * stages.get("select", 0.0) / steps,
            "forces_ms_per_step": 1e3 * stages.get("forces", 0.0) / steps}


def run_case(args, case, mesh, ranks):
    end = QUICK_END[case] if args.quick else END[case]
    extra = ["--set", "time.end=%g" % end, "--set", "output.every=%g" % (end / 20), "--set", "output.fields=[status]",
             *MESHES[mesh]]
    if args.integrator == "implicit":
        dt = {"small": 3.0e-5, "large": 2.0e-4}[case] * args.implicit_dt_multiple
        extra += ["--set", "time.dt=%g" % dt, "--set", "time.integrator=implicit"]
    for setting in args.set:
        extra += ["--set", setting]
    reps = []
    for rep in range(args.reps):
        out = os.path.join(args.out, "%s-%s-%s-np%d-rep%d" % (args.integrator, case, mesh, ranks, rep))
        reps.append(measure(nendo(args, ranks, SCENES[case], ["--output", out, *extra]), out))
    median = statistics.median(r["ms_per_step"] for r in reps)
    row = next(r for r in reps if r["ms_per_step"] == median)  # odd --reps: the median run itself
    row = dict(row, ms_per_step=median, wall_ms_per_step=statistics.median(r["wall_ms_per_step"] for r in reps),
               particle_steps_per_s=statistics.median(r["particle_steps_per_s"] for r in reps),
               reps_ms_per_step=" ".join("%.4f" % r["ms_per_step"] for r in reps))
    return dict({"integrator": args.integrator, "case": case, "mesh": mesh, "ranks": ranks, "end": end}, **row)


def print_table(rows):
    print("\nintegrator | case | mesh | ranks | steps | ms/step (stages, median) | wall ms/step | "
          "particle-steps/s | max particles | peak RSS MiB (all ranks) | B/node | t_fine/t_hier (stages) | (wall) | "
          "ms/step of each repetition")
    print("|".join(["---"] * 14))
    fine = {(r["integrator"], r["case"], r["ranks"]): r for r in rows if r["mesh"] == "fine"}
    for r in rows:
        ref = fine.get((r["integrator"], r["case"], r["ranks"]))
        ratio = wall_ratio = ""
        if ref and r["mesh"] == "hier" and r["ms_per_step"] > 0:
            ratio = "%.2f" % (ref["ms_per_step"] / r["ms_per_step"])
            wall_ratio = "%.2f" % (ref["wall_ms_per_step"] / r["wall_ms_per_step"])
        print("%s | %s (%gs) | %s | %d | %d | %.4f | %.4f | %.3g | %d | %.0f | %d | %s | %s | %s" % (
            r["integrator"], r["case"], r["end"], r["mesh"], r["ranks"], r["steps"], r["ms_per_step"],
            r["wall_ms_per_step"], r["particle_steps_per_s"], r["max_particles"], r["peak_rss_mib"],
            r["bytes_per_node"], ratio, wall_ratio, r["reps_ms_per_step"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="/tmp/nendo-fem-bench")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--reps", type=int, default=None, help="repetitions per case (default 3, --quick 1)")
    parser.add_argument("--quick", action="store_true", help="short end times (0.1 s small, 0.4 s large)")
    parser.add_argument("--cases", nargs="+", choices=sorted(SCENES), default=["small", "large"])
    parser.add_argument("--integrator", choices=["explicit", "implicit"], default="explicit",
                        help="implicit: backward Euler at --implicit-dt-multiple times the explicit step")
    parser.add_argument("--implicit-dt-multiple", type=float, default=10.0,
                        help="implicit only: time.dt = this x the scene's explicit step")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a scene override for every run, e.g. implicit.preconditioner=multigrid")
    args = parser.parse_args()
    if args.reps is None:
        args.reps = 1 if args.quick else 3
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for case in args.cases:
        for ranks in args.ranks:
            for mesh in ("hier", "fine"):
                row = run_case(args, case, mesh, ranks)
                rows.append(row)
                print(row, flush=True)
    with open(os.path.join(args.out, "results-%s.csv" % args.integrator), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        writer.writeheader()
        writer.writerows(rows)
    print_table(rows)


if __name__ == "__main__":
    main()
