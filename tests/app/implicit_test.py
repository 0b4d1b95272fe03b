#!/usr/bin/python3
"""End-to-end tests of the implicit integrator through the `nendo` command under mpirun: restart,
PETSc options, failure handling, bad input and the solver report, on the scene
tests/app/implicit/drop-2d.yaml (a rubber block dropped on a separate ground, Newton iterating
from the first contact on).

- Restart: the run stopped at step 20 with a checkpoint and resumed with --restart latest ends
  bitwise identical to the uninterrupted one on the same rank count (every output file's particle
  fields, the final checkpoint, diagnostics.csv and solver.csv, whose rows after the checkpoint, as
  a crash would leave them, are dropped).
- PETSc options reach KSP from the scene (implicit.petsc_options), a .petscrc in the working
  directory and the command line, each over the one before; -ksp_monitor prints every KSP iteration;
  the assembled operator runs with GAMG, hypre BoomerAMG and block Jacobi + ICC, all ending within
  2 kappa newton_tol max|v| of the matrix-free Jacobi run, kappa = (c dt / dx)^2 (see there).
- Failure: Newton held to too few iterations retries with half steps (rank 0 says so on stderr,
  one line per failed solve) and recovers, or after implicit.max_halvings halvings stops with exit
  code 3, a message naming the step and a checkpoint of the last good state, which restarts: with
  the same settings it fails again at the same step, with others it goes on as the uninterrupted run.
- Bad implicit keys are refused with exit code 2 and FILE:LINE: key.
- OUT/solver.csv has the header of src/app/SolverLog.hpp and a row per step; the progress line
  shows Newton and KSP iterations.

Usage: implicit_test.py NENDO_BINARY WORK_DIR RANKS
"""
import csv
import os
import re
import shutil
import subprocess
import sys
import unittest

import h5py
import numpy as np

NENDO, WORK, RANKS = sys.argv[1], os.path.abspath(sys.argv[2]), int(sys.argv[3])
SCENE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "implicit", "drop-2d.yaml")
STEPS = 40  # time.end / time.dt
NEWTON_TOL = 1.0e-6  # implicit.newton_tol of the scene
SOLVER_HEADER = ("step,time,dt,substeps,newton_iterations,ksp_iterations,line_search_halvings,gradient_steps,"
                 "relative_residual,residual_cells")


def run(name, *args, expect=0, cwd=None, scene=SCENE, ranks=RANKS):
    """nendo run on `ranks` ranks with output and checkpoints under WORK/name."""
    directory = os.path.join(WORK, name)
    command = ["mpirun", "-np", str(ranks), NENDO, "run", scene, "--output", os.path.join(directory, "out"),
               "--set", "checkpoint.dir=" + os.path.join(directory, "checkpoints"), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=cwd)
    if expect is not None and done.returncode != expect:
        raise AssertionError("%s\nexit %d (expected %d)\n%s\n%s" %
                             (" ".join(command), done.returncode, expect, done.stdout, done.stderr))
    return done


def fresh(name):
    shutil.rmtree(os.path.join(WORK, name), ignore_errors=True)
    return name


def out(name, *path):
    return os.path.join(WORK, name, "out", *path)


def checkpoints(name):
    folder = os.path.join(WORK, name, "checkpoints")
    return sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".h5"))


def outputs(name):
    return sorted(n for n in os.listdir(out(name)) if n.startswith("particles_") and n.endswith(".h5"))


def particles(path):
    """Every /particles dataset of a file, rows sorted by id."""
    with h5py.File(path, "r") as f:
        group = f["particles"]
        order = np.argsort(group["id"][:], kind="stable")
        return {key: group[key][:][order] for key in group}


def solver_rows(name):
    with open(out(name, "solver.csv")) as f:
        return list(csv.DictReader(f))


def lines(path):
    with open(path) as f:
        return f.read().splitlines()


def reference():
    """The uninterrupted run of the scene (once per test program)."""
    if not hasattr(reference, "done"):
        reference.done = run(fresh("reference"))
    return "reference"


def assert_identical(test, a_path, b_path, what):
    a, b = particles(a_path), particles(b_path)
    test.assertEqual(sorted(a), sorted(b), what + ": different fields")
    for key in a:
        test.assertEqual(a[key].dtype, b[key].dtype, "%s: %s" % (what, key))
        test.assertTrue(a[key].tobytes() == b[key].tobytes(), "%s: /particles/%s differs" % (what, key))


class Restart(unittest.TestCase):
    def assert_same_as_reference(self, name):
        ref = reference()
        self.assertEqual(outputs(ref), outputs(name))
        self.assertEqual(len(outputs(ref)), STEPS // 10 + 1)
        for file in outputs(ref):
            assert_identical(self, out(ref, file), out(name, file), file)
        final = checkpoints(name)[-1]
        self.assertEqual(os.path.basename(final), "checkpoint_%09d.h5" % STEPS)
        assert_identical(self, checkpoints(ref)[-1], final, "final checkpoint")  # F, B, volume too
        self.assertEqual(lines(out(ref, "diagnostics.csv")), lines(out(name, "diagnostics.csv")))
        self.assertEqual(lines(out(ref, "solver.csv")), lines(out(name, "solver.csv")), "solver.csv")

    def test_stopped_half_way_and_resumed_from_the_latest_checkpoint(self):
        name = fresh("restart")
        run(name, "--steps", str(STEPS // 2))
        self.assertEqual([int(r["step"]) for r in solver_rows(name)], list(range(1, STEPS // 2 + 1)))
        # the restart happens during the contact, with Newton iterating
        self.assertGreater(int(solver_rows(name)[-1]["newton_iterations"]), 0)
        latest = checkpoints(name)[-1]
        self.assertTrue(latest.endswith("checkpoint_%09d.h5" % (STEPS // 2)), latest)
        # as if the run had gone on after the checkpoint and crashed: the later rows must go
        with open(out(name, "solver.csv"), "a") as f:
            f.write("21,0.042000000000000023,0.002,1,99,999,0,0,0,0\n22,0.044,0.002,1,98,998,0,0,0,0\n")
        done = run(name, "--restart", "latest")
        self.assertIn("restarting from %s (step %d," % (latest, STEPS // 2), done.stdout)
        self.assert_same_as_reference(name)


def startup_line(stdout):
    found = [l for l in stdout.splitlines() if l.startswith("nendo: implicit ")]
    assert len(found) == 1, stdout
    return found[0]


class PetscOptions(unittest.TestCase):
    def scene_with(self, name, options):
        with open(SCENE) as f:
            text = f.read()
        text = text.replace("max_newton: 20}", 'max_newton: 20, petsc_options: "%s"}' % options)
        self.assertIn(options, text)
        path = os.path.join(WORK, name, "scene.yaml")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_scene_options_reach_ksp(self):
        name = fresh("scene_minres")
        done = run(name, "--steps", "6", scene=self.scene_with(name, "-ksp_type minres"))
        self.assertEqual(startup_line(done.stdout),
                         "nendo: implicit backward_euler, matrix_free operator, KSP minres + jacobi")
        self.assertGreater(sum(int(r["ksp_iterations"]) for r in solver_rows(name)), 0)

    def test_a_petsc_option_no_solver_read_is_named_at_the_end(self):
        # The solvers are made during the steps, so the check comes at the end, as -options_left's.
        done = run(fresh("options_left"), "--steps", "2", "-ksp_type", "gmres", "-ksp_typo", "3")
        warnings = [l for l in done.stderr.splitlines() if l.startswith("nendo: warning")]
        self.assertEqual(warnings, ["nendo: warning: the PETSc option -ksp_typo was given but no PETSc object used "
                                    "it (a typo?)"], done.stderr)

    def test_the_command_line_overrides_the_scene_and_ksp_monitor_prints_every_iteration(self):
        name = fresh("command_line_gmres")
        done = run(name, "--steps", "6", "-ksp_type", "gmres", "-ksp_monitor",
                   scene=self.scene_with(name, "-ksp_type minres"))
        self.assertEqual(startup_line(done.stdout),
                         "nendo: implicit backward_euler, matrix_free operator, KSP gmres + jacobi")
        monitor = [l for l in done.stdout.splitlines() if re.match(r"^\s*\d+ KSP Residual norm \S+\s*$", l)]
        rows = solver_rows(name)
        solves = sum(int(r["newton_iterations"]) for r in rows)
        self.assertGreater(solves, 0)
        # each solve prints its iterations 0, 1, ..., n (rank 0 only)
        self.assertEqual(len(monitor), solves + sum(int(r["ksp_iterations"]) for r in rows))
        self.assertEqual(sum(1 for l in monitor if re.match(r"^\s*0 KSP", l)), solves)

    def test_petscrc_in_the_working_directory_is_read(self):
        name = fresh("petscrc")
        scene = self.scene_with(name, "-ksp_type minres")
        cwd = os.path.join(WORK, name, "cwd")
        os.makedirs(cwd)
        with open(os.path.join(cwd, ".petscrc"), "w") as f:
            f.write("-ksp_type bcgs\n-pc_type none\n")
        done = run(name, "--steps", "1", scene=scene, cwd=cwd)  # .petscrc over the scene
        self.assertEqual(startup_line(done.stdout),
                         "nendo: implicit backward_euler, matrix_free operator, KSP bcgs + none")
        done = run(name, "--steps", "1", "-pc_type", "sor", "--overwrite", scene=scene, cwd=cwd)  # the command line over it
        self.assertEqual(startup_line(done.stdout),
                         "nendo: implicit backward_euler, matrix_free operator, KSP bcgs + sor")

    def test_assembled_operator_with_three_preconditioners(self):
        steps = 10  # 7 of them with contact; the reference writes an output at step 10
        expected = reference()
        final = "particles_%06d.h5" % (steps // 10)
        ref = particles(out(expected, final))
        # Newton stops at |P grad E| <= newton_tol |P grad E(v0)|: the velocity is then within about
        # kappa x newton_tol x |v| of the exact solve, kappa = (c dt / dx)^2 the condition number of
        # M + dt^2 K with c the P-wave speed (measured against a 1e-9 solve: 1.4e-4 m/s at 1e-6, 6.6e-4 at
        # 1e-5, 6.7e-3 at 1e-4). Two runs: twice that. (The preconditioners agree to 2e-7 m/s: they take
        # the same Newton path.)
        E, nu, rho, dt, dx = 1.0e7, 0.3, 1000.0, 2.0e-3, 0.02
        c = np.sqrt(E * (1 - nu) / ((1 + nu) * (1 - 2 * nu)) / rho)
        kappa = (c * dt / dx) ** 2  # 135
        velocity_tol = 2 * kappa * NEWTON_TOL * np.abs(ref["velocity"]).max()  # 2.7e-4 m/s
        position_tol = velocity_tol * steps * dt  # 5.3e-6 m
        for pc, options in (("gamg", []), ("hypre", ["-pc_type", "hypre"]),
                            ("bjacobi", ["-pc_type", "bjacobi", "-sub_pc_type", "icc"])):
            with self.subTest(pc=pc):
                name = fresh("assembled_" + pc)
                done = run(name, "--steps", str(steps), "--set", "implicit.operator=assembled", *options)
                self.assertEqual(startup_line(done.stdout),
                                 "nendo: implicit backward_euler, assembled operator, KSP cg + " + pc)
                self.assertNotIn("retrying", done.stderr)
                got = particles(out(name, final))
                np.testing.assert_array_equal(got["id"], ref["id"])
                np.testing.assert_allclose(got["velocity"], ref["velocity"], rtol=0, atol=velocity_tol)
                np.testing.assert_allclose(got["position"], ref["position"], rtol=0, atol=position_tol)
                newton = [int(r["newton_iterations"]) for r in solver_rows(name)]
                self.assertEqual(newton[:2], [0, 0])  # free flight
                self.assertGreater(min(newton[4:]), 0)

    def test_multigrid_ends_where_jacobi_ends_with_fewer_krylov_iterations(self):
        """implicit.preconditioner: multigrid (PCMG on the block grid coarsened by 2, GAMG on the
        coarse level) against the reference's Jacobi: the same states within the tolerance above,
        and at most half the CG iterations per Newton iteration (measured: 17.6 against 57)."""
        steps = 10
        expected = reference()
        final = "particles_%06d.h5" % (steps // 10)
        ref = particles(out(expected, final))
        E, nu, rho, dt, dx = 1.0e7, 0.3, 1000.0, 2.0e-3, 0.02
        c = np.sqrt(E * (1 - nu) / ((1 + nu) * (1 - 2 * nu)) / rho)
        velocity_tol = 2 * (c * dt / dx) ** 2 * NEWTON_TOL * np.abs(ref["velocity"]).max()
        name = fresh("multigrid")
        done = run(name, "--steps", str(steps), "--set", "implicit.preconditioner=multigrid")
        self.assertEqual(startup_line(done.stdout), "nendo: implicit backward_euler, matrix_free operator, KSP cg + mg")
        got = particles(out(name, final))
        np.testing.assert_array_equal(got["id"], ref["id"])
        np.testing.assert_allclose(got["velocity"], ref["velocity"], rtol=0, atol=velocity_tol)
        np.testing.assert_allclose(got["position"], ref["position"], rtol=0, atol=velocity_tol * steps * dt)

        def krylov_per_newton(rows):
            return sum(int(r["ksp_iterations"]) for r in rows) / sum(int(r["newton_iterations"]) for r in rows)
        mg, jacobi = krylov_per_newton(solver_rows(name)), krylov_per_newton(solver_rows(expected)[:steps])
        self.assertLess(mg, 0.5 * jacobi, "multigrid %.1f, jacobi %.1f CG iterations per Newton iteration" % (mg, jacobi))

    def test_the_assembled_operator_keeps_gamg_when_multigrid_is_set(self):
        name = fresh("multigrid_assembled")
        done = run(name, "--steps", "2", "--set", "implicit.preconditioner=multigrid",
                   "--set", "implicit.operator=assembled")
        # the assembled operator keeps GAMG: the key is about the matrix-free operator
        self.assertEqual(startup_line(done.stdout), "nendo: implicit backward_euler, assembled operator, KSP cg + gamg")


@unittest.skipUnless(RANKS == 1, "against the 1-rank reference: once, in the 1-rank test")
class ManyRanks(unittest.TestCase):
    def test_written_on_sixteen_ranks_resumed_on_three_ends_where_one_rank_ends(self):
        """5 steps on 16 ranks (most own nothing), a checkpoint, 5 more on 3: within the solver
        tolerance of the 1-rank run (the implicit sums are not bitwise across rank counts)."""
        steps = 10
        ref = particles(out(reference(), "particles_%06d.h5" % (steps // 10)))
        E, nu, rho, dt, dx = 1.0e7, 0.3, 1000.0, 2.0e-3, 0.02  # as in Options above
        c = np.sqrt(E * (1 - nu) / ((1 + nu) * (1 - 2 * nu)) / rho)
        velocity_tol = 2 * (c * dt / dx) ** 2 * NEWTON_TOL * np.abs(ref["velocity"]).max()
        name = fresh("sixteen_then_three")
        run(name, "--steps", "5", ranks=16)
        done = run(name, "--restart", "latest", "--steps", str(steps), ranks=3)
        self.assertIn("restarting from", done.stdout)
        got = particles(out(name, "particles_%06d.h5" % (steps // 10)))
        np.testing.assert_array_equal(got["id"], ref["id"])
        np.testing.assert_allclose(got["velocity"], ref["velocity"], rtol=0, atol=velocity_tol)
        np.testing.assert_allclose(got["position"], ref["position"], rtol=0, atol=velocity_tol * steps * dt)


RETRY = re.compile(r"^nendo: step (\d+): (.+); retrying with dt = (\S+) s$")


class Failure(unittest.TestCase):
    def test_newton_failures_are_retried_with_half_steps(self):
        name = fresh("retries")
        done = run(name, "--steps", "12", "--set", "implicit.max_newton=3")  # steps 4 and 5 take 4
        retries = [RETRY.match(l) for l in done.stderr.splitlines() if "retrying" in l]
        self.assertTrue(retries and all(retries), done.stderr)
        for m in retries:
            self.assertEqual(m.group(2), "no convergence in 3 Newton iterations")
            self.assertIn(float(m.group(3)), [2.0e-3 / 2 ** k for k in range(1, 9)])
        rows = solver_rows(name)
        self.assertEqual([int(r["step"]) for r in rows], list(range(1, 13)))
        # a failed solve is retried as two: substeps = 1 + 2 x failures of that step
        failures = {int(r["step"]): (int(r["substeps"]) - 1) // 2 for r in rows}
        self.assertGreater(sum(failures.values()), 0)
        for step, count in failures.items():
            self.assertEqual(sum(1 for m in retries if int(m.group(1)) == step), count, "step %d" % step)
        for r in rows:  # every step ends converged, also after halving
            self.assertLessEqual(int(r["newton_iterations"]), 3 * int(r["substeps"]))
            self.assertTrue(float(r["relative_residual"]) <= NEWTON_TOL or float(r["residual_cells"]) <= 1e-6, r)

    def failing_step(self):
        """The first step the reference needs more than one Newton iteration for."""
        return next(int(r["step"]) for r in solver_rows(reference()) if int(r["newton_iterations"]) > 1)

    def test_a_step_that_fails_after_the_last_halving_stops_the_run(self):
        step = self.failing_step()
        name = fresh("fails_after_halvings")
        done = run(name, "--set", "implicit.max_newton=1", "--set", "implicit.max_halvings=2", expect=3)
        retries = [RETRY.match(l) for l in done.stderr.splitlines() if "retrying" in l]
        self.assertEqual([(int(m.group(1)), float(m.group(3))) for m in retries], [(step, 1e-3), (step, 5e-4)])
        self.assertIn("nendo: error: step %d: the implicit solve failed at the smallest step 0.0005 s "
                      "(2 halvings): no convergence in 1 Newton iterations" % step, done.stderr)

    FAILING = ["--set", "implicit.max_newton=1", "--set", "implicit.max_halvings=0"]

    @classmethod
    def setUpClass(cls):
        cls.failed = run(fresh("fails"), *cls.FAILING, expect=3)

    def copy_of_the_failed_run(self, name):
        shutil.copytree(os.path.join(WORK, "fails"), os.path.join(WORK, fresh(name)))
        good = checkpoints("fails")[-1]
        return name, os.path.join(WORK, name, "checkpoints", os.path.basename(good))

    def test_without_halvings_the_run_stops_with_a_checkpoint_of_the_last_good_state(self):
        step = self.failing_step()
        done = self.failed
        self.assertNotIn("retrying", done.stderr)
        errors = [l for l in done.stderr.splitlines() if l.startswith("nendo: error")]
        self.assertEqual(errors, ["nendo: error: step %d: the implicit solve failed at the smallest step 0.002 s "
                                  "(0 halvings): no convergence in 1 Newton iterations" % step])
        # the last good state, at the end of the step before
        good = os.path.join(WORK, "fails", "checkpoints", "checkpoint_%09d.h5" % (step - 1))
        self.assertEqual(checkpoints("fails"), [good])
        time = solver_rows(reference())[step - 2]["time"]  # as nendo prints it, %.17g
        self.assertIn("nendo: the last good state (t = %s) is in %s" % (time, good), done.stderr)
        info = subprocess.run([NENDO, "info", good], capture_output=True, text=True, timeout=60)
        self.assertEqual(info.returncode, 0, info.stdout + info.stderr)
        self.assertIn("step %d, time %s, dt 0.002, not finished" % (step - 1, time), info.stdout)
        self.assertIn("checksums: verified", info.stdout)
        self.assertEqual([int(r["step"]) for r in solver_rows("fails")], list(range(1, step)))

    def test_the_last_good_state_continues_with_other_settings(self):
        name, good = self.copy_of_the_failed_run("fails_continued")
        refused = run(name, "--restart", "latest", expect=2)  # the scene differs from the checkpoint's
        self.assertIn("implicit.max_halvings, implicit.max_newton", refused.stderr)
        done = run(name, "--restart", "latest", "--allow-scene-change")
        self.assertIn("restarting from %s (step %d," % (good, self.failing_step() - 1), done.stdout)
        ref = reference()  # the steps before the failure were the same
        self.assertEqual(outputs(ref), outputs(name))
        for file in outputs(ref):
            assert_identical(self, out(ref, file), out(name, file), file)
        self.assertEqual(lines(out(ref, "solver.csv")), lines(out(name, "solver.csv")))

    def test_the_same_settings_fail_again_at_the_same_step(self):
        # (the failed step once advanced the method's step counter, which the checkpoint saves: the
        # run restarted from it named step s + 1)
        name, good = self.copy_of_the_failed_run("fails_again")
        again = run(name, *self.FAILING, "--restart", "latest", expect=3)
        self.assertIn("restarting from %s (step %d," % (good, self.failing_step() - 1), again.stdout)
        self.assertEqual(checkpoints(name), [good])
        errors = [[l for l in d.stderr.splitlines() if l.startswith("nendo: error")] for d in (self.failed, again)]
        self.assertEqual(errors[1], errors[0])


class BadInput(unittest.TestCase):
    def assert_refused(self, name, old, new, line_of, *message):
        with open(SCENE) as f:
            text = f.read()
        self.assertIn(old, text)
        text = text.replace(old, new)
        path = os.path.join(WORK, fresh(name), "scene.yaml")
        os.makedirs(os.path.dirname(path))
        with open(path, "w") as f:
            f.write(text)
        line = 1 + text.splitlines().index(next(l for l in text.splitlines() if line_of in l))
        done = run(name, scene=path, expect=2)
        errors = [l for l in done.stderr.splitlines() if l.startswith("nendo: error")]
        self.assertEqual(len(errors), 1, "one report, from rank 0 only:\n" + done.stderr)
        self.assertTrue(errors[0].startswith("nendo: error: %s:%d: " % (path, line)), errors[0])
        for m in message:
            self.assertIn(m, errors[0])
        self.assertFalse(os.path.exists(out(name)), "no output")

    def test_misspelt_key(self):
        self.assert_refused("bad_key", "max_newton: 20}", "max_newtn: 20}", "implicit:",
                            "key 'implicit.max_newtn': unknown key (did you mean 'max_newton'?)")

    def test_misspelt_key_in_block_style(self):
        self.assert_refused("bad_block_key", "implicit: {scheme: backward_euler, operator: matrix_free, "
                            "newton_tol: 1.0e-6, max_newton: 20}",
                            "implicit:\n  scheme: backward_euler\n  operater: matrix_free\n  newton_tol: 1.0e-6\n",
                            "operater", "key 'implicit.operater': unknown key (did you mean 'operator'?)")

    def test_wrong_operator(self):
        self.assert_refused("bad_operator", "operator: matrix_free", "operator: matrixfree", "implicit:",
                            "key 'implicit.operator': must be one of matrix_free, assembled (got 'matrixfree')")

    def test_negative_newton_tol(self):
        self.assert_refused("bad_tol", "newton_tol: 1.0e-6", "newton_tol: -1.0e-6", "implicit:",
                            "key 'implicit.newton_tol': must be > 0 (got -1.0e-6)")


class SolverReport(unittest.TestCase):
    def test_solver_csv_has_a_row_per_step(self):
        ref = reference()
        text = lines(out(ref, "solver.csv"))
        self.assertEqual(text[0], SOLVER_HEADER)
        rows = solver_rows(ref)
        self.assertEqual([int(r["step"]) for r in rows], list(range(1, STEPS + 1)))
        np.testing.assert_allclose([float(r["time"]) for r in rows], 2.0e-3 * np.arange(1, STEPS + 1), rtol=1e-12)
        np.testing.assert_allclose([float(r["dt"]) for r in rows], 2.0e-3, rtol=1e-12)
        self.assertEqual({int(r["substeps"]) for r in rows}, {1})
        newton = [int(r["newton_iterations"]) for r in rows]
        ksp = [int(r["ksp_iterations"]) for r in rows]
        self.assertEqual(newton[:2], [0, 0])  # free flight: the predictor solves it
        self.assertTrue(all(n > 0 for n in newton[4:]), newton)  # in contact
        self.assertTrue(all(n <= 20 for n in newton))
        self.assertTrue(all((k > 0) == (n > 0) for n, k in zip(newton, ksp)))
        for r in rows:
            self.assertTrue(float(r["relative_residual"]) <= NEWTON_TOL or float(r["residual_cells"]) <= 1e-6, r)
        # the diagnostics' output steps have the same times
        with open(out(ref, "diagnostics.csv")) as f:
            for d in list(csv.DictReader(f))[1:]:
                self.assertEqual(d["time"], rows[int(d["step"]) - 1]["time"])

    def test_startup_and_progress_lines(self):
        ref = reference()
        done = reference.done
        self.assertEqual(startup_line(done.stdout),
                         "nendo: implicit backward_euler, matrix_free operator, KSP cg + jacobi")
        last = solver_rows(ref)[-1]
        progress = [l for l in done.stdout.splitlines() if l.startswith("step ")]
        self.assertTrue(progress, done.stdout)
        self.assertRegex(progress[-1], r"^step +%d .* newton %s ksp %s  ETA " %
                         (STEPS, last["newton_iterations"], last["ksp_iterations"]))


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
