#!/usr/bin/python3
"""The particle files of a real run say what they hold, in the precision and compression asked for.

A ballistic scene with two materials runs four times under mpirun: as is (double, uncompressed),
with output.precision single, with single precision and deflate, and with deflate alone. Checked with h5py:
the method, each field's unit and the material names; float32 values equal to the double run's
values rounded to float (ballistic runs give the same bits on any rank count); deflated values equal
bit for bit; compressed files smaller; XDMF Precision 4; ParaView opens both compressed series.

Usage: output_format_test.py NENDO_BINARY WORK_DIR RANKS
"""
import os
import shutil
import subprocess
import sys
import unittest
import xml.etree.ElementTree as ET

import h5py
import numpy as np

NENDO, WORK, RANKS = sys.argv[1], sys.argv[2], int(sys.argv[3])
HERE = os.path.dirname(os.path.abspath(__file__))

SCENE = """nendo: 1
method: ballistic
dimension: 3
gravity: [0, -9.81, 0]
time: {end: 0.02, dt: 1.0e-3}
grid: {dx: 0.05}
materials:
  rubber: {model: neo_hookean, E: 1.0e6, nu: 0.4, density: 1100}
  jelly: {model: neo_hookean, E: 1.0e5, nu: 0.3, density: 1000}
bodies:
  - {shape: box, min: [0, 0, 0], max: [0.4, 0.2, 0.3], material: jelly, velocity: [3, 5, -2]}
  - {shape: sphere, center: [0.6, 0.6, 0.6], radius: 0.1, material: rubber}
output: {dir: out, every: 0.01, fields: [velocity, mass, volume, material]}
"""

UNITS = {"id": "1", "position": "m", "velocity": "m/s", "mass": "kg", "volume": "m^3", "material": "1"}


def run(name, *sets):
    """Runs the scene into WORK/name/out with the given --set overrides; returns the output folder."""
    folder = os.path.join(WORK, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    scene = os.path.join(folder, "scene.yaml")
    with open(scene, "w") as f:
        f.write(SCENE)
    out = os.path.join(folder, "out")
    args = [a for s in sets for a in ("--set", s)]
    r = subprocess.run(["mpirun", "-np", str(RANKS), NENDO, "run", scene, "--output", out, *args],
                       capture_output=True, text=True, timeout=300, cwd=folder)
    if r.returncode != 0:
        raise AssertionError(f"nendo failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return out


def by_id(path):
    """The datasets of /particles sorted by id, and the file's attributes per dataset."""
    with h5py.File(path, "r") as f:
        group = f["particles"]
        order = np.argsort(group["id"][:])
        data = {name: group[name][:][order] for name in group}
        attrs = {name: dict(group[name].attrs) for name in group}
        return data, attrs, dict(f.attrs)


class OutputFormat(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.double = run("double")
        cls.single = run("single", "output.precision=single")
        cls.packed = run("packed", "output.precision=single", "output.compression=deflate")
        cls.deflated = run("deflated", "output.compression=deflate", "output.compression_level=4")
        cls.files = sorted(f for f in os.listdir(cls.double) if f.startswith("particles_") and f.endswith(".h5"))

    def test_files_name_the_method_the_units_and_the_materials(self):
        for out in (self.double, self.packed):
            data, attrs, root = by_id(os.path.join(out, self.files[-1]))
            self.assertEqual(root["method"], "ballistic")
            units = {name: a.get("unit") for name, a in attrs.items()}
            self.assertEqual(units, UNITS)
            names = list(attrs["material"]["names"])
            self.assertEqual(names, ["jelly", "rubber"])  # index order: alphabetical
            # The box is jelly, the sphere rubber: the names read the index right.
            in_sphere = np.sum((data["position"] - [0.6, 0.6 - 0.5 * 9.81 * 0.02 ** 2, 0.6]) ** 2, axis=1) < 0.011
            self.assertTrue(in_sphere.any() and (~in_sphere).any())
            self.assertEqual({names[m] for m in data["material"][in_sphere]}, {"rubber"})
            self.assertEqual({names[m] for m in data["material"][~in_sphere]}, {"jelly"})

    def test_single_precision_holds_the_double_values_rounded_to_float(self):
        self.assertEqual(len(self.files), 3)
        for name in self.files:
            exact, _, _ = by_id(os.path.join(self.double, name))
            for out in (self.single, self.packed):
                rounded, _, _ = by_id(os.path.join(out, name))
                for field in ("position", "velocity", "mass", "volume"):
                    self.assertEqual(rounded[field].dtype, np.float32, field)
                    self.assertEqual(rounded[field].tobytes(), exact[field].astype(np.float32).tobytes(), field)
                for field in ("id", "material"):
                    self.assertEqual(rounded[field].tobytes(), exact[field].tobytes(), field)

    def test_compression_reads_back_bit_for_bit(self):
        for name in self.files:
            exact, _, _ = by_id(os.path.join(self.double, name))
            packed, _, _ = by_id(os.path.join(self.deflated, name))
            for field, values in exact.items():
                self.assertEqual(packed[field].tobytes(), values.tobytes(), field)
        with h5py.File(os.path.join(self.deflated, self.files[-1]), "r") as f:
            self.assertEqual((f["particles/velocity"].compression, f["particles/velocity"].compression_opts), ("gzip", 4))

    def test_single_precision_and_compression_shrink_the_files(self):
        size = lambda out: sum(os.path.getsize(os.path.join(out, f)) for f in self.files)
        double, single, packed = size(self.double), size(self.single), size(self.packed)
        # id 8 + position 24 + velocity 24 + mass 8 + volume 8 + material 4 + polyvertex 8 bytes per
        # particle in double; 8 + 12 + 12 + 4 + 4 + 4 + 8 in single.
        self.assertLess(single, 0.75 * double, (single, double))
        self.assertLess(packed, 0.6 * single, (packed, single))
        self.assertLess(size(self.deflated), 0.9 * double, (size(self.deflated), double))
        with h5py.File(os.path.join(self.packed, self.files[-1]), "r") as f:
            self.assertEqual(f["particles/velocity"].compression, "gzip")
            self.assertTrue(f["particles/velocity"].shuffle)

    def test_xdmf_declares_float32(self):
        root = ET.parse(os.path.join(self.packed, "particles.xdmf")).getroot()
        for item in root.iter("DataItem"):
            dataset = item.text.strip().split(":")[1]
            if dataset.rsplit("/", 1)[1] in ("position", "velocity", "mass", "volume"):
                self.assertEqual((item.get("NumberType"), item.get("Precision")), ("Float", "4"), dataset)

    def test_paraview_opens_the_compressed_series(self):
        if RANKS != 2:
            self.skipTest("ParaView is checked on 2 ranks only")
        self.check_paraview_opens(self.packed, "float")
        self.check_paraview_opens(self.deflated, "double")

    def check_paraview_opens(self, out, precision):
        r = subprocess.run(["pvpython", "--force-offscreen-rendering", os.path.join(HERE, "paraview_open.py"),
                            os.path.join(out, "particles.xdmf")],
                           capture_output=True, text=True, timeout=300, env={"PATH": "/usr/bin:/bin", "HOME": WORK})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        seen = [line.split() for line in r.stdout.splitlines()]
        facts = {line[0]: line[1:] for line in seen if line and line[0] != "array"}
        arrays = {line[1]: line[2:] for line in seen if line and line[0] == "array"}
        data, _, _ = by_id(os.path.join(out, self.files[-1]))
        self.assertEqual(facts["timesteps"], ["3"])
        self.assertEqual(facts["points"], [str(len(data["id"]))])
        self.assertEqual(arrays["velocity"][:2], ["3", precision])
        low, high = float(arrays["velocity"][2]), float(arrays["velocity"][3])
        self.assertEqual((low, high), (float(data["velocity"][:, 0].min()), float(data["velocity"][:, 0].max())))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
