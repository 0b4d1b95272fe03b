#!/usr/bin/env python3
"""The slave-SPH benchmark of issue 7 (docs/performance.md, "Slave-particle SPH").

Cubes of masters on the d = 1 cm lattice (jobs/bench/slave_sph/cube.yaml), 2 cm above the floor
(the 64^3 one on it), at dt = 1 ms (the paper's step for its cubes): the paper's 16^3 cube (4,096 masters, 6,647
slaves) with the moderately plastic material of its Fig. 10 (E = 1.4e5) and the stiff elastic one
of Fig. 9 (E = 6.9e7), and a 64^3 cube (262,144 masters, 299,975 slaves) with the plastic material.
Each case runs under `mpirun -np R build/src/app/nendo run` on 1 and 2 ranks; the figures are
taken from nendo's own report (steps, wall time of the time loop, time per stage) and the CG
iterations from its solver.csv. Bytes per particle: the peak resident sets of all ranks
(libraries, MPI and PETSc included) over the particle count (masters + slaves).

    python3 jobs/bench/slave_sph/run.py [--out /tmp/nendo-sph-bench] [--only SUBSTRING] [--build build]

Prints a Markdown table (steps/s, particle-steps/s, CG iterations per step, bytes per particle)
and writes results.csv in --out.
"""
import argparse
import csv
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCENE = os.path.join(ROOT, "jobs", "bench", "slave_sph", "cube.yaml")
PLASTIC = ["--set", "bodies.0.material=plastic"]
STIFF = ["--set", "bodies.0.material=stiff"]
# name, edge (masters per axis), material, steps
# The 64^3 cube starts on the floor (its lowest masters 5 mm above it), so that all its steps solve.
ON_FLOOR = ["--set", "bodies.0.min=[0, 0, 0]"]
CASES = [("16^3 plastic (Fig. 10 left)", 16, PLASTIC, 300, 0.02),
         ("16^3 stiff elastic (Fig. 9 top)", 16, STIFF, 60, 0.02),
         ("64^3 plastic, on the floor", 64, PLASTIC + ON_FLOOR, 30, 0.0)]
PEAK_RSS = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]); "
            "print('peak_rss_kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, flush=True); "
            "sys.exit(code)")


def run(args, name, edge, material, steps, lift, ranks):
    out = os.path.join(args.out, re.sub(r"[^a-z0-9]+", "-", name.lower()) + "-np%d" % ranks)
    side = edge * 0.01
    cmd = ["mpirun", "-np", str(ranks), "--bind-to", "none", sys.executable, "-c", PEAK_RSS,
           os.path.join(args.build, "src", "app", "nendo"), "run", SCENE, "--output", out, "--overwrite", "--steps", str(steps),
           "--set", "bodies.0.max=[%g, %g, %g]" % (side, lift + side, side), *material]
    done = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1"))
    if done.returncode != 0:
        raise SystemExit("%s\n%s\n%s" % (" ".join(cmd), done.stdout, done.stderr))
    first = re.search(r"slave_sph 3D, (\d+) particles", done.stdout)
    last = re.search(r"(\d+) steps to t = \S+ in (\S+) s", done.stdout)
    particles, wall = int(first.group(1)), float(last.group(2))
    # Each rank prints its own line; mpirun may join two of them, so match the pattern, not lines.
    rss = sum(int(kib) for kib in re.findall(r"peak_rss_kib (\d+)", done.stdout))
    with open(os.path.join(out, "solver.csv")) as f:
        ksp = [int(row["ksp_iterations"]) for row in csv.DictReader(f)]
    stages = re.search(r"time per stage \(max over ranks\): (.*)", done.stdout).group(1)
    return {"case": name, "ranks": ranks, "particles": particles, "steps": steps,
            "steps_per_s": steps / wall, "particle_steps_per_s": particles * steps / wall,
            "cg_per_step": sum(ksp) / max(len(ksp), 1), "bytes_per_particle": rss * 1024 // particles,
            "stages": stages}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="/tmp/nendo-sph-bench")
    parser.add_argument("--only", default="")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for name, edge, material, steps, lift in CASES:
        if args.only not in name:
            continue
        for ranks in (1, 2):
            rows.append(run(args, name, edge, material, steps, lift, ranks))
            print("%s, %d rank(s): %.1f steps/s" % (name, ranks, rows[-1]["steps_per_s"]), flush=True)
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print("\n| case | ranks | particles | steps/s | particle-steps/s | CG its/step | bytes/particle |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %d | %d | %.1f | %.3g | %.1f | %d |" % (r["case"], r["ranks"], r["particles"], r["steps_per_s"],
                                                           r["particle_steps_per_s"], r["cg_per_step"],
                                                           r["bytes_per_particle"]))
    for r in rows:
        print("%s np%d: %s" % (r["case"], r["ranks"], r["stages"]))


if __name__ == "__main__":
    main()
