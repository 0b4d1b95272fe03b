#!/usr/bin/env python3
"""Runs docs/tutorial.md as a newcomer would, top to bottom, and checks what its commands made.

Usage: tutorial_test.py NENDO SOURCE_DIR WORK_DIR        (ctest -R Tutorial, tests/docs/CMakeLists.txt)

The page's fenced blocks are taken in order and acted on in a fresh directory WORK_DIR/run that
holds build/src/app/nendo (a link to NENDO) and jobs (a link to SOURCE_DIR/jobs), so that the
page's paths work as written:

- a ```yaml block whose first line is the comment `# my-scenes/NAME.yaml` is written to that file;
- a ```yaml block below the marker `<!-- tutorial-test: append my-scenes/NAME.yaml -->` is appended
  to that file (the page says "add these lines at the end of ...");
- a ```sh block is run as one script by bash with `set -eo pipefail` and must exit 0;
- a block below `<!-- tutorial-test: skip -->` is not run (installing and building, the demo, the
  ParaView GUI);
- a ```sh block below `<!-- tutorial-test: fails N -->` must exit with code N (a mistake the page
  shows on purpose); if the next fenced block is ```text, each of its non-empty lines must appear in
  what the block printed on standard error (the page quotes the real messages);
- every other block (text, python, yaml without a path comment or marker) is only read.

A marker is an HTML comment, invisible on the rendered page, on the last non-empty line above the
block's opening fence.

Then it checks what the page promises: the first run's output directory holds the XDMF series and
its particle files; the restart resumed the stopped run from its checkpoint (not from step 0) on
another rank count, and finished (nendo info --finished exits 0); it ends with the same particle
data, bit for bit (every field, rows sorted by id), as an uninterrupted run of the final scene made
here on 2 ranks, in its final checkpoint and its last output, and with the same diagnostics.csv;
the ParaView pictures exist, are PNG files of the size asked for, and are not blank.
"""
import csv
import glob
import os
import re
import shutil
import subprocess
import sys
import time
import unittest
import xml.etree.ElementTree as ElementTree

import h5py
import matplotlib.image
import numpy as np

NENDO, SOURCE, WORK = (os.path.abspath(p) for p in sys.argv[1:4])
PAGE = os.path.join(SOURCE, "docs", "tutorial.md")
RUN = os.path.join(WORK, "run")  # the newcomer's directory
REFERENCE = os.path.join(WORK, "reference")  # the uninterrupted run made by this test

# What the page makes, by name (the checks below say so when the page no longer does).
SCENE = "my-scenes/snowball.yaml"
OUTPUT = "out/snowball"  # the first, uninterrupted run
RESTARTED = "out/snowball-restarted"  # the run stopped early and restarted on another rank count
CHECKPOINTS = "checkpoints/snowball"
PICTURES = {"snowball.png": (960, 600), "snowball-Jp.png": (960, 600)}  # file: (width, height)

FENCE = re.compile(r"^```(\w*)\s*$")
MARKER = re.compile(r"^<!--\s*tutorial-test:\s*(.*?)\s*-->$")
PATH_COMMENT = re.compile(r"^#\s*(my-scenes/[\w.-]+\.yaml)\s*$")


def fenced_blocks(text):
    """The page's fenced blocks in order: dicts with language, body, marker (or None) and line."""
    blocks, lines, k = [], text.split("\n"), 0
    while k < len(lines):
        opening = FENCE.match(lines[k])
        if not opening:
            k += 1
            continue
        above = next((lines[j].strip() for j in range(k - 1, -1, -1) if lines[j].strip()), "")
        marker = MARKER.match(above)
        end = next((j for j in range(k + 1, len(lines)) if lines[j].startswith("```")), None)
        if end is None:
            raise AssertionError(f"{PAGE}:{k + 1}: a fenced block is never closed")
        blocks.append({"language": opening.group(1), "body": "\n".join(lines[k + 1:end]) + "\n",
                       "marker": marker.group(1) if marker else None, "line": k + 1})
        k = end + 1
    return blocks


def prepare_run_directory():
    """A fresh WORK_DIR/run with the links the page's paths need."""
    shutil.rmtree(RUN, ignore_errors=True)
    os.makedirs(os.path.join(RUN, "build", "src", "app"))
    os.symlink(NENDO, os.path.join(RUN, "build", "src", "app", "nendo"))
    os.symlink(os.path.join(SOURCE, "jobs"), os.path.join(RUN, "jobs"))


def write_scene(block):
    """A ```yaml block with a path comment or an append marker; False for any other yaml block."""
    first = block["body"].split("\n", 1)[0].strip()
    marker = block["marker"] or ""
    if marker.startswith("append "):
        path, mode = marker.split(None, 1)[1], "a"
    elif PATH_COMMENT.match(first):
        path, mode = PATH_COMMENT.match(first).group(1), "w"
    else:
        return False
    target = os.path.join(RUN, path)
    if mode == "a" and not os.path.exists(target):
        raise AssertionError(f"{PAGE}:{block['line']}: appends to {path}, which no block above wrote")
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, mode) as f:
        f.write(block["body"])
    print(f"== {PAGE}:{block['line']}: {'appended to' if mode == 'a' else 'wrote'} {path}", flush=True)
    return True


def run_shell(block, expected_text):
    """Runs a ```sh block; checks its exit code (0, or N after `fails N`) and quoted messages."""
    marker = block["marker"] or ""
    expected = int(marker.split()[1]) if marker.startswith("fails ") else 0
    print(f"== {PAGE}:{block['line']}: running\n{block['body'].rstrip()}", flush=True)
    start = time.time()
    r = subprocess.run(["bash", "-c", "set -eo pipefail\n" + block["body"]], cwd=RUN, capture_output=True,
                       text=True, timeout=600)
    print(f"== exit code {r.returncode} after {time.time() - start:.1f} s", flush=True)
    where = f"{PAGE}:{block['line']}"
    if r.returncode != expected:
        raise AssertionError(f"{where}: exit code {r.returncode}, expected {expected}; the block was:\n"
                             f"{block['body']}--- stdout:\n{r.stdout}--- stderr:\n{r.stderr}")
    for line in (expected_text or "").splitlines():
        if line.strip() and line.strip() not in r.stderr:
            raise AssertionError(f"{where}: the message the page quotes,\n  {line.strip()}\n"
                                 f"is not what the command printed on stderr:\n{r.stderr}")
    return r


def check_marker(block):
    """A marker must be one of the three the page may use, on a block it applies to."""
    marker = block["marker"]
    where = f"{PAGE}:{block['line']}: marker '{marker}'"
    if marker is None or marker == "skip":
        return
    if re.fullmatch(r"fails \d+", marker):
        if block["language"] != "sh":
            raise AssertionError(f"{where} on a ```{block['language']} block (only ```sh blocks run)")
    elif re.fullmatch(r"append my-scenes/[\w.-]+\.yaml", marker):
        if block["language"] != "yaml":
            raise AssertionError(f"{where} on a ```{block['language']} block (only ```yaml blocks are scenes)")
    else:
        raise AssertionError(f"{where}: not 'skip', 'fails N' or 'append my-scenes/NAME.yaml'")


def run_page():
    """Acts on every block of the page in order; returns how many scenes were written, and the
    ```sh blocks run with what they printed."""
    with open(PAGE) as f:
        blocks = fenced_blocks(f.read())
    written, ran = 0, []
    for k, block in enumerate(blocks):
        check_marker(block)
        if block["marker"] == "skip":
            continue
        if block["language"] == "yaml":
            written += write_scene(block)
        elif block["language"] == "sh":
            after = blocks[k + 1] if k + 1 < len(blocks) else None
            quoted = after["body"] if after and after["language"] == "text" else None
            result = run_shell(block, quoted if (block["marker"] or "").startswith("fails ") else None)
            ran.append((block["body"], result.stdout + result.stderr))
    return written, ran


def particles_by_id(path):
    """Every /particles dataset of an HDF5 file, rows sorted by particle id."""
    with h5py.File(path, "r") as f:
        group = f["particles"]
        order = np.argsort(group["id"][:], kind="stable")
        return {name: group[name][:][order] for name in group}


def newest(pattern):
    files = sorted(glob.glob(pattern))
    if not files:
        raise AssertionError(f"no file matches {pattern}")
    return files[-1]


class Tutorial(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.makedirs(WORK, exist_ok=True)
        prepare_run_directory()
        start = time.time()
        cls.written, cls.ran = run_page()
        print(f"== the page's commands took {time.time() - start:.1f} s", flush=True)
        # The uninterrupted run of the final scene, on 2 ranks, into directories of its own.
        shutil.rmtree(REFERENCE, ignore_errors=True)
        command = ["mpirun", "-np", "2", NENDO, "run", SCENE, "--output", os.path.join(REFERENCE, "out"),
                   "--set", f"checkpoint.dir={os.path.join(REFERENCE, 'checkpoints')}"]
        r = subprocess.run(command, cwd=RUN, capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise AssertionError(f"the reference run failed: {' '.join(command)}\n{r.stdout}{r.stderr}")

    def path(self, name):
        return os.path.join(RUN, name)

    def test_the_page_names_what_is_checked(self):
        with open(PAGE) as f:
            page = f.read()
        for name in [SCENE, OUTPUT, RESTARTED, CHECKPOINTS, "--restart latest", *PICTURES]:
            self.assertIn(name, page, f"the test checks {name}, which docs/tutorial.md no longer mentions: "
                                      "update the constants of tests/docs/tutorial_test.py")
        self.assertGreaterEqual(self.written, 2, "the page should write the scene and add its checkpoint section")
        self.assertGreaterEqual(len(self.ran), 8, "the page should have its commands in ```sh blocks")

    def test_first_run_wrote_a_series(self):
        series = self.path(os.path.join(OUTPUT, "particles.xdmf"))
        self.assertTrue(os.path.isfile(series), series)
        files = sorted(glob.glob(self.path(os.path.join(OUTPUT, "particles_*.h5"))))
        self.assertGreater(len(files), 10)
        grids = ElementTree.parse(series).getroot().findall(".//Grid[@GridType='Uniform']")
        self.assertEqual(len(grids), len(files), "particles.xdmf should list every particles_NNNNNN.h5")
        with h5py.File(files[-1], "r") as f:
            self.assertEqual(int(f.attrs["dimension"]), 2)
            self.assertGreater(f["particles/position"].shape[0], 1000)
        self.assertTrue(os.path.isfile(self.path(os.path.join(OUTPUT, "diagnostics.csv"))))

    def test_restarted_run_finished(self):
        r = subprocess.run([NENDO, "info", CHECKPOINTS, "--finished"], cwd=RUN, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, f"nendo info {CHECKPOINTS} --finished: {r.stdout}{r.stderr}")

    def test_restart_resumed_the_stopped_run_on_another_rank_count(self):
        printed = [out for body, out in self.ran if "--restart latest" in body]
        self.assertEqual(len(printed), 1, "the page should restart once with --restart latest")
        resumed = re.search(r"restarting from (\S+) \(step (\d+),.*written on (\d+) ranks?\)", printed[0])
        self.assertIsNotNone(resumed, f"the restart did not say where it resumed from:\n{printed[0]}")
        self.assertTrue(resumed.group(1).startswith(CHECKPOINTS + "/"), resumed.group(0))
        self.assertGreater(int(resumed.group(2)), 0, "the restart began at step 0")
        with h5py.File(newest(self.path(os.path.join(CHECKPOINTS, "checkpoint_*.h5"))), "r") as f:
            self.assertGreater(int(f["meta"].attrs["step"]), int(resumed.group(2)))
            self.assertNotEqual(int(f["meta"].attrs["ranks"]), int(resumed.group(3)),
                                "the restart should run on another rank count than the stopped run")

    def test_restart_ends_bitwise_identical_to_an_uninterrupted_run(self):
        pairs = [
            (newest(self.path(os.path.join(CHECKPOINTS, "checkpoint_*.h5"))),
             newest(os.path.join(REFERENCE, "checkpoints", "checkpoint_*.h5"))),
            (newest(self.path(os.path.join(RESTARTED, "particles_*.h5"))),
             newest(os.path.join(REFERENCE, "out", "particles_*.h5"))),
        ]
        for restarted, reference in pairs:
            self.assertEqual(os.path.basename(restarted), os.path.basename(reference))
            a, b = particles_by_id(restarted), particles_by_id(reference)
            self.assertEqual(sorted(a), sorted(b), f"{restarted}: not the fields of {reference}")
            for name in a:
                self.assertEqual(a[name].dtype, b[name].dtype, name)
                self.assertEqual(a[name].tobytes(), b[name].tobytes(),
                                 f"{restarted} differs from the uninterrupted run in /particles/{name}")
        with open(self.path(os.path.join(RESTARTED, "diagnostics.csv"))) as f:
            restarted = list(csv.reader(f))
        with open(os.path.join(REFERENCE, "out", "diagnostics.csv")) as f:
            self.assertEqual(restarted, list(csv.reader(f)))

    def test_pictures_are_pictures(self):
        for name, (width, height) in PICTURES.items():
            path = self.path(name)
            self.assertTrue(os.path.isfile(path), f"{name} was not written")
            with open(path, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", f"{name} is not a PNG file")
            image = matplotlib.image.imread(path)
            self.assertEqual(image.shape[:2], (height, width), f"{name} is not {width}x{height}")
            rgb = np.round(image[:, :, :3] * 255).astype(np.uint8).reshape(-1, 3)
            colours = np.unique(rgb, axis=0)
            self.assertGreater(len(colours), 50, f"{name} has only {len(colours)} colours")
            coloured = np.mean(rgb.max(axis=1).astype(int) - rgb.min(axis=1) > 60)  # saturated pixels
            self.assertGreater(coloured, 0.005, f"{name}: almost no coloured pixels (no particles drawn?)")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
