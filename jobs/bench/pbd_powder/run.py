#!/usr/bin/env python3
"""The powder PBD benchmark of issue 9 (docs/performance.md, "Powder PBD").

1. The paper's pour (jobs/scenes/pbd_powder/pour.yaml: 29 particles per frame up to 16 000, 60
   frames per simulated second): one run to frame 560 on 2 ranks writes a checkpoint with all
   16 000 particles falling and piling; each case restarts from it and times 120 frames, with the
   spec's (substeps, iterations) = (8, 4) and (2, 4), on 1 and 2 ranks. Reported: ms per frame and
   frames per wall-clock second (real time is 60), particle-iterations per second (particles x
   substeps x iterations x frames / wall time).
2. A million particles (jobs/scenes/pbd_powder/large-pour.yaml as a 200 x 100 x 50 block resting on the
   floor, so every timed frame holds 1 M): 3 frames on 1 and 2 ranks, (8, 4).
Bytes per particle: the peak resident sets of all ranks (libraries included) over the particles.

    python3 jobs/bench/pbd_powder/run.py [--out /tmp/nendo-pbd-bench] [--only SUBSTRING] [--build build]
"""
import argparse
import csv
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
POUR = os.path.join(ROOT, "jobs", "scenes", "pbd_powder", "pour.yaml")
LARGE = os.path.join(ROOT, "jobs", "scenes", "pbd_powder", "large-pour.yaml")
BLOCK = ["--set", "emitters=[]", "--set",
         "bodies=[{shape: box, min: [0, 0, 0], max: [1.0, 0.5, 0.25], material: powder}]",
         "--set", "output.every=100"]
PEAK_RSS = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]); "
            "print('peak_rss_kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, flush=True); "
            "sys.exit(code)")
START = 560  # frame of the checkpoint: emission ended at 552


def nendo(args, ranks, scene, extra):
    cmd = ["mpirun", "-np", str(ranks), "--bind-to", "none", sys.executable, "-c", PEAK_RSS,
           os.path.join(args.build, "src", "app", "nendo"), "run", scene, "--overwrite", *extra]
    done = subprocess.run(cmd, capture_output=True, text=True,
                          env=dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1"))
    if done.returncode != 0:
        raise SystemExit("%s\n%s\n%s" % (" ".join(cmd), done.stdout, done.stderr))
    return done.stdout


def measure(stdout, frames, substeps, iterations):
    particles = int(re.findall(r"particles\s+(\d+)", stdout)[-1])
    wall = float(re.search(r"(\d+) steps to t = \S+ in (\S+) s", stdout).group(2))
    rss = sum(int(line.split()[1]) for line in stdout.splitlines() if line.startswith("peak_rss_kib"))
    stages = re.search(r"time per stage \(max over ranks\): (.*)", stdout).group(1)
    return {"particles": particles, "frames": frames, "ms_per_frame": 1e3 * wall / frames,
            "frames_per_s": frames / wall, "particle_steps_per_s": particles * frames / wall,
            "particle_iterations_per_s": particles * substeps * iterations * frames / wall,
            "bytes_per_particle": rss * 1024 // particles, "stages": stages}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="/tmp/nendo-pbd-bench")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--only", default="")
    parser.add_argument("--frames", type=int, default=120)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows = []
    checkpoints = os.path.join(args.out, "pour-checkpoints")
    if "pour" in args.only or not args.only:
        if not os.path.isdir(checkpoints) or not os.listdir(checkpoints):
            nendo(args, 2, POUR, ["--output", os.path.join(args.out, "pour-prepare"), "--steps", str(START),
                                  "--set", "checkpoint.dir=" + checkpoints, "--set", "checkpoint.every_steps=%d" % START,
                                  "--set", "output.every=100"])
        for substeps, iterations in ((8, 4), (2, 4)):
            for ranks in (1, 2):
                case = os.path.join(args.out, "pour-%d-%d-np%d" % (substeps, iterations, ranks))
                out = nendo(args, ranks, POUR, [
                    "--restart", os.path.join(checkpoints, "checkpoint_%09d.h5" % START), "--allow-scene-change",
                    "--steps", str(START + args.frames), "--output", case,
                    "--set", "checkpoint.dir=" + os.path.join(case, "checkpoints"), "--set", "checkpoint.every_steps=0",
                    "--set", "output.every=100", "--set", "pbd_powder.substeps=%d" % substeps,
                    "--set", "pbd_powder.iterations=%d" % iterations])
                row = {"case": "pour 16000 (%d, %d)" % (substeps, iterations), "ranks": ranks}
                row.update(measure(out, args.frames, substeps, iterations))
                rows.append(row)
                print(row, flush=True)
    if "million" in args.only or not args.only:
        for ranks in (1, 2):
            frames = 3
            out = nendo(args, ranks, LARGE, [*BLOCK, "--steps", str(frames),
                                             "--output", os.path.join(args.out, "million-np%d" % ranks)])
            row = {"case": "block 1 M (8, 4)", "ranks": ranks}
            row.update(measure(out, frames, 8, 4))
            rows.append(row)
            print(row, flush=True)
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        writer.writeheader()
        writer.writerows(rows)
    print("case | ranks | particles | ms/frame | frames/s | particle-iterations/s | B/particle")
    for r in rows:
        print("%s | %d | %d | %.1f | %.2f | %.3g | %d" % (r["case"], r["ranks"], r["particles"], r["ms_per_frame"],
                                                        r["frames_per_s"], r["particle_iterations_per_s"],
                                                        r["bytes_per_particle"]))


if __name__ == "__main__":
    main()
