#!/usr/bin/python3
"""Issue 34: GAMG's Galerkin products on more than one rank use PETSc's all-at-once algorithm
(solvers/NewtonSolver.cpp, GalerkinProductAlgorithm), whose busiest rank holds less than with
PETSc's default, and the Newton and Krylov iterations are the same.

One implicit step of jobs/scenes/fem/slab-1m-implicit.yaml at fem.spacing 0.05 (148 k tets; with
grid.dx 0.22 one block holds the slab, so every rank but one owns nothing), assembled operator:
- on 2-4 ranks the busiest rank's peak resident set is at least 16 MiB below the same run with
  -matptap_via scalable (PETSc's default: 36 MiB above on 2 ranks), with the same solver.csv
  iteration counts and a relative residual within 1 %;
- on every rank count the run succeeds (a sequential matrix knows no all-at-once product) and no
  PETSc option is reported unused (the option is taken out after each set-up).

Usage: gamg_memory_test.py NENDO_BINARY WORK_DIR RANKS
"""
import csv
import os
import re
import shutil
import subprocess
import sys

NENDO, WORK, RANKS = sys.argv[1], os.path.abspath(sys.argv[2]), int(sys.argv[3])
SCENE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "jobs", "scenes", "fem",
                     "slab-1m-implicit.yaml")
PEAK_RSS = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]); "
            "print('peak_rss_kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, flush=True); "
            "sys.exit(code)")


def run(name, *options):
    """The busiest rank's peak (KiB) and the step's solver.csv row."""
    out = os.path.join(WORK, name)
    shutil.rmtree(out, ignore_errors=True)
    command = ["mpirun", "-np", str(RANKS), sys.executable, "-c", PEAK_RSS, NENDO, "run", SCENE, "--steps", "1",
               "--output", out, "--set", "fem.spacing=0.05", "--set", "grid.dx=0.22", *options]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise AssertionError("%s\nexit %d\n%s\n%s" % (" ".join(command), done.returncode, done.stdout, done.stderr))
    if "PETSc option" in done.stderr:
        raise AssertionError("an option was reported:\n" + done.stderr)
    with open(os.path.join(out, "solver.csv")) as f:
        row = list(csv.DictReader(f))[-1]
    return max(int(k) for k in re.findall(r"peak_rss_kib (\d+)", done.stdout)), row


def main():
    peak, row = run("default")
    print("%d ranks, default: busiest rank %.0f MiB, newton %s, ksp %s" %
          (RANKS, peak / 1024, row["newton_iterations"], row["ksp_iterations"]))
    if RANKS == 1:
        return
    scalable_peak, scalable_row = run("scalable", "--set", "implicit.petsc_options=-matptap_via scalable")
    print("%d ranks, -matptap_via scalable: busiest rank %.0f MiB, newton %s, ksp %s" %
          (RANKS, scalable_peak / 1024, scalable_row["newton_iterations"], scalable_row["ksp_iterations"]))
    assert peak < scalable_peak - 16 * 1024, (peak, scalable_peak)
    for key in ("newton_iterations", "ksp_iterations"):
        assert row[key] == scalable_row[key], (key, row[key], scalable_row[key])
    a, b = float(row["relative_residual"]), float(scalable_row["relative_residual"])
    assert abs(a - b) <= 0.01 * b, (a, b)


if __name__ == "__main__":
    os.makedirs(WORK, exist_ok=True)
    main()
    print("passed")
