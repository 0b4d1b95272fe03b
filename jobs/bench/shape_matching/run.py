#!/usr/bin/env python3
"""The shape-matching benchmark of issue 8 (docs/performance.md, "Example-based shape matching").

The spec's Table 1 models on one core: the 1225-vertex bar (7 x 7 x 25 lattice, 5184 Kuhn tets)
and a cylinder of radius 0.15 m and length 1 m meshed by Gmsh to about 2000 vertices, both with one
example (twist for the bar, bend for the cylinder) resting on the floor; and a 1 M-vertex box
(100^3 lattice) on 1 and 2 ranks. The per-step times come from nendo's own report: t_sm (classic
shape matching: fit + goals/integration + frame exchange), t_proj (the example projection: least
squares, the integer all-reduce, weight rules, S~), t_tot (wall time of the time loop per step,
halo and migration included), and every stage of the report in ms per step. Bytes per particle: the peak resident sets of all ranks (libraries
included) over the vertex count.

    python3 jobs/bench/shape_matching/run.py [--out /tmp/nendo-sm-bench] [--only SUBSTRING] [--build build]
"""
import argparse
import csv
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCENE = os.path.join(ROOT, "jobs", "bench", "shape_matching", "bar.yaml")
CYLINDER = ["--set", "bodies.0={shape: cylinder, center: [0, 0.16, 0], axis: x, radius: 0.15, height: 1.0, "
            "particles_per_cell: 3, material: rubber, examples: [{type: bend, amplitude: 0.1}]}",
            "--set", "grid.dx=0.104"]
MILLION = ["--set", "bodies.0.max=[0.99, 0.99, 0.99]", "--set", "grid.dx=0.03"]
# name, extra arguments, steps, rank counts, paper's t_sm / t_proj / t_tot (ms, Core i7 M620)
CASES = [("bar, 1225 vertices", [], 2000, (1,), (1.5, 0.17, 2.2)),
         ("cylinder, ~2025 vertices", CYLINDER, 2000, (1,), (6.7, 0.89, 8.6)),
         ("box, 1.03 M vertices", MILLION, 20, (1, 2), None)]
PEAK_RSS = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]); "
            "print('peak_rss_kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, flush=True); "
            "sys.exit(code)")


def stage_seconds(text):
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"(\w+) (\S+) s \(", text)}


def run(args, name, extra, steps, ranks, paper):
    out = os.path.join(args.out, re.sub(r"[^a-z0-9]+", "-", name.lower()) + "-np%d" % ranks)
    cmd = ["mpirun", "-np", str(ranks), "--bind-to", "none", sys.executable, "-c", PEAK_RSS,
           os.path.join(args.build, "src", "app", "nendo"), "run", SCENE, "--output", out, "--overwrite", "--steps", str(steps),
           *extra]
    done = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1"))
    if done.returncode != 0:
        raise SystemExit("%s\n%s\n%s" % (" ".join(cmd), done.stdout, done.stderr))
    vertices = int(re.search(r"shape_matching 3D, (\d+) particles", done.stdout).group(1))
    wall = float(re.search(r"(\d+) steps to t = \S+ in (\S+) s", done.stdout).group(2))
    stages = stage_seconds(re.search(r"time per stage \(max over ranks\): (.*)", done.stdout).group(1))
    rss = sum(int(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("peak_rss_kib"))
    ms = 1e3 / steps
    return {"case": name, "ranks": ranks, "vertices": vertices, "steps": steps,
            "t_sm_ms": (stages["fit"] + stages["integrate"] + stages["exchange"]) * ms,
            "t_proj_ms": stages["projection"] * ms, "t_tot_ms": wall * ms,
            "steps_per_s": steps / wall, "particle_steps_per_s": vertices * steps / wall,
            "bytes_per_particle": rss * 1024 // vertices,
            "paper_ms": "/".join("%g" % t for t in paper) if paper else "",
            "stages_ms": " ".join("%s %.3f" % (k, v * ms) for k, v in stages.items())}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="/tmp/nendo-sm-bench")
    parser.add_argument("--only", default="")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for name, extra, steps, ranks_list, paper in CASES:
        if args.only not in name:
            continue
        for ranks in ranks_list:
            rows.append(run(args, name, extra, steps, ranks, paper))
            print("%s, %d rank(s): %.3f ms per step; stages (ms per step, max over ranks): %s" % (
                name, ranks, rows[-1]["t_tot_ms"], rows[-1]["stages_ms"]), flush=True)
    with open(os.path.join(args.out, "results.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print("\n| case | ranks | vertices | t_sm ms | t_proj ms | t_tot ms | paper t_sm/t_proj/t_tot ms | steps/s "
          "| particle-steps/s | bytes/particle |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %d | %d | %.3f | %.3f | %.3f | %s | %.1f | %.3g | %d |" % (
            r["case"], r["ranks"], r["vertices"], r["t_sm_ms"], r["t_proj_ms"], r["t_tot_ms"], r["paper_ms"],
            r["steps_per_s"], r["particle_steps_per_s"], r["bytes_per_particle"]))


if __name__ == "__main__":
    main()
