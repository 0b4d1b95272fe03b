#!/usr/bin/python3
"""End-to-end tests of the `nendo` command under mpirun: exit codes, error reports, output files.

Usage: cli_test.py NENDO_BINARY WORK_DIR RANKS
"""
import csv
import os
import shutil
import subprocess
import sys
import unittest
import xml.etree.ElementTree as ET

import h5py
import numpy as np

NENDO, WORK, RANKS = sys.argv[1], sys.argv[2], int(sys.argv[3])

SCENE = """nendo: 1
method: ballistic
dimension: {dim}
gravity: {gravity}
time: {{end: 0.02, dt: 1.0e-3}}
grid: {{dx: 0.05}}
materials:
  jelly: {{model: neo_hookean, E: 1.0e5, nu: 0.3, density: 1000}}
bodies:
  - {{shape: box, min: {lo}, max: {hi}, material: jelly, velocity: {vel}}}
  - {{shape: sphere, center: {center}, radius: 0.1, material: jelly}}
output: {{dir: {out}, every: 0.01, fields: [velocity, mass, material]}}
"""


def scene(name, dim=3, **changes):
    v = lambda *x: "[" + ", ".join(str(c) for c in x[:dim]) + "]"
    text = SCENE.format(dim=dim, gravity=v(0, -9.81, 0), lo=v(0, 0, 0), hi=v(0.4, 0.2, 0.3),
                        vel=v(30, 5, -20), center=v(0.6, 0.6, 0.6), out=os.path.join(WORK, name, "out"))
    for old, new in changes.items():
        text = text.replace(old.replace("_", " "), new)
    os.makedirs(os.path.join(WORK, name), exist_ok=True)
    path = os.path.join(WORK, name, "scene.yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


def nendo(*args, ranks=RANKS):
    cmd = ["mpirun", "-np", str(ranks), NENDO, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def expected_lattice_count(dim):
    # box [0,0.4]x[0,0.2]x[0,0.3] at dx 0.05, 2 per cell per axis; sphere r = 0.1 on the same lattice
    s = 0.025
    box = 16 * 8 * (12 if dim == 3 else 1)
    axes = [np.arange(np.floor(0.5 / s), np.ceil(0.7 / s)) * s + s / 2 for _ in range(dim)]
    grid = np.meshgrid(*axes, indexing="ij")
    r2 = sum((g - 0.6) ** 2 for g in grid)
    return box + int((r2 < 0.01).sum())


class Run(unittest.TestCase):
    def check_run(self, dim):
        name = f"run{dim}d"
        path = scene(name, dim)
        r = nendo("run", path)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        out = os.path.join(WORK, name, "out")
        n = expected_lattice_count(dim)
        files = sorted(f for f in os.listdir(out) if f.startswith("particles_") and f.endswith(".h5"))
        self.assertEqual(len(files), 3)  # t = 0, 0.01, 0.02
        for f in files:
            with h5py.File(os.path.join(out, f), "r") as h:
                ids = h["particles/id"][:]
                self.assertEqual(len(ids), n)
                self.assertEqual(len(np.unique(ids)), n, "every particle exactly once")
                self.assertEqual(h["particles/position"].shape, (n, dim))
                t = h.attrs["time"]
                v = h["particles/velocity"][:]
                # ballistic: v(t) = v0 + g t; the box's ids come first (its lattice is the box itself)
                g = np.array([0, -9.81, 0][:dim])
                v0 = np.where((ids < 16 * 8 * (12 if dim == 3 else 1))[:, None], np.array([30, 5, -20][:dim]), 0.0)
                np.testing.assert_allclose(v, v0 + g * t, atol=1e-12)
        with open(os.path.join(out, "diagnostics.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual([int(r["particles"]) for r in rows], [n] * 3)
        masses = [float(r["mass"]) for r in rows]
        self.assertAlmostEqual(masses[0], n * 1000 * 0.025 ** dim, delta=1e-9 * masses[0])
        root = ET.parse(os.path.join(out, "particles.xdmf")).getroot()
        self.assertEqual(len(root.findall(".//Grid[@GridType='Uniform']")), 3)
        self.assertIn("particle-steps/s", r.stdout)
        return out

    def check_paraview_opens(self, out, dim):
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "paraview_open.py")
        r = subprocess.run(["pvpython", "--force-offscreen-rendering", script, os.path.join(out, "particles.xdmf")],
                           capture_output=True, text=True, timeout=300, env={"PATH": "/usr/bin:/bin", "HOME": WORK})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        seen = [line.split() for line in r.stdout.splitlines()]
        facts = {line[0]: line[1:] for line in seen if line and line[0] != "array"}
        arrays = {line[1]: int(line[2]) for line in seen if line and line[0] == "array"}
        n = expected_lattice_count(dim)
        self.assertEqual(facts["reader"], ["Xdmf3ReaderS"])
        self.assertEqual(facts["timesteps"], ["3"])
        self.assertEqual(facts["points"], [str(n)])
        self.assertEqual(facts["cells"], [str(n)])  # Polyvertex: one vertex cell per particle
        self.assertEqual(arrays, {"id": 1, "mass": 1, "material": 1, "velocity": dim})

    def test_3d(self):
        self.check_paraview_opens(self.check_run(3), 3)

    def test_2d(self):
        self.check_paraview_opens(self.check_run(2), 2)

    def test_same_bits_as_one_rank(self):
        out = self.check_run(3)
        path = scene("one_rank", 3)
        self.assertEqual(nendo("run", path, ranks=1).returncode, 0)
        last = "particles_000002.h5"

        def by_id(directory):
            with h5py.File(os.path.join(directory, last), "r") as h:
                order = np.argsort(h["particles/id"][:])
                return h["particles/position"][:][order], h["particles/velocity"][:][order]

        for a, b in zip(by_id(out), by_id(os.path.join(WORK, "one_rank", "out"))):
            self.assertEqual(a.tobytes(), b.tobytes())


class BadInput(unittest.TestCase):
    def assert_refused(self, path, *message, args=()):
        r = nendo("run", path, *args)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        errors = [l for l in r.stderr.splitlines() if l.startswith("nendo: error")]
        self.assertEqual(len(errors), 1, "one report, from rank 0 only:\n" + r.stderr)
        for m in message:
            self.assertIn(m, errors[0])
        self.assertFalse(os.path.exists(os.path.join(os.path.dirname(path), "out")), "no partial output")

    def test_non_physical_value_names_file_line_key(self):
        path = scene("bad_nu", **{"nu:_0.3": "nu: 0.5"})
        self.assert_refused(path, f"{path}:8:", "materials.jelly.nu", "0.5")

    def test_unknown_key(self):
        path = scene("bad_key", **{"grid:_{dx:_0.05}": "grid: {dx: 0.05, kernal: cubic}"})
        self.assert_refused(path, f"{path}:6:", "grid.kernal")

    def test_bad_override(self):
        path = scene("bad_set")
        self.assert_refused(path, "--set time.dt=-1", "time.dt", args=("--set", "time.dt=-1"))

    def test_missing_file(self):
        self.assert_refused(os.path.join(WORK, "missing", "nothing.yaml"), "nothing.yaml")


class Cli(unittest.TestCase):
    def test_version_and_help(self):
        for flag in ("--version", "--help"):
            r = nendo(flag, ranks=1)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("nendo", r.stdout)

    def test_info_describes_an_output_file(self):
        path = scene("info")
        self.assertEqual(nendo("run", path, "--steps", "1").returncode, 0)
        r = nendo("info", os.path.join(WORK, "info", "out", "particles_000001.h5"), ranks=1)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"3D, {expected_lattice_count(3)} particles, time 0.001, step 1", r.stdout)
        self.assertRegex(r.stdout, r"/particles/velocity\s+real\s+x 3")
        r = nendo("info", path, ranks=1)  # a YAML file is not a particle file
        self.assertEqual(r.returncode, 2)
        self.assertIn("scene.yaml", r.stderr)

    def test_steps_limit_and_output_option(self):
        path = scene("steps")
        out = os.path.join(WORK, "steps", "elsewhere")
        r = nendo("run", path, "--steps", "3", "--output", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out, "diagnostics.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(int(rows[-1]["step"]), 3)



MPM_SCENE = """nendo: 1
method: mpm
dimension: 3
gravity: [0, -9.81, 0]
time: {{end: {end}, dt: {dt}}}
grid: {{dx: 0.05}}
materials:
  jelly: {{model: fixed_corotated, E: 1.0e5, nu: 0.3, density: 1000}}
bodies:
  - {{shape: box, min: [0.2, 0.2, 0.2], max: [0.5, 0.4, 0.5], material: jelly, velocity: [1, 0, -2]}}
colliders:
  - {{shape: plane, point: [0, 0, 0], normal: [0, 1, 0], boundary: separate, friction: 0.3}}
output: {{dir: {out}, every: 0.01, fields: [velocity, stress, J, rank]}}
"""


def mpm_scene(name, dt, end="0.05"):
    shutil.rmtree(os.path.join(WORK, name), ignore_errors=True)  # nothing from an earlier run
    os.makedirs(os.path.join(WORK, name), exist_ok=True)
    path = os.path.join(WORK, name, "scene.yaml")
    with open(path, "w") as f:
        f.write(MPM_SCENE.format(dt=dt, end=end, out=os.path.join(WORK, name, "out")))
    return path, os.path.join(WORK, name, "out")


class Mpm(unittest.TestCase):
    def test_derived_output_fields(self):
        path, out = mpm_scene("mpm", "1.0e-3")
        r = nendo("run", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("time per stage", r.stdout)
        with h5py.File(os.path.join(out, "particles_000005.h5"), "r") as f:
            p = f["particles"]
            n = p["id"].shape[0]
            self.assertEqual(p["stress"].shape, (n, 9))
            self.assertEqual(p["J"].shape, (n,))
            stress = p["stress"][...]
            # Cauchy stress is symmetric; J is near 1 for a jelly under gravity.
            self.assertLess(np.abs(stress[:, 1] - stress[:, 3]).max(), 1e-9 * (np.abs(stress).max() + 1))
            self.assertTrue(np.all(np.abs(p["J"][...] - 1) < 0.05))
            self.assertTrue(set(p["rank"][...].tolist()) <= set(range(RANKS)))

    def test_fixed_step_above_the_stable_limit_is_refused(self):
        path, out = mpm_scene("too_large_dt", "0.03", end="10")  # 7x the elastic limit
        r = nendo("run", path)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        errors = [l for l in r.stderr.splitlines() if l.startswith("nendo: error")]
        self.assertEqual(len(errors), 1, r.stderr)
        # E 1e5, nu 0.3, rho 1000: c = sqrt((lambda + 2 mu)/rho) = 11.60 m/s, |v| = sqrt(5): dx/(c+|v|)
        c = (1.0e5 * 0.7 / (1.3 * 0.4) / 1000) ** 0.5
        limit = 0.05 / (c + 5 ** 0.5)
        self.assertIn(f"{path}:5: key 'time.dt': the fixed step 0.03 s is above the stable limit of the first step, "
                      f"{limit:.4g} s", errors[0])
        self.assertIn("time.cfl", errors[0])
        self.assertFalse(os.path.exists(out), "refused before any output")
        r = nendo("run", path, "--set", f"time.dt={0.99 * limit:.6g}", "--steps", "2")  # just below: runs
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_methods_without_their_own_guard_are_stopped_by_the_driver(self):
        # The ballistic method checks nothing itself: the migration stops a position that no block
        # holds, the driver's guard any other non-finite field; every rank alike, with a diagnostic file.
        cases = [("1e10", "position outside the addressable domain"), ("1e308", "non-finite position")]
        for g, problem in cases:
            name = "stray-" + g
            path = scene(name)
            shutil.rmtree(os.path.join(WORK, name, "out"), ignore_errors=True)
            r = nendo("run", path, "--set", f"gravity=[0, -{g}, 0]", "--set", "time.dt=10", "--set", "time.end=100")
            self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
            self.assertIn(f"nendo: error: step 1: particle 0 has a {problem}", r.stderr)
            self.assertIn("non-finite values included", r.stderr)
            out = os.path.join(WORK, name, "out")
            self.assertTrue(os.path.exists(os.path.join(out, "failed_step_000001.h5")), os.listdir(out))

    def test_a_particle_that_outruns_a_fixed_step_is_reported(self):
        # Stable at the start (0.003 s < the 0.003613 s limit above), then free fall under 1000 m/s^2:
        # v_y = -1000 n dt after step n, and the box moves more than dx once dt^2 (5 + (1000 n dt)^2)
        # > dx^2, first at n = 6.
        path, out = mpm_scene("outrun", "0.003", end="1")
        r = nendo("run", path, "--set", "gravity=[0, -1000, 0]", "--set", "colliders=[]")
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        n = next(n for n in range(1, 100) if 0.003 ** 2 * (5 + (1000 * n * 0.003) ** 2) > 0.05 ** 2)
        self.assertEqual(n, 6)
        self.assertRegex(r.stderr, rf"step {n}: particle \d+ has a speed that moves it more than a cell in one step")
        self.assertIn("time.cfl", r.stderr)
        self.assertEqual([f for f in os.listdir(out) if f.startswith("failed_step_")], [f"failed_step_{n:06d}.h5"])
        r = nendo("run", path, "--set", "gravity=[0, -1000, 0]", "--set", "colliders=[]", "--set", "time.cfl=0.5",
                  "--steps", "40")  # the CFL logic shortens the step instead
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_unstable_step_stops_with_the_last_finite_state(self):
        # A fresh run with this step is refused (above); a restart may change time.dt at the user's
        # risk (--allow-scene-change), and then the non-finite guard must stop it cleanly.
        path, out = mpm_scene("unstable", "1.0e-3", end="10")
        ckpt = os.path.join(WORK, "unstable", "checkpoints")
        r = nendo("run", path, "--steps", "5", "--set", f"checkpoint={{dir: {ckpt}, every_steps: 5}}")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = nendo("run", path, "--restart", "latest", "--allow-scene-change", "--set", "time.dt=0.03",
                  "--set", f"checkpoint={{dir: {ckpt}, every_steps: 0}}")
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertRegex(r.stderr, r"step \d+: particle \d+ has a (non-finite \w+|position outside the addressable domain|"
                                   r"speed that moves it more than a cell)")
        failed = [f for f in os.listdir(out) if f.startswith("failed_step_")]
        self.assertEqual(len(failed), 1, os.listdir(out))
        with h5py.File(os.path.join(out, failed[0]), "r") as f:
            for name in ("position", "velocity", "F", "B"):
                self.assertTrue(np.all(np.isfinite(f["particles"][name][...])), name)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
