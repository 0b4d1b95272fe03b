#!/usr/bin/env python3
"""jobs/tools/nendo_post.py on a ballistic run (2 ranks), where every particle's velocity is known:
v(t) = v0 + g t. The probes must give it to round-off, the profile's bin means must lie in their
bins, the plots must be PNG files, and a wrong column, field or probe must be refused by name.
Both tools fail in one line, without a traceback, where they cannot work: nendo_post.py without
h5py or numpy, nendo_picture.py without ParaView or without an X display."""
import csv
import os
import shutil
import subprocess
import sys
import unittest

import h5py
import numpy as np

NENDO, WORK = sys.argv[1], sys.argv[2]
TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "jobs", "tools")
TOOL = os.path.join(TOOLS, "nendo_post.py")
PICTURE = os.path.join(TOOLS, "nendo_picture.py")
OUT = os.path.join(WORK, "out")
G = np.array([0.0, 0.0, -9.81])
V0 = np.array([2.0, 1.0, 0.5])
SCENE = f"""nendo: 1
method: ballistic
dimension: 3
gravity: [0, 0, -9.81]
time: {{end: 0.05, dt: 1.0e-3}}
grid: {{dx: 0.05}}
materials:
  jelly: {{model: neo_hookean, E: 1.0e5, nu: 0.3, density: 1000}}
bodies:
  - {{shape: box, min: [0, 0, 0], max: [0.4, 0.2, 0.3], material: jelly, velocity: [2, 1, 0.5]}}
  - {{shape: sphere, center: [1.0, 1.0, 1.0], radius: 0.1, material: jelly}}
output: {{dir: {OUT}, every: 0.01, fields: [velocity, mass]}}
"""


def tool(*args, ok=True):
    r = subprocess.run([sys.executable, TOOL] + [str(a) for a in args], capture_output=True, text=True)
    if ok and r.returncode != 0:
        raise AssertionError(f"nendo_post {' '.join(map(str, args))} failed:\n{r.stdout}{r.stderr}")
    return r


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


class PostProcessing(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shutil.rmtree(WORK, ignore_errors=True)  # nendo refuses a folder holding an earlier run
        os.makedirs(WORK)
        scene = os.path.join(WORK, "scene.yaml")
        with open(scene, "w") as f:
            f.write(SCENE)
        subprocess.run(["mpirun", "-np", "2", NENDO, "run", scene], check=True, capture_output=True)

    def test_info_lists_every_output(self):
        lines = tool("info", OUT).stdout.splitlines()
        self.assertEqual(len(lines), 6)
        for k, line in enumerate(lines):
            self.assertTrue(line.startswith(f"particles_{k:06d}.h5  step {10 * k}  time {0.01 * k:.6g}"), line)
            self.assertTrue(line.endswith("fields: id, mass, position, velocity"), line)

    def test_probe_at_a_point_is_the_analytic_velocity(self):
        path = os.path.join(WORK, "probe.csv")
        tool("probe", OUT, "--at", "1.0,1.0,1.0", "--radius", 0.06, "--field", "velocity", "--csv", path,
             "-o", os.path.join(WORK, "probe.png"))
        series = rows(path)
        self.assertEqual(len(series), 6)
        for r in series:
            t = float(r["time"])
            self.assertGreater(int(r["particles"]), 10)  # the sphere's centre falls 5 mm in 0.05 s
            v = np.array([float(r[f"velocity_{c}"]) for c in range(3)])
            np.testing.assert_allclose(v, G * t, atol=1e-12)
        self.assert_png(os.path.join(WORK, "probe.png"))

    def test_probe_follows_one_particle_by_id(self):
        with h5py.File(os.path.join(OUT, "particles_000000.h5")) as h:
            ids, x = h["particles/id"][:], h["particles/position"][:]
        box_id = int(ids[np.argmin(x[:, 0] + x[:, 1] + x[:, 2])])  # a corner of the box
        path = os.path.join(WORK, "probe-id.csv")
        tool("probe", OUT, "--id", box_id, "--field", "velocity", "--csv", path)
        for r in rows(path):
            self.assertEqual(int(r["particles"]), 1)
            v = np.array([float(r[f"velocity_{c}"]) for c in range(3)])
            np.testing.assert_allclose(v, V0 + G * float(r["time"]), atol=1e-12)

    def test_profile_bins_hold_their_particles(self):
        path = os.path.join(WORK, "profile.csv")
        tool("profile", OUT, "--field", "position", "--component", 0, "--axis", 0, "--bins", 12, "--csv", path,
             "-o", os.path.join(WORK, "profile.png"))
        bins = rows(path)
        self.assertEqual(len(bins), 12)
        centres = np.array([float(b["x0"]) for b in bins])
        half = 0.5 * (centres[1] - centres[0])
        with h5py.File(os.path.join(OUT, "particles_000005.h5")) as h:
            total = h["particles/mass"][:].sum()
        self.assertAlmostEqual(sum(float(b["weight"]) for b in bins), total, delta=1e-9 * total)
        for b, c in zip(bins, centres):
            if float(b["weight"]) > 0:  # the mass-weighted mean x of a bin lies inside it
                self.assertLessEqual(abs(float(b["position_0"]) - c), half * (1 + 1e-9))
        self.assert_png(os.path.join(WORK, "profile.png"))

    def test_diagnostics_plot(self):
        png = os.path.join(WORK, "diag.png")
        out = tool("diagnostics", OUT, "--y", "kinetic_energy,mass", "-o", png).stdout
        self.assertIn(png, out)
        self.assert_png(png)

    def test_mistakes_are_named(self):
        r = tool("diagnostics", OUT, "--y", "kinetic_enrgy", ok=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no column 'kinetic_enrgy'", r.stderr)
        r = tool("probe", OUT, "--id", 3, "--field", "stress", ok=False)
        self.assertIn("no particle field 'stress'", r.stderr)
        r = tool("probe", OUT, "--at", "1,1", "--radius", 0.1, ok=False)
        self.assertIn("--at has 2 coordinates, the scene is 3D", r.stderr)
        r = tool("info", WORK + "/nowhere", ok=False)
        self.assertIn("no particles_*.h5", r.stderr)

    def test_probe_that_finds_nothing_is_an_error(self):
        r = tool("probe", OUT, "--at", "5,5,5", "--radius", 0.05, ok=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("no particle within --radius 0.05 of --at 5,5,5 in all 6 outputs", r.stderr)
        self.assertRegex(r.stderr, r"particles span \[.*\] m, the nearest is [0-9.]+ m from the point")
        r = tool("probe", OUT, "--id", 10 ** 9, ok=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertRegex(r.stderr, r"particle id 1000000000 is missing from all 6 outputs, .* have ids 0 to \d+")

    def test_probe_empty_at_some_outputs_needs_allow_empty(self):
        # The sphere's centre falls 12 mm in 0.05 s: a 1 mm ball around its first position empties.
        with h5py.File(os.path.join(OUT, "particles_000000.h5")) as h:
            ids, x = h["particles/id"][:], h["particles/position"][:]
        top = x[np.argmax(x[:, 2])]
        at = ",".join(repr(float(c)) for c in top)
        r = tool("probe", OUT, "--at", at, "--radius", 0.001, ok=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertRegex(r.stderr, r"in \d of 6 outputs, e\.g\. particles_0000\d\d\.h5.*--allow-empty")
        path = os.path.join(WORK, "probe-empty.csv")
        r = tool("probe", OUT, "--at", at, "--radius", 0.001, "--allow-empty", "--csv", path)
        self.assertIn("warning", r.stderr)
        series = rows(path)
        self.assertEqual(int(series[0]["particles"]), 1)
        self.assertTrue(np.isnan(float(series[-1]["velocity_0"])))

    def test_tool_runs_as_a_command(self):  # its shebang finds python3 on PATH
        r = subprocess.run([TOOL, "info", OUT], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_missing_modules_are_named_with_their_debian_packages(self):
        # python3 -S: no site-packages, so neither numpy nor h5py can be imported
        r = subprocess.run([sys.executable, "-S", TOOL, "info", OUT], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot import numpy and h5py", r.stderr)
        self.assertIn("apt-get install python3-numpy python3-h5py", r.stderr)
        self.assertNotIn("Traceback", r.stderr)

    def test_picture_without_paraview_says_to_use_pvbatch(self):
        r = subprocess.run([sys.executable, "-S", PICTURE, OUT], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("has no ParaView: run this script with ParaView's Python, `pvbatch ", r.stderr)
        self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)

    @unittest.skipUnless(shutil.which("pvbatch"), "ParaView (pvbatch) is not installed")
    def test_picture_without_display_says_how_to_get_one(self):
        env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
        for display in (None, ":97"):  # no DISPLAY, and one with no X server behind it
            if display:
                env["DISPLAY"] = display
            r = subprocess.run(["pvbatch", PICTURE, OUT, "-o", os.path.join(WORK, "p.png")],
                               capture_output=True, text=True, env=env, timeout=120)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("nendo_picture: error: no display to render on", r.stderr)
            self.assertIn('xvfb-run -a -s "-screen 0 1280x1024x24 -noreset" pvbatch ', r.stderr)
            self.assertNotIn("Stack trace", r.stderr)

    def assert_png(self, path):
        with open(path, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        self.assertGreater(os.path.getsize(path), 5000)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
