#!/usr/bin/env python3
"""`cmake --install` and `find_package(nendo)`, for real: installs the build into a fresh prefix,
builds jobs/examples/embed from the installed copy against the installed package, and runs it.
The example's hand-driven free fall must give v = g t to round-off and the same bits on 1-4 ranks;
its `run` mode must write the same particles as the installed nendo program.

Usage: install_test.py BUILD_DIR WORK_DIR CATALYST(ON|OFF)"""
import os
import shutil
import subprocess
import sys
import unittest

import h5py
import numpy as np

BUILD, WORK, CATALYST = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3] == "ON"
PREFIX = os.path.join(WORK, "prefix")
EMBED = os.path.join(WORK, "build-embed", "embed")


def call(*args, cwd=None):
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd, timeout=600)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done.stdout


def mpirun(ranks, *args):
    return call("mpirun", "-np", ranks, *args)


def final_particles(directory):
    names = sorted(n for n in os.listdir(directory) if n.startswith("particles_") and n.endswith(".h5"))
    with h5py.File(os.path.join(directory, names[-1]), "r") as f:
        group = f["particles"]
        order = np.argsort(group["id"][:], kind="stable")
        return names[-1], {name: group[name][:][order].tobytes() for name in group}


class Installed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shutil.rmtree(WORK, ignore_errors=True)
        os.makedirs(WORK)
        call("cmake", "--install", BUILD, "--prefix", PREFIX)
        example = os.path.join(PREFIX, "share", "nendo", "examples", "embed")
        call("cmake", "-S", example, "-B", os.path.dirname(EMBED), "-G", "Ninja", "-DCMAKE_PREFIX_PATH=" + PREFIX)
        call("cmake", "--build", os.path.dirname(EMBED))

    def test_the_package_names_no_path_of_the_build_or_the_sources(self):
        folder = os.path.join(PREFIX, "lib", "cmake", "nendo")
        sources = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
        for name in os.listdir(folder):
            with open(os.path.join(folder, name)) as f:
                text = f.read()
            self.assertNotIn(BUILD, text, name)
            self.assertNotIn(sources + "/", text, name)

    def test_headers_are_installed_by_their_folders(self):
        for header in ["core/Types.hpp", "decomposition/Space.hpp", "io/ParticleWriter.hpp", "solvers/NewtonSolver.hpp",
                       "methods/Method.hpp", "app/Simulation.hpp", "scene/SceneLoader.hpp"]:
            self.assertTrue(os.path.isfile(os.path.join(PREFIX, "include", "nendo", header)), header)

    def test_a_driven_free_fall_is_exact_and_the_same_on_every_rank_count(self):
        runs = {n: mpirun(n, EMBED, "drive") for n in (1, 2, 3, 4)}
        lines = runs[1].splitlines()
        self.assertEqual(len(lines), 20)
        for line in lines:
            words = line.split()
            self.assertEqual(words[5], "1728", line)  # 6^3 cells x 2^3 particles per cell
            self.assertAlmostEqual(float(words[8]), float(words[10]), delta=1e-12)
        for n in (2, 3, 4):
            self.assertEqual(runs[n], runs[1], f"{n} ranks")

    def test_run_mode_writes_what_the_installed_program_writes(self):
        scene = os.path.join(PREFIX, "share", "nendo", "scenes", "mpm", "jelly-drop-2d.yaml")
        embedded, program = os.path.join(WORK, "embedded"), os.path.join(WORK, "program")
        self.assertIn("outputs in " + embedded, mpirun(2, EMBED, "run", scene, embedded))
        mpirun(2, os.path.join(PREFIX, "bin", "nendo"), "run", scene, "--output", program)
        self.assertTrue(os.path.isfile(os.path.join(embedded, "particles.xdmf")))
        self.assertEqual(final_particles(embedded), final_particles(program))

    def test_the_installed_program_finds_its_catalyst_plugin(self):
        version = call(os.path.join(PREFIX, "bin", "nendo"), "--version")
        self.assertIn("ParaView Catalyst" if CATALYST else "without Catalyst", version)
        if CATALYST:
            self.assertTrue(os.path.isfile(os.path.join(PREFIX, "lib", "nendo", "libnendo_catalyst.so")))

    def test_the_installed_program_meshes_with_its_gmsh_plugin_and_names_a_missing_one(self):
        plugin = os.path.join(PREFIX, "lib", "nendo", "libnendo_gmsh.so")
        self.assertTrue(os.path.isfile(plugin))
        nendo = os.path.join(PREFIX, "bin", "nendo")
        scene = os.path.join(PREFIX, "share", "nendo", "scenes", "shape_matching", "cylinder-bend.yaml")
        args = ["mpirun", "-np", "2", nendo, "run", scene, "--steps", "1", "--quiet"]
        # LD_DEBUG=files: the dynamic loader names every library it opens, so this is the installed plugin.
        done = subprocess.run(args + ["--output", os.path.join(WORK, "cylinder")], capture_output=True, text=True,
                              timeout=300, env=dict(os.environ, LD_DEBUG="files"))
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr[-4000:])
        self.assertIn("file=" + plugin, done.stderr)
        missing = "/nonexistent/libnendo_gmsh.so"
        done = subprocess.run(args + ["--output", os.path.join(WORK, "no-plugin")], capture_output=True, text=True,
                              timeout=300, env=dict(os.environ, NENDO_GMSH_PLUGIN=missing))
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("Gmsh plugin libnendo_gmsh.so, which is not installed", done.stderr)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
