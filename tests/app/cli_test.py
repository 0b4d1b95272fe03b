#!/usr/bin/python3
"""End-to-end tests of the `nendo` command under mpirun: exit codes, error reports, output files.

Usage: cli_test.py NENDO_BINARY WORK_DIR RANKS
"""
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
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
    shutil.rmtree(os.path.join(WORK, name, "out"), ignore_errors=True)  # one run per output folder
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
        self.assertRegex(r.stdout, r"/particles/velocity\s+real\s+x 3  \[m/s\]")
        self.assertRegex(r.stdout, r"/particles/material\s+int32\s+x 1  \[1\]  materials: 0=jelly")
        self.assertIn("method ballistic", r.stdout)
        r = nendo("info", path, ranks=1)  # a YAML file is not a particle file
        self.assertEqual(r.returncode, 2)
        self.assertIn("scene.yaml", r.stderr)

    def test_steps_limit_and_output_option(self):
        path = scene("steps")
        out = os.path.join(WORK, "steps", "elsewhere")
        shutil.rmtree(out, ignore_errors=True)
        r = nendo("run", path, "--steps", "3", "--output", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out, "diagnostics.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(int(rows[-1]["step"]), 3)



def files_of(directory):
    return {f: os.path.getmtime(os.path.join(directory, f)) for f in sorted(os.listdir(directory))}


def manifest(out):
    with open(os.path.join(out, "manifest.json")) as f:
        return json.load(f)


class Options(unittest.TestCase):
    """Issue 32 item 1: nendo's options are checked; PETSc's (one dash) reach PETSc."""

    def assert_refused_before_output(self, name, args, *message):
        path = scene(name)
        shutil.rmtree(os.path.join(WORK, name, "out"), ignore_errors=True)
        r = nendo("run", path, *args)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        for m in message:
            self.assertIn(m, r.stderr)
        self.assertNotIn("particle-steps/s", r.stdout)
        self.assertFalse(os.path.exists(os.path.join(WORK, name, "out")), "refused before any output")
        self.assertFalse(os.path.exists(os.path.join(WORK, name, "x")), "refused before any output")

    def test_a_misspelt_option_is_refused_with_the_nearest_one(self):
        self.assert_refused_before_output("ouput", ["--ouput", os.path.join(WORK, "ouput", "x")],
                                          "--ouput: not an option of nendo run (did you mean --output?)")
        self.assert_refused_before_output("step", ["--step", "10"], "did you mean --steps?")
        self.assert_refused_before_output("frobnicate", ["--frobnicate"], "--frobnicate: not an option")

    def test_a_petsc_option_nothing_reads_is_refused_before_the_first_step(self):
        # ballistic makes no PETSc solver: every PETSc option it could read has been read by now
        self.assert_refused_before_output("petsc_typo", ["-ksp_typo", "cg"], "-ksp_typo", "would not be used")

    def test_set_works_anywhere_and_petsc_log_view_is_accepted(self):
        path = scene("set_anywhere")
        out = os.path.join(WORK, "set_anywhere", "out")
        shutil.rmtree(out, ignore_errors=True)
        r = nendo("run", "--set", "time.end=0.004", path, "-log_view", "--set", "output.every=0.002", "--steps", "3")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("PETSc Performance Summary", r.stdout)  # -log_view reached PETSc
        with open(os.path.join(out, "diagnostics.csv")) as f:
            rows = list(csv.DictReader(f))
        # both --set applied (outputs at 0, 0.002 and the --steps 3 stop at 0.003), --steps 3 stops at step 3
        self.assertEqual([float(r["time"]) for r in rows], [0.0, 0.002, 0.003])

    def test_get_prints_what_the_command_line_resolves(self):
        path = scene("get")
        out = os.path.join(WORK, "get", "out")
        r = nendo("run", path, "--get", "checkpoint.dir", ranks=1)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, os.path.join(out, "checkpoints")), r.stderr)
        r = nendo("run", path, "--output", "elsewhere", "--set", "time.end=3", "--get", "checkpoint.dir", ranks=1)
        self.assertEqual(r.stdout.strip(), "elsewhere/checkpoints")
        r = nendo("run", path, "--set", "checkpoint.dir=ck", "--get", "checkpoint.dir", ranks=1)
        self.assertEqual(r.stdout.strip(), "ck")
        self.assertFalse(os.path.exists(out), "--get runs nothing")


class RunFolder(unittest.TestCase):
    """Issue 32 items 2-4: one run per output folder, the folder describes the run, outputs on schedule."""

    def test_a_second_run_into_a_folder_is_refused_and_overwrite_removes_only_nendo_files(self):
        path = scene("second")
        out = os.path.join(WORK, "second", "out")
        shutil.rmtree(out, ignore_errors=True)
        self.assertEqual(nendo("run", path).returncode, 0)
        with open(os.path.join(out, "notes.txt"), "w") as f:
            f.write("mine")
        before = files_of(out)
        first = manifest(out)
        r = nendo("run", path, "--steps", "1")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn(f"the output folder '{out}' holds the files of run {first['run_id']}", r.stderr)
        self.assertIn("--overwrite", r.stderr)
        self.assertIn("--output", r.stderr)
        self.assertEqual(files_of(out), before, "nothing touched")
        r = nendo("run", path, "--steps", "1", "--overwrite")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        left = set(os.listdir(out))
        self.assertIn("notes.txt", left)
        self.assertNotIn("particles_000002.h5", left, "the first run's later output went")
        self.assertIn("particles_000001.h5", left)
        self.assertNotEqual(manifest(out)["run_id"], first["run_id"])

    def test_the_folder_describes_the_run(self):
        path = scene("described")
        out = os.path.join(WORK, "described", "out")
        shutil.rmtree(out, ignore_errors=True)
        r = nendo("run", path, "--set", "time.end=0.01")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        m = manifest(out)
        self.assertEqual((m["status"], m["exit_status"]), ("finished", 0))
        self.assertEqual(m["scene"], {"path": path, "method": "ballistic", "dimension": 3})
        self.assertEqual(m["checkpoint_dir"], os.path.join(out, "checkpoints"))
        [segment] = m["segments"]
        self.assertEqual(segment["command"], [NENDO, "run", path, "--set", "time.end=0.01"])
        self.assertEqual(segment["ranks"], RANKS)
        self.assertEqual(sum(segment["hosts"].values()), RANKS)
        self.assertRegex(segment["nendo"]["version"], r"^\d+\.\d+\.\d+$")
        self.assertRegex(segment["nendo"]["commit"], r"^[0-9a-f]{12}")
        self.assertEqual(set(segment["libraries"]), {"mpi", "petsc", "hdf5", "paraview"})
        self.assertRegex(segment["libraries"]["petsc"], r"^3\.\d+\.\d+$")
        self.assertLessEqual(segment["started"], segment["ended"])
        self.assertEqual((segment["last_step"], segment["last_time"]), (10, 0.01))
        with open(os.path.join(out, "run.log")) as f:
            log = f.read()
        self.assertIn(r.stdout.splitlines()[0], log)
        self.assertIn("particle-steps/s", log)
        # scene.yaml is the scene as run: it loads, with the override in it
        r = nendo("run", os.path.join(out, "scene.yaml"), "--get", "time.end", ranks=1)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "0.01"), r.stderr)
        r = nendo("info", out, ranks=1)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"output folder of run {m['run_id']} (ballistic), status finished, exit status 0", r.stdout)
        self.assertIn("2 outputs particles_000000.h5 .. particles_000001.h5", r.stdout)
        r = nendo("info", os.path.join(out, "particles.xdmf"), ranks=1)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("XDMF series of 2 outputs, t = 0 .. 0.01 s", r.stdout)

    def test_a_failed_run_says_so_in_its_manifest_and_log(self):
        path = scene("failed")
        out = os.path.join(WORK, "failed", "out")
        shutil.rmtree(out, ignore_errors=True)
        r = nendo("run", path, "--set", "gravity=[0, -1e308, 0]", "--set", "time.dt=10", "--set", "time.end=100",
                  "--set", "output.every=10")
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        m = manifest(out)
        self.assertEqual((m["status"], m["exit_status"]), ("failed", 3))
        self.assertIn("non-finite position", m["segments"][0]["message"])
        with open(os.path.join(out, "run.log")) as f:
            self.assertIn("nendo: error: step 1: particle 0 has a non-finite position", f.read())

    def test_restart_continues_its_run_and_a_what_if_writes_its_own_checkpoints(self):
        path = scene("chain")
        base = os.path.join(WORK, "chain", "out")
        whatif = os.path.join(WORK, "chain", "whatif")
        for d in (base, whatif):
            shutil.rmtree(d, ignore_errors=True)
        cp = ["--set", "checkpoint.every_steps=5", "--set", "checkpoint.keep=10"]
        self.assertEqual(nendo("run", path, *cp, "--set", "output.every=0.002", "--steps", "15").returncode, 0)
        checkpoints = os.path.join(base, "checkpoints")
        self.assertEqual(sorted(os.listdir(checkpoints)),
                         ["checkpoint_000000005.h5", "checkpoint_000000010.h5", "checkpoint_000000015.h5"])
        self.assertIn("particles_000007.h5", os.listdir(base))  # t = 0.014
        # continuing from step 5 (t = 0.005) removes the outputs after it and writes its own
        r = nendo("run", path, *cp, "--set", "output.every=0.002", "--steps", "8",
                  "--restart", os.path.join(checkpoints, "checkpoint_000000005.h5"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # outputs 3-7 (t = 0.006 .. 0.014) and 8, the --steps 15 stop (t = 0.015)
        self.assertIn("removed 6 outputs after the restart point", r.stdout)
        outputs = sorted(f for f in os.listdir(base) if f.startswith("particles_0"))
        self.assertEqual(outputs[-1], "particles_000004.h5")  # t = 0.008, the --steps 8 stop
        m = manifest(base)
        self.assertEqual(len(m["segments"]), 2)
        self.assertEqual(m["segments"][1]["restart"]["step"], 5)
        base_checkpoints = files_of(checkpoints)
        # a what-if run from the base run's newest checkpoint, into a folder of its own
        r = nendo("run", path, "--restart", "latest", "--allow-scene-change", "--set", "gravity=[0, 0, 0]",
                  "--output", whatif, "--set", "checkpoint.every_steps=5")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(files_of(checkpoints), base_checkpoints, "the base run's checkpoints are untouched")
        self.assertIn("checkpoint_000000020.h5", os.listdir(os.path.join(whatif, "checkpoints")))
        w = manifest(whatif)
        self.assertNotEqual(w["run_id"], m["run_id"])
        self.assertEqual(w["branched_from"]["run_id"], m["run_id"])
        self.assertEqual(w["checkpoint_dir"], os.path.join(whatif, "checkpoints"))
        # the same run continued into an empty folder (outputs moved elsewhere): its own id, no branch
        moved = os.path.join(WORK, "chain", "moved")
        shutil.rmtree(moved, ignore_errors=True)
        r = nendo("run", path, "--restart", os.path.join(checkpoints, "checkpoint_000000005.h5"), "--output", moved,
                  "--steps", "6")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        c = manifest(moved)
        self.assertEqual((c["run_id"], c["branched_from"]), (m["run_id"], None))

    def test_outputs_and_checkpoints_land_on_multiples_of_every(self):
        # dt 3 ms does not divide 10 ms: steps are shortened to land on each output time
        path = scene("schedule")
        out = os.path.join(WORK, "schedule", "out")
        shutil.rmtree(out, ignore_errors=True)
        r = nendo("run", path, "--set", "time={end: 0.8, dt: 3.0e-3}", "--set", "checkpoint.every=0.1",
                  "--set", "checkpoint.keep=100")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(out, "diagnostics.csv")) as f:
            times = [float(r["time"]) for r in csv.DictReader(f)]
        self.assertEqual(len(times), 81)
        np.testing.assert_allclose(times, 0.01 * np.arange(81), rtol=0, atol=1e-15)
        checkpoints = sorted(os.listdir(os.path.join(out, "checkpoints")))
        self.assertEqual(len(checkpoints), 8)
        for k, name in enumerate(checkpoints, start=1):
            with h5py.File(os.path.join(out, "checkpoints", name), "r") as f:
                self.assertAlmostEqual(f["meta"].attrs["time"], 0.1 * k, delta=1e-15)

    def test_quiet_and_verbose(self):
        path = scene("quiet")
        out = os.path.join(WORK, "quiet", "out")
        shutil.rmtree(out, ignore_errors=True)
        r = nendo("run", path, "--quiet")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout, "")
        with open(os.path.join(out, "run.log")) as f:
            self.assertIn("particle-steps/s", f.read())
        r = nendo("run", path, "--verbose", "--overwrite")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(len([l for l in r.stdout.splitlines() if l.startswith("step ")]), 20)  # every step


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
            r = nendo("run", path, "--set", f"gravity=[0, -{g}, 0]", "--set", "time.dt=10", "--set", "time.end=100",
                      "--set", "output.every=10")  # the first output time lands on the step's end
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
        # outputs every step: no step is shortened to land on an output time
        r = nendo("run", path, "--set", "gravity=[0, -1000, 0]", "--set", "colliders=[]", "--set", "output.every=0.003")
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        n = next(n for n in range(1, 100) if 0.003 ** 2 * (5 + (1000 * n * 0.003) ** 2) > 0.05 ** 2)
        self.assertEqual(n, 6)
        self.assertRegex(r.stderr, rf"step {n}: particle \d+ has a speed that moves it more than a cell in one step")
        self.assertIn("time.cfl", r.stderr)
        self.assertEqual([f for f in os.listdir(out) if f.startswith("failed_step_")], [f"failed_step_{n:06d}.h5"])
        r = nendo("run", path, "--set", "gravity=[0, -1000, 0]", "--set", "colliders=[]", "--set", "time.cfl=0.5",
                  "--steps", "40", "--overwrite")  # the CFL logic shortens the step instead
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


class Plan(unittest.TestCase):
    """`nendo plan` sizes a job without running it; `nendo run` refuses one that cannot fit."""
    HUGE = ["--set", "grid.dx=0.0005", "--set", "bodies=[{shape: box, min: [0, 0, 0], max: [1, 1, 1], "
            "material: jelly}]"]  # 1 m^3 at dx = 0.5 mm: 6.4e10 particles
    # Each rank runs nendo under this, which prints its exit code and peak resident set and exits 0
    # (a non-zero exit would let mpirun kill the other ranks' wrappers before they print).
    PEAK_RSS = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]); "
                "print('exit', code, 'peak_rss_kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "
                "flush=True)")

    def test_plan_prints_the_estimate_and_the_smallest_rank_count(self):
        path = scene("plan")
        r = nendo("plan", path, "--ranks", str(RANKS), ranks=1)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, rf"particles +{expected_lattice_count(3)}\n")
        for line in ("memory per rank", "one output", "one checkpoint", "step time", "20 steps to time.end",
                     "memory available"):
            self.assertIn(line, r.stdout)
        self.assertIn(f"fits on {RANKS} ranks; the smallest rank count that fits is 1 ", r.stdout)
        self.assertFalse(os.path.exists(os.path.join(WORK, "plan", "out")), "plan writes nothing")
        r = nendo("plan", path, *self.HUGE, "--ranks", str(RANKS), "--memory-per-rank", "16GiB", ranks=RANKS)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"particles +64000000000\n")
        self.assertIn(f"does NOT fit on {RANKS} ranks", r.stdout)
        fewest = int(re.search(r"the smallest rank count that fits is (\d+)", r.stdout).group(1))
        self.assertGreater(fewest, 100)
        r = nendo("plan", path, *self.HUGE, "--ranks", str(fewest), "--memory-per-rank", "16GiB", ranks=1)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = nendo("plan", path, "--memory-per-rank", "lots", ranks=1)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("lots: not a size", r.stderr)

    def test_a_scene_too_big_for_the_job_is_refused_before_allocating(self):
        path = scene("huge")
        start = time.time()
        cmd = ["mpirun", "-np", str(RANKS), sys.executable, "-c", self.PEAK_RSS, NENDO, "run", path, *self.HUGE]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        self.assertLess(time.time() - start, 30)
        self.assertEqual(re.findall(r"exit (\d+) ", r.stdout), ["2"] * RANKS, r.stdout + r.stderr)
        self.assertRegex(r.stderr, r"the scene does not fit: 64000000000 particles of method ballistic need an "
                                   rf"estimated [\d.]+ TiB per rank on {RANKS} ranks, the ranks have [\d.]+ GiB")
        self.assertRegex(r.stderr, r"the smallest rank count that fits is \d+")
        peaks = [int(k) * 1024 for k in re.findall(r"peak_rss_kib (\d+)", r.stdout)]
        self.assertEqual(len(peaks), RANKS)
        self.assertLess(max(peaks), 500e6, "nothing of the problem's size is allocated")
        self.assertFalse(os.path.exists(os.path.join(WORK, "huge", "out")), "no output folder")
        r = nendo("run", path, "--memory-per-rank", "1MB")  # below one process: even the small scene
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("the scene does not fit", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(WORK, "huge", "out")), "no output folder")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
