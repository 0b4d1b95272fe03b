#!/usr/bin/python3
"""The tetrahedral mesh of a mesh method (fem) in the output files: /mesh/tets as rows of /particles,
the per-tet "level", the same tets on 1 and 3 ranks, and mesh.xdmf as ParaView opens it.

A soft cantilever (0.8 x 0.1 x 0.1 m, level 0: 16 x 2 x 2 cubes of 6 Kuhn tets) to t = 0.1: it
starts at level 0 and refines where it bends, so the last output mixes levels 0 to 2. Its blocks
(0.66 m) split it between ranks, so on 3 ranks tets have corners on other ranks (halo copies), and
at t = 0 a rank owns no particle.

Usage: mesh_output_test.py NENDO_BINARY WORK_DIR
"""
import os
import subprocess
import sys
import unittest
import xml.etree.ElementTree as ET

import h5py
import numpy as np

NENDO, WORK = sys.argv[1], sys.argv[2]
HERE = os.path.dirname(os.path.abspath(__file__))
# grid.dx: 2.5 times the longest level-0 edge (the cube diagonal), as the fem method needs.
SCENE = """nendo: 1
method: fem
dimension: 3
gravity: [0, 0, -9.81]
time: {end: 0.1, dt: 2.0e-4}
grid: {dx: 0.22, block: 3}
materials:
  beam: {model: stvk, E: 3.0e5, nu: 0.3, density: 1000}
bodies:
  - {shape: box, material: beam, min: [0, 0, 0], max: [0.8, 0.1, 0.1], fixed_min: [-1, -1, -1], fixed_max: [0, 1, 1]}
fem: {spacing: 0.05, max_level: 2, damping: 2}
output: {every: 0.05, fields: [velocity, mass, status, level, rank]}
"""
BEAM_VOLUME = 0.8 * 0.1 * 0.1
LEVEL0_TET_VOLUME = 0.05 ** 3 / 6  # a Kuhn tet of a level-0 cube
MAX_LEVEL = 2
OUTPUTS = 3  # t = 0, 0.05, 0.1


def run(ranks):
    out = os.path.join(WORK, f"np{ranks}")
    subprocess.run(["rm", "-rf", out], check=True)
    scene = os.path.join(WORK, "beam.yaml")
    with open(scene, "w") as f:
        f.write(SCENE)
    r = subprocess.run(["mpirun", "-np", str(ranks), NENDO, "run", scene, "--output", out], capture_output=True,
                       text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"nendo on {ranks} ranks failed:\n{r.stdout}{r.stderr}")
    return out


def read_outputs(out):
    """Per output: node ids, positions and levels, the tets (rows) and the tets' levels."""
    outputs = []
    for index in range(OUTPUTS):
        with h5py.File(os.path.join(out, f"particles_{index:06d}.h5"), "r") as h:
            mesh = h["mesh"]
            outputs.append({
                "count": int(h["particles"].attrs["count"]),
                "ids": h["particles/id"][:],
                "x": h["particles/position"][:],
                "node_level": h["particles/level"][:],
                "rank": h["particles/rank"][:],
                "tet_count": int(mesh.attrs["count"]),
                "tets": mesh["tets"][:],
                "tets_dtype": mesh["tets"].dtype,
                "fields": sorted(mesh["fields"].keys()),
                "level": mesh["fields/level"][:] if "level" in mesh["fields"] else None,
            })
    return outputs


def signed_volumes(x, tets):
    a, b, c, d = (x[tets[:, k]] for k in range(4))
    return np.einsum("ij,ij->i", np.cross(b - a, c - a), d - a) / 6


def tets_by_ids(output):
    """The tets as tuples of corner ids in corner order, with their levels, independent of rank order."""
    ids = output["ids"][output["tets"]]
    levels = output["level"] if output["level"] is not None else np.zeros(len(ids), dtype=np.int32)
    return sorted(zip(map(tuple, ids.tolist()), levels.tolist()))


class MeshOutput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.out = {ranks: run(ranks) for ranks in (1, 3)}
        cls.outputs = {ranks: read_outputs(out) for ranks, out in cls.out.items()}

    def test_tets_are_rows_of_the_particles(self):
        for ranks, outputs in self.outputs.items():
            for index, o in enumerate(outputs):
                where = f"{ranks} ranks, output {index}"
                self.assertEqual(o["tets_dtype"], np.int64, where)
                self.assertEqual(o["tets"].shape, (o["tet_count"], 4), where)
                self.assertGreaterEqual(o["tets"].min(), 0, where)
                self.assertLess(o["tets"].max(), o["count"], where)
                corners = np.sort(o["tets"], axis=1)
                self.assertTrue(np.all(corners[:, 1:] != corners[:, :-1]), f"{where}: 4 distinct corners")

    def test_tets_fill_the_beam(self):
        for ranks, outputs in self.outputs.items():
            for index, o in enumerate(outputs):
                where = f"{ranks} ranks, output {index}"
                volumes = np.abs(signed_volumes(o["x"], o["tets"]))
                self.assertGreater(volumes.min(), 0.5 * LEVEL0_TET_VOLUME / 8 ** 3, where)
                # At rest exactly; later the bending changes the volume by far less than 1e-3.
                self.assertAlmostEqual(volumes.sum(), BEAM_VOLUME, delta=(1e-12 if index == 0 else 1e-3) * BEAM_VOLUME,
                                       msg=where)
        first = self.outputs[1][0]
        self.assertEqual(first["tet_count"], 16 * 2 * 2 * 6, "level 0 at the start")
        self.assertGreater(self.outputs[1][-1]["tet_count"], first["tet_count"], "the bent beam refined")

    def test_tets_across_ranks(self):
        outputs = self.outputs[3]
        self.assertEqual(np.bincount(outputs[0]["rank"], minlength=3).min(), 0, "a rank without particles")
        for index, o in enumerate(outputs):
            ranks = o["rank"][o["tets"]]
            self.assertGreater((ranks.min(axis=1) != ranks.max(axis=1)).sum(), 0, f"output {index}")

    def test_same_tets_on_1_and_3_ranks(self):
        for index in range(OUTPUTS):
            one, three = (tets_by_ids(self.outputs[ranks][index]) for ranks in (1, 3))
            self.assertEqual(len(one), len(set(one)), "each tet listed once")
            self.assertEqual(one, three, f"output {index}")

    def test_level_of_each_tet(self):
        for ranks, outputs in self.outputs.items():
            for index, o in enumerate(outputs):
                where = f"{ranks} ranks, output {index}"
                self.assertEqual(o["fields"], ["level"], where)
                level = o["level"]
                self.assertEqual(level.dtype, np.int32, where)
                self.assertEqual(level.shape, (o["tet_count"],), where)
                # Red refinement: a level-l tet has a corner made on level l and none finer.
                np.testing.assert_array_equal(level, o["node_level"][o["tets"]].max(axis=1), where)
                # ... and an eighth of its parent's volume: 8^level |V| is a level-0 Kuhn tet's volume
                # (exactly at rest; later within the few per cent the bending strains it by, far from 8 or 1/8).
                scaled = 8.0 ** level * np.abs(signed_volumes(o["x"], o["tets"])) / LEVEL0_TET_VOLUME
                np.testing.assert_allclose(scaled, 1, rtol=1e-9 if index == 0 else 0.15, err_msg=where)
        self.assertEqual(self.outputs[3][-1]["level"].max(), MAX_LEVEL, "the last output reaches the finest level")

    def test_mesh_xdmf(self):
        out = self.out[3]
        root = ET.parse(os.path.join(out, "mesh.xdmf")).getroot()
        grids = root.findall(".//Grid[@GridType='Uniform']")
        self.assertEqual(len(grids), OUTPUTS)
        last = self.outputs[3][-1]
        topology = grids[-1].find("Topology")
        self.assertEqual(topology.get("TopologyType"), "Tetrahedron")
        self.assertEqual(topology.get("NumberOfElements"), str(last["tet_count"]))
        self.assertEqual(topology.find("DataItem").text, f"particles_{OUTPUTS - 1:06d}.h5:/mesh/tets")
        level = grids[-1].find("Attribute[@Name='level'][@Center='Cell']")
        self.assertEqual(level.find("DataItem").text, f"particles_{OUTPUTS - 1:06d}.h5:/mesh/fields/level")
        # particles.xdmf is unchanged: a Polyvertex grid per output
        particles = ET.parse(os.path.join(out, "particles.xdmf")).getroot()
        self.assertEqual([g.find("Topology").get("TopologyType") for g in particles.findall(".//Grid[@GridType='Uniform']")],
                         ["Polyvertex"] * OUTPUTS)

    def test_paraview_opens_the_mesh(self):
        r = subprocess.run(["pvpython", "--force-offscreen-rendering", os.path.join(HERE, "paraview_open.py"),
                            os.path.join(self.out[3], "mesh.xdmf")],
                           capture_output=True, text=True, timeout=300, env={"PATH": "/usr/bin:/bin", "HOME": WORK})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        seen = [line.split() for line in r.stdout.splitlines()]
        facts = {line[0]: line[1:] for line in seen if line and line[0] not in ("array", "cellarray")}
        points = {line[1]: int(line[2]) for line in seen if line and line[0] == "array"}
        cells = {line[1]: line[2:] for line in seen if line and line[0] == "cellarray"}
        last = self.outputs[3][-1]
        self.assertEqual(facts["reader"], ["Xdmf3ReaderS"])
        self.assertEqual(facts["timesteps"], [str(OUTPUTS)])
        self.assertEqual(facts["points"], [str(last["count"])])
        self.assertEqual(facts["cells"], [str(last["tet_count"])])
        self.assertEqual(points, {"id": 1, "level": 1, "mass": 1, "rank": 1, "status": 1, "velocity": 3})
        self.assertEqual(cells["level"][0], "1")
        self.assertEqual([float(v) for v in cells["level"][1:]], [float(last["level"].min()), float(last["level"].max())])

    def test_catalyst_mesh_channel(self):
        """jobs/catalyst/mesh.py writes the same tets, coloured by level, from the "mesh" channel."""
        out = os.path.join(WORK, "catalyst")
        subprocess.run(["rm", "-rf", out], check=True)
        scene = os.path.join(WORK, "beam.yaml")
        r = subprocess.run(["mpirun", "-np", "2", NENDO, "run", scene, "--output", out, "--catalyst",
                            os.path.join(HERE, "..", "..", "jobs", "catalyst", "mesh.py"), "--set",
                            "catalyst.every_steps=250"], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        check = ("from paraview.simple import *\n"
                 "d = servermanager.Fetch(OpenDataFile('%s'))\n"
                 "print(d.GetNumberOfCells(), *d.GetCellData().GetArray('level').GetRange())\n"
                 % os.path.join(out, "extracts", "mesh_000500.pvtu"))
        r = subprocess.run(["pvpython", "--force-offscreen-rendering", "-c", check], capture_output=True, text=True,
                           timeout=300, env={"PATH": "/usr/bin:/bin", "HOME": WORK})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        cells, low, high = r.stdout.split()[-3:]
        last = read_outputs(out)[-1]
        self.assertEqual(int(cells), last["tet_count"])
        self.assertEqual((float(low), float(high)), (float(last["level"].min()), float(last["level"].max())))


if __name__ == "__main__":
    os.makedirs(WORK, exist_ok=True)
    unittest.main(argv=[sys.argv[0], "-v"])
