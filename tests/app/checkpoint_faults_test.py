#!/usr/bin/python3
"""Checkpoints and outputs under faults, for real: damaged files, a full disk, a read-only directory
(for checkpoints and for outputs), a rank killed with SIGKILL in the middle of a write and between
writes, stop signals, the wall-time budget, and a scene that
changed. After each, the last good checkpoint restarts and the run ends bitwise identical to the
uninterrupted one. Needs root (tmpfs and read-only bind mounts).

Usage: checkpoint_faults_test.py NENDO_BINARY WORK_DIR RANKS [Faults.test_name ...]
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import unittest

import h5py
import numpy as np

NENDO, WORK, RANKS = sys.argv[1], os.path.join(sys.argv[2], "np" + sys.argv[3]), int(sys.argv[3])

# A jelly cube thrown at the ground: 3,375 particles (27,000 with BIG), 250 steps.
SCENE = """nendo: 1
method: mpm
dimension: 3
gravity: [0, -9.81, 0]
time: {end: 0.05, dt: 2.0e-4}
grid: {dx: DX}
materials:
  jelly: {model: fixed_corotated, E: 1.0e5, nu: 0.3, density: 1000}
bodies:
  - {shape: box, min: [0.3, 0.05, 0.3], max: [0.6, 0.35, 0.6], material: jelly, particles_per_cell: 2,
     velocity: [0.5, -2, 0]}
colliders:
  - {shape: plane, point: [0, 0, 0], normal: [0, 1, 0], boundary: separate, friction: 0.3}
output: {dir: out, every: 0.01, fields: [id, velocity, J]}
"""


def write_scene(name, big=False):
    path = os.path.join(WORK, name + ".yaml")
    with open(path, "w") as f:
        f.write(SCENE.replace("DX", "0.02" if big else "0.04"))
    return path


def command(directory, scene, *args, ranks=RANKS):
    return ["mpirun", "-np", str(ranks), NENDO, "run", scene, "--output", os.path.join(directory, "out"),
            "--set", "checkpoint.dir=" + os.path.join(directory, "checkpoints"), *args]


def run(directory, scene, *args, ranks=RANKS, expect=0):
    done = subprocess.run(command(directory, scene, *args, ranks=ranks), capture_output=True, text=True,
                          timeout=300)
    if expect is not None and done.returncode != expect:
        raise AssertionError("exit %d (expected %d)\n%s\n%s" % (done.returncode, expect, done.stdout, done.stderr))
    return done


def info(path, *args):
    return subprocess.run([NENDO, "info", path, *args], capture_output=True, text=True, timeout=120)


def checkpoints(directory):
    folder = os.path.join(directory, "checkpoints")
    return sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".h5"))


def particles(path):
    with h5py.File(path, "r") as f:
        group = f["particles"]
        order = np.argsort(group["id"][:], kind="stable")
        return {name: group[name][:][order].tobytes() for name in group}


def children(pid):
    """The rank processes mpirun started (its children), from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return found


def contents(folder):
    found = {}
    for name in os.listdir(folder):
        with open(os.path.join(folder, name), "rb") as f:
            found[name] = f.read()
    return found


def mount(*args):
    subprocess.run(["mount", *args], check=True, capture_output=True)


def take_all_free_space(folder):
    """What another program filling the disk does: a file in folder takes every byte still free."""
    with open(os.path.join(folder, "filler"), "wb") as f:
        taken, status = 0, os.statvfs(folder)
        chunk = status.f_bavail * status.f_frsize
        while chunk >= 4096:
            try:
                os.posix_fallocate(f.fileno(), taken, chunk)
                taken += chunk
            except OSError:  # less is free than a moment ago
                chunk //= 2
    return taken


def read_every_dataset(path):
    """h5py reads every dataset of the file whole."""
    with h5py.File(path, "r") as f:
        datasets = []
        f.visititems(lambda name, item: datasets.append(item) if isinstance(item, h5py.Dataset) else None)
        for dataset in datasets:
            dataset[()]
    return len(datasets)


def end_job(job):
    """SIGKILL to the ranks mpirun started and to mpirun."""
    for pid in children(job.pid) + [job.pid]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    job.wait()


def unmount(folder):
    """umount, retried while killed ranks still hold files there."""
    for attempt in range(100):
        if subprocess.run(["umount", folder], capture_output=True).returncode == 0:
            return
        time.sleep(0.1)
    raise AssertionError("cannot unmount " + folder)


class Faults(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shutil.rmtree(WORK, ignore_errors=True)
        os.makedirs(WORK)
        cls.scene = write_scene("jelly")
        cls.big = write_scene("jelly-big", big=True)
        cls.reference = os.path.join(WORK, "reference")
        run(cls.reference, cls.scene, "--set", "checkpoint.every_steps=100000")
        cls.final = particles(checkpoints(cls.reference)[-1])
        cls.big_reference = os.path.join(WORK, "big-reference")
        run(cls.big_reference, cls.big, "--set", "checkpoint.every_steps=100000")
        cls.big_final = particles(checkpoints(cls.big_reference)[-1])

    def fresh(self, name):
        directory = os.path.join(WORK, name)
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
        return directory

    def assert_ends_like_the_reference(self, directory, big=False):
        last = checkpoints(directory)[-1]
        self.assertEqual(info(last, "--finished").returncode, 0, last + " is not finished")
        self.assertEqual(particles(last), self.big_final if big else self.final)

    def resume_to_the_end(self, directory, scene=None, ranks=RANKS):
        done = run(directory, scene or self.scene, "--restart", "latest", ranks=ranks)
        self.assertIn("restarting from", done.stdout)
        return done

    # --- damaged files ---

    def damaged_newest_falls_back(self, name, damage):
        directory = self.fresh(name)
        run(directory, self.scene, "--steps", "120", "--set", "checkpoint.every_steps=50")
        newest = checkpoints(directory)[-1]  # step 120; 100 and 50 are older
        damage(newest)
        self.assertNotEqual(info(newest).returncode, 0)
        done = self.resume_to_the_end(directory)
        self.assertIn("warning", done.stderr)
        self.assertIn("checkpoint_000000120.h5", done.stderr)
        self.assertIn("checkpoint_000000100.h5 (step 100", done.stdout)
        self.assertTrue(os.path.exists(newest + ".damaged"))
        self.assert_ends_like_the_reference(directory)

    def test_a_truncated_checkpoint_is_skipped(self):
        self.damaged_newest_falls_back("truncated", lambda p: os.truncate(p, os.path.getsize(p) * 2 // 3))

    def test_a_corrupted_checkpoint_is_skipped(self):
        def flip(path):  # one byte inside the velocity data, the file structure untouched
            with h5py.File(path, "r") as f:
                offset = f["particles/velocity"].id.get_offset()
            with open(path, "r+b") as f:
                f.seek(offset + 1001)
                byte = f.read(1)
                f.seek(offset + 1001)
                f.write(bytes([byte[0] ^ 0x04]))
        self.damaged_newest_falls_back("corrupted", flip)

    def test_a_half_written_checkpoint_is_skipped(self):
        def unmark(path):
            with h5py.File(path, "r+") as f:
                del f["meta"].attrs["complete"]
        self.damaged_newest_falls_back("unmarked", unmark)

    def test_a_named_damaged_file_and_no_checkpoint_are_errors(self):
        directory = self.fresh("named-damaged")
        run(directory, self.scene, "--steps", "30", "--set", "checkpoint.every_steps=10")
        newest = checkpoints(directory)[-1]
        os.truncate(newest, 1000)
        done = run(directory, self.scene, "--restart", newest, expect=2)
        self.assertIn(newest, done.stderr)
        empty = self.fresh("no-checkpoint")
        os.makedirs(os.path.join(empty, "checkpoints"))
        done = run(empty, self.scene, "--restart", "latest", expect=2)
        self.assertIn("no checkpoint", done.stderr)
        self.assertFalse(os.path.exists(os.path.join(empty, "out")), "work started before the check")

    # --- writes that fail ---

    def test_a_full_disk_stops_cleanly_and_keeps_the_earlier_checkpoints(self):
        directory = self.fresh("full-disk")
        probe = self.fresh("full-disk-probe")
        run(probe, self.scene, "--steps", "10", "--set", "checkpoint.every_steps=10")
        size = os.path.getsize(checkpoints(probe)[-1])
        folder = os.path.join(directory, "checkpoints")
        os.makedirs(folder)
        mount("-t", "tmpfs", "-o", "size=%d" % (size * 5 // 2 + 4096), "tmpfs", folder)
        try:
            done = run(directory, self.scene, "--set", "checkpoint.every_steps=20", "--set", "checkpoint.keep=10",
                       expect=1)
            self.assertIn("No space left", done.stderr)
            self.assertNotIn("MPI_ABORT", done.stderr + done.stdout)
            kept = checkpoints(directory)
            self.assertEqual([os.path.basename(p) for p in kept],
                             ["checkpoint_000000020.h5", "checkpoint_000000040.h5"])
            self.assertEqual([n for n in os.listdir(folder) if n.endswith(".tmp")], [])
            for path in kept:
                self.assertIn("checksums: verified", info(path).stdout)
            rescued = self.fresh("full-disk-rescued")
            shutil.copytree(folder, os.path.join(rescued, "checkpoints"))
        finally:
            subprocess.run(["umount", folder])
        self.resume_to_the_end(rescued)
        self.assert_ends_like_the_reference(rescued)

    def test_a_disk_that_fills_during_a_checkpoint_write_never_hangs_the_job(self):
        # Something else takes all the free space of the checkpoints' file system the moment the
        # second checkpoint's .tmp appears, after the space check for it passed (or just after that
        # checkpoint, when its write was too quick to catch: on 1 rank). Either the file's
        # space was already reserved (the file is whole and the next checkpoint meets the full disk)
        # or the reservation fails: the job stops within seconds, never in a collective write.
        directory = self.fresh("filled-during-write")
        folder = os.path.join(directory, "checkpoints")
        os.makedirs(folder)
        mount("-t", "tmpfs", "-o", "size=%d" % (4 * os.path.getsize(checkpoints(self.reference)[-1])), "tmpfs",
              folder)
        try:
            with open(os.path.join(directory, "stdout"), "w+") as out, open(os.path.join(directory, "stderr"),
                                                                            "w+") as err:
                job = subprocess.Popen(command(directory, self.scene, "--set", "checkpoint.every_steps=40", "--set",
                                               "checkpoint.keep=10"), stdout=out, stderr=err)
                filled = False
                while not filled and job.poll() is None:
                    names = os.listdir(folder)
                    writing = "checkpoint_000000040.h5" in names and any(n.endswith(".h5.tmp") for n in names)
                    missed = len([n for n in names if n.endswith(".h5")]) > 1  # a write too quick to catch
                    if writing or missed:
                        filled = take_all_free_space(folder) > 0
                filled_at = time.time()
                try:
                    job.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    end_job(job)
                    self.fail("the job hung after the disk filled during a checkpoint write")
                print("the job ended %.2f s after the disk filled" % (time.time() - filled_at), file=sys.stderr)
                out.seek(0)
                err.seek(0)
                stdout, stderr = out.read(), err.read()
            self.assertTrue(filled, "the run never wrote its second checkpoint\n" + stdout + stderr)
            self.assertEqual(job.returncode, 1, stdout + stderr)
            self.assertRegex(stderr, r"not enough space for \S+/checkpoint_\d{9}\.h5: it needs \d+ KiB, \d+ KiB are free")
            self.assertNotIn("outgrew", stderr)  # the reserved space held the whole file
            self.assertNotIn("MPI_ABORT", stderr + stdout)
            self.assertEqual([n for n in os.listdir(folder) if n.endswith(".tmp")], [])
            kept = checkpoints(directory)
            self.assertGreaterEqual(len(kept), 1)
            for path in kept:  # what looks complete is whole
                self.assertGreater(read_every_dataset(path), 0, path)
                self.assertIn("checksums: verified", info(path).stdout, path)
            rescued = self.fresh("filled-during-write-rescued")
            os.makedirs(os.path.join(rescued, "checkpoints"))
            for path in kept:
                shutil.copy(path, os.path.join(rescued, "checkpoints"))
        finally:
            unmount(folder)
        self.resume_to_the_end(rescued)
        self.assert_ends_like_the_reference(rescued)

    def test_a_read_only_directory_stops_cleanly_and_keeps_the_checkpoint(self):
        directory = self.fresh("read-only")
        run(directory, self.scene, "--steps", "40", "--set", "checkpoint.every_steps=40")
        folder = os.path.join(directory, "checkpoints")
        with open(checkpoints(directory)[-1], "rb") as f:
            before = f.read()
        mount("--bind", folder, folder)
        try:
            mount("-o", "remount,ro,bind", folder)
            done = run(directory, self.scene, "--restart", "latest", "--set", "checkpoint.every_steps=20", expect=1)
            self.assertIn("checkpoint_000000060.h5", done.stderr)
            self.assertIn("Read-only file system", done.stderr)
            self.assertNotIn("MPI_ABORT", done.stderr + done.stdout)
        finally:
            subprocess.run(["umount", folder])
        with open(checkpoints(directory)[-1], "rb") as f:
            self.assertEqual(f.read(), before)
        self.resume_to_the_end(directory)
        self.assert_ends_like_the_reference(directory)

    def test_a_rank_killed_in_the_middle_of_a_write(self):
        for attempt in range(5):
            directory = self.fresh("killed-%d" % attempt)
            folder = os.path.join(directory, "checkpoints")
            job = subprocess.Popen(command(directory, self.big, "--set", "checkpoint.every_steps=1"),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            victim, deadline = None, time.time() + 60
            while victim is None and time.time() < deadline and job.poll() is None:
                names = os.listdir(folder) if os.path.isdir(folder) else []
                if len([n for n in names if n.endswith(".h5")]) >= 2 and any(n.endswith(".tmp") for n in names):
                    ranks = children(job.pid)
                    if ranks:
                        victim = ranks[-1]
                        os.kill(victim, signal.SIGKILL)
                        break
            killed_at = time.time()
            job.wait(timeout=60)
            self.assertLess(time.time() - killed_at, 30, "the job did not end after a rank was killed")
            self.assertIsNotNone(victim, "the run never got to write a checkpoint")
            self.assertNotEqual(job.returncode, 0)
            left = [n for n in os.listdir(folder) if n.endswith(".tmp")]
            if left:  # the kill landed inside a write: that is the case under test
                break
        self.assertTrue(left, "in 5 attempts the kill never landed inside a write")
        for path in checkpoints(directory):  # what looks complete is complete
            self.assertIn("checksums: verified", info(path).stdout, path)
        done = self.resume_to_the_end(directory, self.big)
        self.assertIn("interrupted checkpoint write", done.stdout)
        self.assertEqual([n for n in os.listdir(folder) if n.endswith(".tmp")], [])
        self.assert_ends_like_the_reference(directory, big=True)

    def test_a_rank_killed_between_writes_ends_the_job_within_seconds(self):
        directory = self.fresh("killed-stepping")
        folder = os.path.join(directory, "checkpoints")
        job = subprocess.Popen(command(directory, self.big, "--set", "checkpoint.every_steps=40"),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while time.time() < deadline and job.poll() is None:
            names = os.listdir(folder) if os.path.isdir(folder) else []
            if "checkpoint_000000040.h5" in names and not any(n.endswith(".tmp") for n in names):
                break
            time.sleep(0.01)
        self.assertIsNone(job.poll(), "the run ended before the kill")
        os.kill(children(job.pid)[-1], signal.SIGKILL)
        killed_at = time.time()
        job.wait(timeout=60)
        print("the job ended %.2f s after the kill" % (time.time() - killed_at), file=sys.stderr)
        self.assertLess(time.time() - killed_at, 10, "the job did not end within seconds of the kill")
        self.assertNotEqual(job.returncode, 0)
        for path in checkpoints(directory):
            self.assertIn("checksums: verified", info(path).stdout, path)
        self.resume_to_the_end(directory, self.big)
        self.assert_ends_like_the_reference(directory, big=True)

    # --- output files that cannot be written ---

    def assert_output_files_are_whole(self, out):
        names = sorted(os.listdir(out))
        self.assertEqual([n for n in names if n.endswith(".tmp")], [], "an interrupted file was left behind")
        files = [n for n in names if n.startswith("particles_")]
        for name in files:
            self.assertEqual(info(os.path.join(out, name)).returncode, 0, name)
        with open(os.path.join(out, "particles.xdmf")) as f:  # the series names only whole files
            listed = sorted(set(re.findall(r"particles_\d+\.h5", f.read())))
        self.assertEqual(listed, files)
        with open(os.path.join(out, "diagnostics.csv")) as f:  # whole rows only
            text = f.read()
        lines = text.split("\n")
        self.assertEqual(lines[-1], "", "the last row is cut")
        self.assertEqual({line.count(",") for line in lines[:-1]}, {lines[0].count(",")})
        return files

    def test_a_full_output_disk_stops_cleanly_and_keeps_the_written_outputs(self):
        directory = self.fresh("full-output")
        out = os.path.join(directory, "out")
        os.makedirs(out)
        mount("-t", "tmpfs", "-o", "size=%d" % (3 * 160 * 1024), "tmpfs", out)  # room for 2-3 of 6 outputs
        try:
            done = run(directory, self.scene, "--set", "checkpoint.every_steps=20", expect=1)
            self.assertIn("No space left", done.stderr)
            self.assertNotIn("MPI_ABORT", done.stderr + done.stdout)
            files = self.assert_output_files_are_whole(out)
            self.assertGreaterEqual(len(files), 1)
            self.assertLess(len(files), 6)
        finally:
            subprocess.run(["umount", out])
        self.resume_to_the_end(directory)
        self.assert_ends_like_the_reference(directory)

    def test_a_read_only_output_directory_stops_cleanly_and_keeps_the_written_outputs(self):
        # Found before any work since issue 32 (the run's manifest is written first): bad input, exit 2.
        directory = self.fresh("read-only-output")
        out = os.path.join(directory, "out")
        run(directory, self.scene, "--steps", "60", "--set", "checkpoint.every_steps=60")
        before = contents(out)
        mount("--bind", out, out)
        try:
            mount("-o", "remount,ro,bind", out)
            done = run(directory, self.scene, "--restart", "latest", expect=2)
            self.assertIn("Read-only file system", done.stderr)
            self.assertIn(out, done.stderr)
            self.assertNotIn("MPI_ABORT", done.stderr + done.stdout)
        finally:
            subprocess.run(["umount", out])
        self.assertEqual(contents(out), before)
        self.assert_output_files_are_whole(out)
        self.resume_to_the_end(directory)
        self.assert_ends_like_the_reference(directory)

    # --- stopping early on purpose ---

    def stopped_by(self, name, send, reason):
        directory = self.fresh(name)
        job = subprocess.Popen(command(directory, self.big), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
        out = os.path.join(directory, "out")
        deadline = time.time() + 120
        while time.time() < deadline and job.poll() is None:
            if os.path.exists(os.path.join(out, "particles_000001.h5")):
                break
            time.sleep(0.02)
        self.assertIsNone(job.poll(), "the run ended before the signal")
        send(job)
        stdout, stderr = job.communicate(timeout=120)
        self.assertEqual(job.returncode, 0, stdout + stderr)
        self.assertIn("stopped by " + reason, stdout)
        self.assertEqual(info(os.path.join(directory, "checkpoints"), "--finished").returncode, 1)
        self.resume_to_the_end(directory, self.big, ranks=max(1, RANKS - 1))
        self.assertEqual(info(os.path.join(directory, "checkpoints"), "--finished").returncode, 0)
        self.assert_ends_like_the_reference(directory, big=True)

    def test_sigusr1_to_mpirun_stops_every_rank_at_a_checkpoint(self):
        self.stopped_by("sigusr1", lambda job: job.send_signal(signal.SIGUSR1), "SIGUSR1")

    def test_sigterm_to_one_rank_stops_every_rank_at_a_checkpoint(self):
        self.stopped_by("sigterm", lambda job: os.kill(children(job.pid)[-1], signal.SIGTERM), "SIGTERM")

    def test_the_wall_time_budget_is_kept(self):
        directory = self.fresh("walltime")
        links = 0
        while info(os.path.join(directory, "checkpoints"), "--finished").returncode != 0:
            args = ["--walltime", "00:00:00.6"] + (["--restart", "latest"] if links else [])
            started = time.time()
            done = run(directory, self.big, *args)
            links += 1
            self.assertLess(time.time() - started, 30)
            self.assertLess(links, 40, "the run does not progress under the wall-time budget")
            if info(os.path.join(directory, "checkpoints"), "--finished").returncode != 0:
                self.assertIn("stopped by the wall-time budget", done.stdout)
        self.assertGreaterEqual(links, 2)
        self.assert_ends_like_the_reference(directory, big=True)

    # --- a different scene ---

    def test_a_scene_with_other_physics_is_refused_unless_allowed(self):
        directory = self.fresh("scene-change")
        run(directory, self.scene, "--steps", "30", "--set", "checkpoint.every_steps=30")
        done = run(directory, self.scene, "--restart", "latest", "--set", "materials.jelly.E=2e5",
                   "--set", "grid.kernel=cubic", expect=2)
        self.assertIn("materials.jelly.E", done.stderr)
        self.assertIn("grid.kernel", done.stderr)
        self.assertIn("--allow-scene-change", done.stderr)
        # time.end, output and checkpoint keys may change: the run is extended.
        extended = run(directory, self.scene, "--restart", "latest", "--set", "time.end=0.06")
        self.assertIn("restarting from", extended.stdout)
        with h5py.File(checkpoints(directory)[-1], "r") as f:
            self.assertEqual(f["meta"].attrs["time"], 0.06)
        # from another run's checkpoint into this folder: its files go first (issue 32, one run per folder)
        run(directory, self.scene, "--restart", checkpoints(self.reference)[-1], "--allow-scene-change",
            "--set", "materials.jelly.E=2e5", "--set", "time.end=0.052", "--overwrite")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"] + sys.argv[4:])  # then test names, if any
