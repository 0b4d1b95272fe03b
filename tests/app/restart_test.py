#!/usr/bin/python3
"""The generic restart test: a run stopped and restarted, on the same or another rank count, ends
bitwise identical to the uninterrupted run. Every method joins it with scenes in tests/app/restart/
(CMakeLists.txt registers one test per scene).

For the scene given, the reference is an uninterrupted run on 1 rank. Each case a>b runs the
scene on a ranks up to step k (its final checkpoint), then resumes with --restart latest on b
ranks to the end. The final checkpoint (every particle field, sorted by id), every output file and
diagnostics.csv (energies and momenta included) must equal the reference's bit for bit. One case stops
twice (2>3>1). One case, on one scene per method, writes its checkpoint on 16 ranks, most of which
own nothing, and resumes on 3 (16>3): the 16-rank leg's outputs are checked against the 1-rank
reference too. For one scene
(mpm-snow-2d), one resumes from an explicit FILE, a feature of the command line that does not
depend on the method. Every restart reads each rank's share of the checkpoint by its row index: no
particle moves after reading.

Usage: restart_test.py NENDO_BINARY WORK_DIR SCENE
"""
import csv
import os
import shutil
import subprocess
import sys
import unittest

import h5py
import numpy as np

NENDO, WORK, SCENE = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3])
NAME = os.path.splitext(os.path.basename(SCENE))[0]


def run(directory, ranks, *args, check=True):
    """nendo run SCENE on `ranks` ranks with its output and checkpoints under `directory`."""
    command = ["mpirun", "-np", str(ranks), NENDO, "run", SCENE, "--output", os.path.join(directory, "out"),
               "--set", "checkpoint.dir=" + os.path.join(directory, "checkpoints"),
               "--set", "checkpoint.keep=2", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if check and done.returncode != 0:
        raise AssertionError("%s\nexit %d\n%s\n%s" % (" ".join(command), done.returncode, done.stdout, done.stderr))
    return done


def particles(path):
    """Every /particles dataset of a file, rows sorted by id."""
    with h5py.File(path, "r") as f:
        group = f["particles"]
        order = np.argsort(group["id"][:], kind="stable")
        return {name: group[name][:][order] for name in group}


def checkpoints(directory):
    folder = os.path.join(directory, "checkpoints")
    return sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".h5"))


def assert_identical(test, reference, other, what):
    a, b = particles(reference), particles(other)
    test.assertEqual(sorted(a), sorted(b), what + ": different fields")
    for name in a:
        test.assertEqual(a[name].dtype, b[name].dtype, "%s: %s" % (what, name))
        test.assertTrue(a[name].tobytes() == b[name].tobytes(),
                        "%s: /particles/%s differs from the uninterrupted run" % (what, name))


def diagnostics(directory):
    """Every row of diagnostics.csv as text: the global sums are reproducible, so bit for bit."""
    with open(os.path.join(directory, "out", "diagnostics.csv")) as f:
        return list(csv.reader(f))


class Restart(unittest.TestCase):
    reference = None
    steps = 0

    @classmethod
    def setUpClass(cls):
        cls.root = os.path.join(WORK, NAME)
        shutil.rmtree(cls.root, ignore_errors=True)
        cls.reference = os.path.join(cls.root, "reference")
        run(cls.reference, 1, "--set", "checkpoint.every_steps=1000000")  # one checkpoint, at the end
        with h5py.File(checkpoints(cls.reference)[-1], "r") as f:
            cls.steps = int(f["meta"].attrs["step"])
            assert f["meta"].attrs["finished"] == 1
        assert cls.steps >= 20, "the scene is too short to stop in the middle"

    def compare_with_reference(self, directory, label):
        final = checkpoints(directory)[-1]
        self.assertEqual(os.path.basename(final), os.path.basename(checkpoints(self.reference)[-1]), label)
        assert_identical(self, checkpoints(self.reference)[-1], final, label + " final checkpoint")
        outputs = sorted(n for n in os.listdir(os.path.join(self.reference, "out")) if n.endswith(".h5"))
        self.assertEqual(outputs, sorted(n for n in os.listdir(os.path.join(directory, "out")) if n.endswith(".h5")))
        for name in outputs:
            assert_identical(self, os.path.join(self.reference, "out", name), os.path.join(directory, "out", name),
                             label + " " + name)
        self.assertEqual(diagnostics(self.reference), diagnostics(directory), label + " diagnostics.csv")

    def stop_and_resume(self, ranks, stops):
        """Runs on ranks[0] to step stops[0], resumes on ranks[1] to stops[1], ... then to the end."""
        label = ">".join(str(r) for r in ranks)
        directory = os.path.join(self.root, label.replace(">", "to"))
        run(directory, ranks[0], "--steps", str(stops[0]), "--set", "checkpoint.every_steps=7")
        for i, r in enumerate(ranks[1:], start=1):
            more = ["--steps", str(stops[i])] if i < len(stops) else []
            done = run(directory, r, "--restart", "latest", "--set", "checkpoint.every_steps=7", *more)
            self.assertIn("restarting from", done.stdout)
            # Each rank read the rows of its key range (the checkpoint's row index): nothing moved.
            self.assertRegex(done.stdout, r"restart: read \d+ particles .*; 0 moved to another rank after reading\n")
        self.compare_with_reference(directory, label)

    def test_same_rank_count(self):
        # 2 and 3 ranks restart on themselves in the other cases' second legs as well (3>2, 2>3>1).
        for ranks in (1, 4):
            with self.subTest(ranks=ranks):
                self.stop_and_resume([ranks, ranks], [self.steps * 2 // 5])

    def test_other_rank_counts(self):
        for a, b in ((2, 3), (1, 4), (3, 2)):  # and 16>3 below
            with self.subTest(ranks="%d>%d" % (a, b)):
                self.stop_and_resume([a, b], [self.steps // 3 + a])

    @unittest.skipIf(NAME in ("mpm-snow-2d", "mpm-jelly-3d"), "once per method: mpm-mixed-3d for MPM")
    def test_written_on_sixteen_ranks_and_resumed_on_three(self):
        # 8 steps (checkpoints at 7 and 8): oversubscribed 8 to a core, this leg's steps are the
        # costliest of the test.
        self.stop_and_resume([16, 3], [8])

    def test_twice_restarted(self):
        self.stop_and_resume([2, 3, 1], [self.steps // 4, self.steps * 3 // 5])

    @unittest.skipUnless(NAME == "mpm-snow-2d", "a command-line feature, not a method's: one scene suffices")
    def test_restart_from_a_named_file_that_is_not_the_newest(self):
        directory = os.path.join(self.root, "named")
        run(directory, 2, "--steps", str(self.steps // 2), "--set", "checkpoint.every_steps=5",
            "--set", "checkpoint.keep=100")
        older = checkpoints(directory)[-3]  # two newer ones exist
        done = run(directory, 3, "--restart", older, "--set", "checkpoint.every_steps=5")
        self.assertIn("superseded", done.stdout)  # the newer ones belong to an abandoned future
        self.compare_with_reference(directory, "named file")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
