#!/usr/bin/python3
"""`nendo plan` against the measured peak resident set, one scene of each method (issue 34).

For each case: the plan's bytes per rank (`nendo plan --ranks N`), then the run's peak resident
set (VmHWM of each rank, read by a wrapper around each nendo process), the largest over the
ranks, median of 3 runs, each under flock /tmp/nendo-bench.lock. Prints predicted, measured and
their ratio. docs/performance.md "Sizing a job" has the results.

Usage: jobs/bench/plan/run.py BUILD_DIR WORK_DIR [--repeat 3] [--only NAME] [--ranks 1 2]
(shape_matching_file first writes its 57 MB mesh file into WORK_DIR.)
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
S = lambda *p: os.path.join(ROOT, "jobs", "scenes", *p)
# name: scene, overrides (a size where the problem, not the libraries, holds most of the memory)
CASES = {
    "mpm": (S("mpm", "jelly-drop.yaml"), ["grid.dx=0.004", "time.dt=2e-5"]),
    "slave_sph": (S("slave_sph", "cube-soft.yaml"), ["bodies.0.max=[0.48, 0.58, 0.48]"]),
    "shape_matching": (S("shape_matching", "bar-twist.yaml"), ["bodies.0.max=[4.0, 2.6, 2.0]"]),
    # the same body as an MSH file, written into WORK_DIR by box_msh.py (main sets the body)
    "shape_matching_file": (S("shape_matching", "bar-twist.yaml"), []),
    "pbd_powder": (os.path.join(os.path.dirname(__file__), "pbd-block.yaml"), []),
    "fem": (S("fem", "slab-1m-implicit.yaml"), []),
    "ballistic": (S("mpm", "jelly-drop.yaml"), ["method=ballistic", "grid.dx=0.004", "output.fields=[velocity]"]),
}
STEPS = {"mpm": 3, "slave_sph": 2, "shape_matching": 2, "shape_matching_file": 2, "pbd_powder": 1, "fem": 1, "ballistic": 3}
PEAK_RSS = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]); "
            "print('peak_rss_kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, flush=True); "
            "sys.exit(code)")
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
           "OMPI_MCA_pml": "ob1"}


def sets(overrides):
    return [a for o in overrides for a in ("--set", o)]


def planned(nendo, scene, overrides, ranks):
    done = subprocess.run([nendo, "plan", scene, "--ranks", str(ranks), *sets(overrides)],
                          capture_output=True, text=True, env=dict(os.environ, **MPI_ENV))
    if done.returncode not in (0, 1):
        raise SystemExit(done.stdout + done.stderr)
    count = re.search(r"^  (?:particles|vertices|nodes|masters \+ slaves) +(\d+)", done.stdout, re.M).group(1)
    size = re.search(r"memory per rank +([\d.]+) (\w+)", done.stdout)
    unit = {"MiB": 2**20, "GiB": 2**30, "KiB": 2**10, "B": 1}[size.group(2)]
    return int(count), float(size.group(1)) * unit


def measured(nendo, scene, overrides, ranks, steps, work):
    cmd = ["flock", "/tmp/nendo-bench.lock", "mpirun", "-np", str(ranks), "--bind-to", "none", sys.executable,
           "-c", PEAK_RSS, nendo, "run", scene, "--overwrite", "--output", work, "--steps", str(steps),
           "--quiet", *sets(overrides)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **MPI_ENV))
    if done.returncode != 0:
        raise SystemExit("%s\n%s\n%s" % (" ".join(cmd), done.stdout, done.stderr))
    return max(int(k) for k in re.findall(r"peak_rss_kib (\d+)", done.stdout)) * 1024


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build")
    p.add_argument("work")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--only", nargs="*", default=list(CASES))
    p.add_argument("--ranks", nargs="*", type=int, default=[1, 2])
    p.add_argument("--set", nargs="*", default=[], help="more overrides (all cases)")
    args = p.parse_args()
    nendo = os.path.join(args.build, "src", "app", "nendo")
    print("| method | ranks | particles | planned MiB/rank | measured MiB/rank (median) | planned/measured |")
    print("|---|---|---|---|---|---|")
    for name in args.only:
        scene, overrides = CASES[name]
        overrides = overrides + args.set
        if name == "shape_matching_file":
            mesh = os.path.join(args.work, "bar-262701.msh")
            if not os.path.exists(mesh):
                os.makedirs(args.work, exist_ok=True)
                subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "box_msh.py"),
                                "0", "0.6", "0", "4.0", "2.6", "2.0", "0.04", mesh], check=True)
            overrides = overrides + ["bodies.0={shape: file, path: %s, particles_per_cell: 3, material: rubber, "
                                     "examples: [{type: twist, angle: 90}]}" % mesh]
        for ranks in args.ranks:
            count, plan = planned(nendo, scene, overrides, ranks)
            peaks = [measured(nendo, scene, overrides, ranks, STEPS[name], os.path.join(args.work, name))
                     for _ in range(args.repeat)]
            peak = statistics.median(peaks)
            print("| %s | %d | %d | %.0f | %.0f (%s) | %.2f |" % (
                name, ranks, count, plan / 2**20, peak / 2**20, ", ".join("%.0f" % (x / 2**20) for x in peaks),
                plan / peak), flush=True)


if __name__ == "__main__":
    main()
