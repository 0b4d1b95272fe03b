#!/usr/bin/python3
"""End-to-end test of ParaView Catalyst in situ: the files the scripts of jobs/catalyst/ write while
nendo runs are checked against the HDF5 outputs and diagnostics.csv of the same steps.

Each scene of tests/app/catalyst/ runs once on RANKS ranks under a virtual display with the three
scripts (extracts.py, render.py, globals.py), Catalyst and the HDF5 output both every EVERY steps:
  - the .pvtp/.pvtu extracts, the PNG images and the globals.csv rows exist for exactly the steps
    Catalyst was called at (0, EVERY, 2 EVERY, ... up to the last step);
  - the particle pieces hold, rank by rank, the particles the HDF5 "rank" field gives that rank
    (ParaView 5.11's writers write no piece for a rank without points, so N ranks make at most N
    pieces), and every HDF5 field equals the extract's bit for bit (both are copies of the same
    doubles; VTK pads 2D vectors with z = 0 and 2x2 tensors to 3x3 with zeros); "pressure" and
    "von_mises" equal the invariants of the HDF5 stress (to a few roundings, see the test);
  - the block cells count every particle once and enclose the particles of their rank;
  - the images are not blank (render.py renders collectively: a rank that takes another branch
    than the others hangs the run, which fails the test after a time-out);
  - globals.csv agrees with the HDF5 files (count, time, bounding box) and with diagnostics.csv
    (mass, kinetic energy, momentum: the same sums in another order, so to 1e-12 relative).
snow-2d has empty ranks on 4 ranks (the test asserts that it does).

A script that is not a Catalyst script, or not Python, stops the run before any work with exit 2
and a message naming the script; a --catalyst file that does not exist is a command-line error.

Usage: catalyst_test.py NENDO_BINARY WORK_DIR RANKS
"""
import csv
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import unittest
import xml.etree.ElementTree as ET

import h5py
import numpy as np
from matplotlib import image as mpimage
from paraview.vtk.util.numpy_support import vtk_to_numpy
from paraview.vtk.vtkIOXML import (vtkXMLPolyDataReader, vtkXMLPPolyDataReader,
                                   vtkXMLPUnstructuredGridReader, vtkXMLUnstructuredGridReader)

NENDO, WORK, RANKS = sys.argv[1], sys.argv[2], int(sys.argv[3])
HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "..", "..", "jobs", "catalyst")
SCRIPT_NAMES = ("extracts.py", "render.py", "globals.py")
VTK_QUAD, VTK_HEXAHEDRON = 9, 12


def run(command, timeout):
    """Runs a command in its own process group; on a timeout the whole group (mpirun, its ranks,
    Xvfb) is stopped so that a hung run fails the test instead of outliving it."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            time.sleep(3)
        out, err = process.communicate()
        if len(err) > 8000:  # the first error, and where the ranks were stopped
            err = err[:4000] + "\n[...]\n" + err[-4000:]
        raise AssertionError("%s\ndid not end within %d s\n%s\n%s" % (" ".join(command), timeout, out,
                                                                      err))
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def nendo(scene, output, *args, display=False, timeout=180):
    """nendo run on RANKS ranks; display: under a virtual X display (render.py needs one)."""
    command = ["mpirun", "-np", str(RANKS), NENDO, "run", scene, "--output", output, *args]
    if not display:
        return run(command, timeout)
    # xvfb-run -a takes the first display number without a lock file, from 99 on: two of them
    # starting at once may pick the same number, and the loser's ranks abort on a "bad X server
    # connection". Each test starts its search elsewhere and tries again if that still happens.
    for attempt in range(3):
        server = 200 + (os.getpid() * 7 + attempt * 101) % 5000
        done = run(["xvfb-run", "-a", "-n", str(server), "-s", "-screen 0 1280x1024x24 -noreset"] + command, timeout)
        if "bad X server connection" not in done.stderr:
            break
        shutil.rmtree(output, ignore_errors=True)
    return done


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def vtk_output(reader_class, path):
    reader = reader_class()
    reader.SetFileName(path)
    reader.Update()
    return reader.GetOutput()


def point_arrays(polydata):
    """The points ("position") and every point array of a vtkPolyData, copied to numpy."""
    n = polydata.GetNumberOfPoints()
    arrays = {"position": vtk_to_numpy(polydata.GetPoints().GetData()).copy() if n else np.zeros((0, 3))}
    data = polydata.GetPointData()
    for i in range(data.GetNumberOfArrays()):
        arrays[data.GetArrayName(i)] = vtk_to_numpy(data.GetArray(i)).copy()
    return arrays


def cell_arrays(grid):
    data = grid.GetCellData()
    return {data.GetArrayName(i): vtk_to_numpy(data.GetArray(i)).copy() for i in range(data.GetNumberOfArrays())}


def hdf5_particles(path):
    """Every /particles dataset (rows sorted by id) and the root attributes of an output file."""
    with h5py.File(path, "r") as f:
        group = f["particles"]
        order = np.argsort(group["id"][:], kind="stable")
        return {name: group[name][:][order] for name in group}, dict(f.attrs)


def by_id(arrays):
    order = np.argsort(arrays["id"], kind="stable")
    return {name: value[order] for name, value in arrays.items()}


def pieces(meta_file):
    """The piece files a .pvtp/.pvtu lists, by the rank in their names (…_RANK.vtp)."""
    root = ET.parse(meta_file).getroot()
    sources = [piece.get("Source") for piece in root.iter("Piece")]
    folder = os.path.dirname(meta_file)
    found = {}
    for source in sources:
        match = re.search(r"_(\d+)\.vt[pu]$", source)
        assert match, "%s: piece %s is not named by rank" % (meta_file, source)
        found[int(match.group(1))] = os.path.join(folder, source)
    assert len(found) == len(sources), "%s: a rank has two pieces" % meta_file
    return found


def vtk_layout(value, dimension):
    """An HDF5 field as VTK shows it: 2D vectors padded to 3 components, 2x2 tensors to 3x3."""
    value = value.reshape(len(value), -1)
    if dimension == 2 and value.shape[1] == 2:
        return np.concatenate([value, np.zeros((len(value), 1), value.dtype)], axis=1)
    if dimension == 2 and value.shape[1] == 4:
        padded = np.zeros((len(value), 3, 3), value.dtype)
        padded[:, :2, :2] = value.reshape(-1, 2, 2)
        return padded.reshape(-1, 9)
    return value


def first_difference(a, b):
    """Where two arrays of the same shape and type differ in their bits."""
    bits = lambda x: x.view(np.uint8).reshape(len(x), -1)
    differs = np.flatnonzero((bits(a) != bits(b)).any(axis=1))
    i = differs[0]
    return "%d rows differ; first at sorted row %d: %r vs %r" % (len(differs), i, a[i].tolist(), b[i].tolist())


def invariants(stress, dimension):
    """-tr(sigma)/d and sqrt(3/2 s:s), in the order of operations of io/catalyst/VtkPieces.cpp."""
    s = stress.reshape(-1, dimension, dimension)
    trace = np.zeros(len(s))
    for a in range(dimension):
        trace += s[:, a, a]
    mean = trace / dimension
    ss = np.zeros(len(s))
    for a in range(dimension):
        for b in range(dimension):
            deviator = s[:, a, b] - (mean if a == b else 0.0)
            ss += deviator * deviator
    return -mean, np.sqrt(1.5 * ss)


def close(a, b, relative=1e-12, absolute=1e-15):
    return abs(a - b) <= max(relative * max(abs(a), abs(b)), absolute)


class SceneRun:
    """The checks of one scene's run; a subclass per scene names it (NAME) and its cadence (EVERY)."""
    NAME = None
    EVERY = 10
    EMPTY_RANKS_ON = ()  # rank counts on which the scene leaves a rank without particles

    @classmethod
    def setUpClass(cls):
        cls.root = os.path.join(WORK, cls.NAME)
        shutil.rmtree(cls.root, ignore_errors=True)
        os.makedirs(cls.root)
        cls.out = os.path.join(cls.root, "out")
        scripts = [arg for name in SCRIPT_NAMES for arg in ("--catalyst", os.path.join(SCRIPTS, name))]
        start = time.monotonic()
        cls.done = nendo(os.path.join(HERE, "catalyst", cls.NAME + ".yaml"), cls.out,
                         "--set", "catalyst.every_steps=%d" % cls.EVERY,
                         "--set", "output.every_steps=%d" % cls.EVERY, *scripts, display=True)
        cls.seconds = time.monotonic() - start
        for name, text in (("stdout.txt", cls.done.stdout), ("stderr.txt", cls.done.stderr)):
            with open(os.path.join(cls.root, name), "w") as f:
                f.write(text)
        if cls.done.returncode != 0:
            raise AssertionError("%s\nexit %d\n%s\n%s" % (" ".join(cls.done.args), cls.done.returncode,
                                                          cls.done.stdout, cls.done.stderr))
        print("\n%s on %d ranks: %.1f s" % (cls.NAME, RANKS, cls.seconds), file=sys.stderr)
        cls.diagnostics = {int(row["step"]): row for row in read_csv(os.path.join(cls.out, "diagnostics.csv"))}
        cls.outputs = {}  # step -> HDF5 output file
        for path in sorted(glob.glob(os.path.join(cls.out, "particles_*.h5"))):
            with h5py.File(path, "r") as f:
                cls.outputs[int(f.attrs["step"])] = path
        last = max(cls.diagnostics)
        cls.steps = sorted(set(range(0, last + 1, cls.EVERY)) | {last})  # the steps Catalyst was called at, and the last
        assert len(cls.steps) >= 3, "the scene is too short"
        cls.cache = {}

    def output(self, step):
        """The HDF5 particles (sorted by id) and attributes of the output written at this step."""
        if step not in self.cache:
            self.assertIn(step, self.outputs, "no HDF5 output at step %d" % step)
            self.cache[step] = hdf5_particles(self.outputs[step])
        return self.cache[step]

    def extract(self, kind, step):
        suffix = "pvtp" if kind == "particles" else "pvtu"
        return os.path.join(self.out, "extracts", "%s_%06d.%s" % (kind, step, suffix))

    def particle_extract(self, step):
        """Every point array of the step's .pvtp (all pieces), rows sorted by id."""
        return by_id(point_arrays(vtk_output(vtkXMLPPolyDataReader, self.extract("particles", step))))

    def owners(self, step):
        """How many particles each rank owns at this step, by the HDF5 "rank" field."""
        particles, _ = self.output(step)
        return np.bincount(particles["rank"], minlength=RANKS)

    def test_files_exist_for_exactly_the_called_steps(self):
        self.assertIn("Catalyst ran the scripts %d times" % len(self.steps), self.done.stdout)
        def names(folder, pattern):
            return sorted(map(os.path.basename, glob.glob(os.path.join(self.out, folder, pattern))))
        self.assertEqual(names("extracts", "particles_*.pvtp"), ["particles_%06d.pvtp" % s for s in self.steps])
        self.assertEqual(names("extracts", "blocks_*.pvtu"), ["blocks_%06d.pvtu" % s for s in self.steps])
        self.assertEqual(names("images", "*.png"), ["view_%06d.png" % s for s in self.steps])
        for step in self.steps:
            self.output(step)  # the HDF5 outputs land on the same steps
        globals_steps = [int(row["step"]) for row in read_csv(os.path.join(self.out, "globals.csv"))]
        self.assertEqual(globals_steps, self.steps, "globals.csv: one row per co-processing call")

    def test_the_scene_leaves_a_rank_empty_where_meant_to(self):
        if RANKS not in self.EMPTY_RANKS_ON:
            self.skipTest("no empty rank expected on %d ranks" % RANKS)
        self.assertIn(0, list(self.owners(0)), "the scene was meant to leave a rank without particles")

    def test_particle_pieces_hold_the_particles_of_their_rank(self):
        for step in self.steps:
            with self.subTest(step=step):
                particles, _ = self.output(step)
                listed = pieces(self.extract("particles", step))
                folder = os.path.join(self.out, "extracts", "particles_%06d" % step)
                self.assertEqual(sorted(listed.values()), sorted(glob.glob(os.path.join(folder, "*.vtp"))),
                                 "the .pvtp lists exactly the piece files written")
                self.assertTrue(set(listed) <= set(range(RANKS)), "pieces of ranks %s" % sorted(listed))
                owned = self.owners(step)
                counts = []
                for rank in range(RANKS):
                    # ParaView 5.11's writers leave out the piece of a rank without points (were
                    # it written, it would have to be empty).
                    piece = None
                    if rank in listed:
                        piece = point_arrays(vtk_output(vtkXMLPolyDataReader, listed[rank]))
                    n = len(piece["position"]) if piece else 0
                    counts.append(n)
                    self.assertEqual(n, owned[rank], "points in rank %d's piece" % rank)
                    if n:
                        self.assertTrue((piece["rank"] == rank).all(), "rank %d's piece" % rank)
                        mine = particles["id"][particles["rank"] == rank]
                        self.assertTrue(np.array_equal(np.sort(piece["id"]), np.sort(mine)),
                                        "rank %d's piece has other particles than the HDF5 file gives it" % rank)
                self.assertEqual(sum(counts), len(particles["id"]))
                whole = vtk_output(vtkXMLPPolyDataReader, self.extract("particles", step))
                self.assertEqual(whole.GetNumberOfPoints(), len(particles["id"]), "the .pvtp as a whole")
                self.assertEqual(whole.GetNumberOfVerts(), len(particles["id"]), "one vertex cell per particle")

    def test_particle_fields_equal_the_hdf5_fields(self):
        for step in self.steps:
            with self.subTest(step=step):
                particles, attributes = self.output(step)
                dimension = int(attributes["dimension"])
                extract = self.particle_extract(step)
                self.assertTrue(np.array_equal(extract["id"], particles["id"]), "other particle ids")
                self.assertEqual(len(np.unique(extract["id"])), len(extract["id"]), "a particle is in two pieces")
                self.assertTrue(set(particles) <= set(extract), "fields missing from the extract: %s"
                                % sorted(set(particles) - set(extract)))
                for name, value in particles.items():
                    expected = vtk_layout(value, dimension)
                    got = extract[name].reshape(len(extract[name]), -1)
                    self.assertEqual(got.shape, expected.shape, name)
                    self.assertEqual(got.dtype, expected.dtype, name)
                    expected, got = np.ascontiguousarray(expected), np.ascontiguousarray(got)
                    if expected.tobytes() != got.tobytes():
                        self.fail("step %d, %s: extract != HDF5 (%s)"
                                  % (step, name, first_difference(got, expected)))

    def test_pressure_and_von_mises_are_the_invariants_of_the_hdf5_stress(self):
        stressed = [step for step in self.steps if np.abs(self.output(step)[0]["stress"]).max() > 0]
        self.assertGreater(len(stressed), 1, "the stress is zero: the comparison would say nothing")
        for step in self.steps:
            with self.subTest(step=step):
                particles, attributes = self.output(step)
                extract = self.particle_extract(step)
                pressure, von_mises = invariants(particles["stress"], int(attributes["dimension"]))
                # The same operations on the same doubles, so far bit for bit; but the adaptor is
                # built with -march=native and may fuse a multiply-add that numpy rounds twice,
                # so a few roundings of the particle's largest stress component are allowed.
                scale = np.abs(particles["stress"]).max(axis=1)
                for name, expected in (("pressure", pressure), ("von_mises", von_mises)):
                    error = np.abs(extract[name] - expected)
                    worst = int(np.argmax(error - 4e-15 * scale))
                    self.assertTrue((error <= 4e-15 * scale).all(), "step %d, %s: %r vs %r from the HDF5 stress"
                                    % (step, name, extract[name][worst], expected[worst]))

    def test_blocks_count_every_particle_once_and_enclose_their_particles(self):
        for step in self.steps:
            with self.subTest(step=step):
                particles, attributes = self.output(step)
                dimension = int(attributes["dimension"])
                grid = vtk_output(vtkXMLPUnstructuredGridReader, self.extract("blocks", step))
                cells = cell_arrays(grid)
                self.assertEqual(int(cells["particles"].sum()), len(particles["id"]))
                self.assertTrue(((cells["rank"] >= 0) & (cells["rank"] < RANKS)).all(), "rank out of range")
                types = {grid.GetCellType(i) for i in range(grid.GetNumberOfCells())}
                self.assertEqual(types, {VTK_HEXAHEDRON if dimension == 3 else VTK_QUAD})
                owned = self.owners(step)
                for rank in range(RANKS):
                    self.assertEqual(int(cells["particles"][cells["rank"] == rank].sum()), owned[rank],
                                     "particles in rank %d's blocks" % rank)
                for rank, path in pieces(self.extract("blocks", step)).items():
                    piece = vtk_output(vtkXMLUnstructuredGridReader, path)
                    self.assertTrue((cell_arrays(piece)["rank"] == rank).all(), path)
                    corners = vtk_to_numpy(piece.GetPoints().GetData()).reshape(piece.GetNumberOfCells(), -1, 3)
                    low, high = corners.min(axis=1)[:, :dimension], corners.max(axis=1)[:, :dimension]
                    x = particles["position"][particles["rank"] == rank]
                    inside = ((x[:, None, :] >= low[None]) & (x[:, None, :] <= high[None])).all(axis=2)
                    self.assertTrue(inside.any(axis=1).all(), "step %d: %d particles of rank %d outside its blocks"
                                    % (step, int((~inside.any(axis=1)).sum()), rank))

    def test_images_are_not_blank(self):
        for step in self.steps:
            with self.subTest(step=step):
                pixels = mpimage.imread(os.path.join(self.out, "images", "view_%06d.png" % step))
                self.assertEqual(pixels.ndim, 3)
                # The middle of the picture, away from the colour bar and the axes: the material
                # and the blocks (a white picture gives 0; the 2D scene about 4e-3, the 3D 4e-2).
                gray = pixels[:, :, :3].mean(axis=2)
                height, width = gray.shape
                middle = gray[height // 5:height * 4 // 5, width // 5:width * 4 // 5]
                self.assertGreater(middle.var(), 1e-3, "view_%06d.png is blank" % step)

    def test_globals_match_the_hdf5_outputs_and_the_diagnostics(self):
        rows = read_csv(os.path.join(self.out, "globals.csv"))
        self.assertEqual([int(row["step"]) for row in rows], self.steps)
        for row in rows:
            step = int(row["step"])
            with self.subTest(step=step):
                particles, attributes = self.output(step)
                diagnostics = self.diagnostics[step]
                self.assertEqual(int(row["particles"]), len(particles["id"]))
                self.assertEqual(int(row["particles"]), int(diagnostics["particles"]))
                self.assertEqual(float(row["time"]), float(attributes["time"]), "time of step %d" % step)
                self.assertEqual(float(row["time"]), float(diagnostics["time"]), "time of step %d" % step)
                for column in ("mass", "kinetic_energy", "momentum_x", "momentum_y", "momentum_z"):
                    a, b = float(row[column]), float(diagnostics[column])
                    self.assertTrue(close(a, b), "step %d, %s: globals.csv %r, diagnostics.csv %r"
                                    % (step, column, a, b))
                dimension = int(attributes["dimension"])
                x = vtk_layout(particles["position"], dimension)
                for axis, c in enumerate("xyz"):  # a minimum is exact whatever the order
                    self.assertEqual(float(row["min_" + c]), x[:, axis].min(), "min_" + c)
                    self.assertEqual(float(row["max_" + c]), x[:, axis].max(), "max_" + c)
                    center = (particles["mass"] * x[:, axis]).sum() / particles["mass"].sum()
                    self.assertTrue(close(float(row["center_" + c]), center), "center_" + c)
                speed = np.sqrt((vtk_layout(particles["velocity"], dimension) ** 2).sum(axis=1).max())
                self.assertTrue(close(float(row["max_speed"]), speed), "max_speed")


class Jelly3D(SceneRun, unittest.TestCase):
    NAME = "jelly-3d"
    EVERY = 10


class Snow2D(SceneRun, unittest.TestCase):
    NAME = "snow-2d"
    EVERY = 10
    EMPTY_RANKS_ON = (4,)


class BadScripts(unittest.TestCase):
    """Scripts that cannot run stop nendo before any work, with a message naming them."""
    scene = os.path.join(HERE, "catalyst", "jelly-3d.yaml")

    def start(self, name, text):
        folder = os.path.join(WORK, "bad", name)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        script = os.path.join(folder, name + ".py")
        if text is not None:
            with open(script, "w") as f:
                f.write(text)
        good = os.path.join(SCRIPTS, "globals.py")
        out = os.path.join(folder, "out")
        return script, out, nendo(self.scene, out, "--catalyst", good, "--catalyst", script, timeout=120)

    def assert_stopped_before_any_work(self, done, script, message):
        report = "exit %d\n%s\n%s" % (done.returncode, done.stdout, done.stderr)
        self.assertEqual(done.returncode, 2, report)
        errors = [line for line in done.stderr.splitlines() if line.startswith("nendo: error")]
        self.assertEqual(errors, ["nendo: error: Catalyst script %s: %s" % (script, message)], report)
        self.assertNotIn("MPI_ABORT", done.stderr, report)
        self.assertNotIn("particles on", done.stdout, "the run started: " + report)

    def test_a_python_file_that_is_not_a_catalyst_script(self):
        script, out, done = self.start("plain", "print('not a Catalyst script')\n")
        self.assert_stopped_before_any_work(
            done, script, "not a ParaView Catalyst script (no '# script-version: 2' comment before its first line of code)")
        self.assertEqual(glob.glob(os.path.join(out, "*.h5")) + glob.glob(os.path.join(out, "*.csv")), [])

    def test_a_script_with_a_syntax_error(self):
        script, out, done = self.start("syntax", "# script-version: 2\ndef broken(:\n    pass\n")
        self.assert_stopped_before_any_work(done, script, "not valid Python (the error is above)")
        self.assertIn("SyntaxError", done.stderr)
        self.assertEqual(glob.glob(os.path.join(out, "*.h5")) + glob.glob(os.path.join(out, "*.csv")), [])

    def test_a_script_that_raises_stops_the_run_on_every_rank(self):
        # Valid Python and a Catalyst script, but catalyst_execute raises at its first call (step 0).
        script, out, done = self.start("raises", "# script-version: 2\n"
                                       "from paraview.simple import *\n"
                                       "particles = TrivialProducer(registrationName='particles')\n"
                                       "def catalyst_execute(info):\n"
                                       "    raise RuntimeError('broken on purpose')\n")
        report = "exit %d\n%s\n%s" % (done.returncode, done.stdout, done.stderr)
        self.assertEqual(done.returncode, 1, report)
        self.assertIn("broken on purpose", done.stderr, report)
        # Once, from rank 0. Counted in the whole stream, not per line: mpirun interleaves the
        # ranks' stderr, so another rank's traceback can end on the same line as rank 0's message.
        self.assertEqual(done.stderr.count("nendo: error"), 1, report)
        self.assertIn("nendo: error: a Catalyst script failed at step 0 (its Python error is above)\n", done.stderr,
                      report)
        self.assertNotIn("MPI_ABORT", done.stderr, report)
        self.assertNotIn("steps to t =", done.stdout, "the run went on: " + report)

    def test_a_missing_script_is_a_command_line_error(self):
        script, out, done = self.start("missing", None)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("--catalyst: File does not exist: " + script, done.stderr)
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
