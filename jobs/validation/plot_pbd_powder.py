#!/usr/bin/python3
"""Measurements and images of the powder pour (spec 003 §8-9, docs/methods/pbd-powder.md) from its
HDF5 outputs (OUT/particles_NNNNNN.h5 with /particles/{id,position,velocity,state,display_state}).

    mpirun -np 2 nendo run jobs/scenes/pbd_powder/pour.yaml --output out/pour
    mpirun -np 2 nendo run jobs/scenes/pbd_powder/pour.yaml --set pbd_powder.transitions=false \\
        --set pbd_powder.friction=0 --output out/pour-fluid
    /usr/bin/python3 jobs/validation/plot_pbd_powder.py out/pour --fluid out/pour-fluid \\
        --out docs/images/pbd_powder/pour.png

Prints, for the outputs nearest to the paper's frames 180, 484, 1010 and 1319 (the scene writes
every 0.5 s = 30 frames): the particle count, the resting fraction, the flowing fraction of the
falling stream (particles more than 3h above the heap top, test 7(b)), the heap height, the angle of
repose (test 7(d): max height in 1 cm radial bins, least-squares line over 0.2-0.8 of the top; the
median over five alignments of the bins, the spec's own alignment in brackets) and
the footprint (95th percentile radius, test 7(e)); the same at the end of the fluid run. The image
has one side view (a 1 cm slice) per frame coloured as the paper's Fig. 3 (flowing cyan, resting
pink, just changed yellow) and the height profiles H(r) of the final heap and fluid.
"""
import argparse
import glob
import os

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

H = 0.01  # kernel support of the scene (m)
FRAMES = (180, 484, 1010, 1319)
COLOURS = np.array([[0.3, 0.85, 0.95], [0.95, 0.45, 0.75], [0.98, 0.85, 0.1]])  # flow, rest, changing


def outputs(directory):
    files = sorted(glob.glob(os.path.join(directory, "particles_*.h5")))
    times = []
    for f in files:
        with h5py.File(f, "r") as h:
            times.append(float(h["particles"].attrs.get("time", np.nan)) if "time" in h["particles"].attrs else np.nan)
    return files, times


def load(path):
    with h5py.File(path, "r") as h:
        p = h["particles"]
        return {k: p[k][:] for k in ("position", "state", "display_state") if k in p}


def flank_angle(r, y, offset):
    """Test 7(d): max height in 1 cm radial bins with edges at r = k - offset cm, a least-squares
    line over the bins between 0.2 and 0.8 of the top."""
    edges = np.arange(0, 0.4, 0.01) - offset
    lower = np.maximum(edges, 0)
    height = np.array([y[(r >= a) & (r < a + 0.01)].max() if np.any((r >= a) & (r < a + 0.01)) else 0 for a in edges])
    middle = 0.5 * (lower + edges + 0.01)
    top = height.max()
    flank = (height >= 0.2 * top) & (height <= 0.8 * top)
    angle = np.degrees(np.arctan(abs(np.polyfit(middle[flank], height[flank], 1)[0]))) if flank.sum() >= 2 else 0
    return angle, top, (middle, height)


def heap_measures(x, state):
    r = np.hypot(x[:, 0], x[:, 2])
    # One alignment of the bins is luck on a heap a few bins wide (issue 28): the median of five.
    angles = [flank_angle(r, x[:, 1], 0.002 * k)[0] for k in range(5)]
    spec_angle, top, profile = flank_angle(r, x[:, 1], 0.0)
    angle = float(np.median(angles))
    # The heap top: the highest bin within 2 cm of the axis that is not the falling stream.
    settled = x[:, 1][(r < 0.02)]
    stream = x[:, 1] > (np.percentile(settled, 50) if settled.size else 0) + 3 * H
    return {"count": len(x), "rest": float(np.mean(state == 1)), "stream_flowing": float(np.mean(state[stream] == 0)) if stream.any() else float("nan"),
            "height": top, "angle": angle, "spec_angle": spec_angle, "footprint": float(np.percentile(r, 95)), "profile": profile}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--fluid", help="the same pour as a pure PBF fluid (transitions and friction off)")
    parser.add_argument("--frame-time", type=float, default=1 / 60)
    parser.add_argument("--out", help="image to write")
    args = parser.parse_args()
    files = sorted(glob.glob(os.path.join(args.out_dir, "particles_*.h5")))
    every = None
    picks = []
    for frame in FRAMES:  # output k holds frame k * (frames per output); the scene writes every 30 frames
        t = frame * args.frame_time
        k = int(round(t / 0.5))
        if k < len(files):
            picks.append((frame, k * 30, files[k]))
    rows = []
    for frame, nearest, path in picks:
        d = load(path)
        m = heap_measures(d["position"], d["state"])
        rows.append((frame, nearest, path, d, m))
        print("frame %4d (output at frame %4d): %5d particles, resting %.3f, stream flowing %.3f, height %.3f m, "
              "angle %.1f deg (%.1f), footprint %.3f m" % (frame, nearest, m["count"], m["rest"], m["stream_flowing"],
                                                          m["height"], m["angle"], m["spec_angle"], m["footprint"]))
    fluid = None
    if args.fluid:
        fluid_files = sorted(glob.glob(os.path.join(args.fluid, "particles_*.h5")))
        d = load(fluid_files[-1])
        fluid = heap_measures(d["position"], d["state"])
        print("fluid at the end: height %.3f m, angle %.1f deg (%.1f), footprint %.3f m" % (fluid["height"], fluid["angle"], fluid["spec_angle"], fluid["footprint"]))
    if not args.out:
        return
    fig, axes = plt.subplots(1, len(rows) + 1, figsize=(4.2 * (len(rows) + 1), 4.0))
    for ax, (frame, nearest, path, d, m) in zip(axes, rows):
        x = d["position"]
        s = d["display_state"].astype(int) if "display_state" in d else d["state"].astype(int)
        cut = np.abs(x[:, 2]) < 0.005
        ax.scatter(x[cut, 0], x[cut, 1], c=COLOURS[np.clip(s[cut], 0, 2)], s=6, linewidths=0)
        ax.set_xlim(-0.2, 0.2), ax.set_ylim(0, 0.22), ax.set_aspect("equal")
        ax.plot([-0.15, -0.05], [0.19, 0.19], color="red", lw=3)  # the paper's 10 cm ruler
        ax.set_title("frame %d: %d particles, %.0f%% resting" % (nearest, m["count"], 100 * m["rest"]), fontsize=9)
        ax.set_xlabel("x (m)")
    axes[0].set_ylabel("y (m)")
    ax = axes[-1]
    r, h = rows[-1][4]["profile"]
    ax.plot(r, h, "o-", color=COLOURS[1], label="powder: %.0f deg" % rows[-1][4]["angle"])
    if fluid:
        ax.plot(*fluid["profile"], "s-", color=COLOURS[0], label="fluid: %.0f deg" % fluid["angle"])
    ax.set_xlabel("radius (m)"), ax.set_ylabel("heap height H(r) (m)"), ax.legend(), ax.set_xlim(0, 0.3)
    ax.set_title("height profile at the end")
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
