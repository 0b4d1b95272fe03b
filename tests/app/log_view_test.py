#!/usr/bin/python3
"""PETSc's -log_view shows nendo's run phases as log stages and its method stages as events.

Explicit MPM (tests/app/restart/mpm-jelly-3d.yaml) and implicit MPM (tests/app/implicit/drop-2d.yaml)
run 2 ranks with -log_view: the stages set-up, steps, output and checkpoint are listed, the
method's stages appear as nendo:<stage> events in the "steps" stage (G2P once per step), and the
implicit run's KSPSolve sits beside them.

Usage: log_view_test.py NENDO_BINARY WORK_DIR
"""
import os
import re
import shutil
import subprocess
import sys
import unittest

NENDO, WORK = sys.argv[1], sys.argv[2]
HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 6


def log_view(name, scene, *args):
    """Runs scene for STEPS steps on 2 ranks with -log_view; returns rank 0's output."""
    folder = os.path.join(WORK, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    r = subprocess.run(["mpirun", "-np", "2", NENDO, "run", os.path.join(HERE, scene), "--output",
                        os.path.join(folder, "out"), "--steps", str(STEPS), *args, "-log_view"],
                       capture_output=True, text=True, timeout=300, cwd=folder)
    if r.returncode != 0:
        raise AssertionError(f"nendo failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r.stdout


def stage_tables(log):
    """The event lines of -log_view per stage name: {stage: {event: count (max over ranks)}}."""
    tables, current = {}, None
    for line in log.splitlines():
        heading = re.match(r"--- Event Stage \d+: (.+)$", line)
        if heading:
            current = tables.setdefault(heading.group(1).strip(), {})
            continue
        words = line.split()
        if current is not None and len(words) > 2 and re.fullmatch(r"\d+", words[1]):
            current[words[0]] = int(words[1])
    return tables


class LogView(unittest.TestCase):
    def check_phases(self, tables):
        for phase in ("set-up", "steps", "output", "checkpoint"):
            self.assertIn(phase, tables, f"no log stage {phase}: {sorted(tables)}")

    def test_explicit_mpm(self):
        tables = stage_tables(log_view("explicit", "restart/mpm-jelly-3d.yaml", "--set", "checkpoint.every_steps=3"))
        self.check_phases(tables)
        steps = tables["steps"]
        for event in ("nendo:P2G", "nendo:scatter_add", "nendo:grid", "nendo:gather", "nendo:migrate"):
            self.assertGreaterEqual(steps.get(event, 0), STEPS, f"{event} in {steps}")
        self.assertEqual(steps.get("nendo:G2P"), STEPS, steps)  # once per step
        self.assertNotIn("KSPSolve", steps)

    def test_implicit_mpm(self):
        tables = stage_tables(log_view("implicit", "implicit/drop-2d.yaml"))
        self.check_phases(tables)
        steps = tables["steps"]
        self.assertEqual(steps.get("nendo:G2P"), STEPS, steps)
        self.assertGreaterEqual(steps.get("nendo:solve", 0), STEPS, steps)
        self.assertGreater(steps.get("KSPSolve", 0), 0, steps)  # Newton iterates from step 3 on
        self.assertGreater(steps.get("PCApply", 0), 0, steps)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
