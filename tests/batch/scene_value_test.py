#!/usr/bin/python3
"""SceneValue: the job scripts' scene_value (jobs/batch-common.sh) with the real nendo.

Usage: scene_value_test.py NENDO_BINARY WORK_DIR

- A scene and its overrides resolve to the checkpoint directory nendo would write to.
- A scene nendo refuses (exit 2) is not tried again: one attempt, nendo's own message shown.
- A nendo start that fails once (the wrapper below exits 137 on its first call, as a process
  killed on a loaded node would: once in CI's SlurmChain) is tried again and the value is found;
  the failed attempt is reported with its exit status.
"""
import os
import shutil
import stat
import subprocess
import sys
import unittest

NENDO = os.path.abspath(sys.argv[1])
WORK = os.path.abspath(sys.argv[2])
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMMON = os.path.join(ROOT, "jobs", "batch-common.sh")
SCENE = os.path.join(ROOT, "tests", "batch", "jelly-chain.yaml")


def scene_value(nendo, *args):
    script = 'source "$1"; shift; NENDO=$1; shift; scene_value "$@"'
    return subprocess.run(["bash", "-c", script, "scene_value", COMMON, nendo, *args], cwd=WORK,
                          capture_output=True, text=True, timeout=120)


class SceneValue(unittest.TestCase):
    def test_the_overridden_checkpoint_dir_is_found(self):
        done = scene_value(NENDO, "checkpoint.dir", SCENE, "--set", "checkpoint.dir=/tmp/elsewhere")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.strip(), "/tmp/elsewhere")

    def test_a_refused_scene_is_tried_once(self):
        done = scene_value(NENDO, "checkpoint.dir", SCENE, "--set", "grid.dx=-1")
        self.assertEqual(done.returncode, 1)
        self.assertIn("exited with status 2 (attempt 1 of 3)", done.stderr)
        self.assertIn("grid.dx", done.stderr)  # nendo's own message
        self.assertNotIn("attempt 2", done.stderr)
        self.assertIn("cannot tell the scene's checkpoint.dir", done.stderr)

    def test_a_start_that_failed_once_is_tried_again(self):
        wrapper = os.path.join(WORK, "nendo-fails-once")
        marker = os.path.join(WORK, "failed-once")
        with open(wrapper, "w") as f:
            f.write('#!/bin/bash\nif [ ! -e "%s" ]; then touch "%s"; echo "killed at start-up" >&2; exit 137; fi\n'
                    'exec "%s" "$@"\n' % (marker, marker, NENDO))
        os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR)
        done = scene_value(wrapper, "checkpoint.dir", SCENE, "--set", "checkpoint.dir=/tmp/again")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.strip(), "/tmp/again")
        self.assertIn("exited with status 137 (attempt 1 of 3)", done.stderr)
        self.assertIn("killed at start-up", done.stderr)


if __name__ == "__main__":
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    unittest.main(argv=sys.argv[:1], verbosity=2)
