#!/usr/bin/python3
"""Images of the slave-particle SPH scenes (docs/methods/slave-sph.md) from their HDF5 outputs
(OUT/particles_NNNNNN.h5 with /particles/{id,position,velocity,kind,...}; the scenes in
jobs/scenes/slave_sph/ write id, velocity, mass, volume and kind).

Run a scene, then:

    nendo run jobs/scenes/slave_sph/cube-soft.yaml --output out/cube-soft
    /usr/bin/python3 jobs/validation/plot_slave_sph.py frames out/cube-soft --times 0 0.3 1.0 \
        --title "cube-soft (Fig. 9 bottom)" --out docs/images/slave_sph/cube-soft.png
    /usr/bin/python3 jobs/validation/plot_slave_sph.py history out/cube-soft   # table per output
    /usr/bin/python3 jobs/validation/plot_slave_sph.py noise out/masters-only out/masters-only-slaves \
        --labels "without slaves" "with slaves" --out docs/images/slave_sph/fig7-noise.png

frames:  one panel per requested time (the nearest output), masters only (kind 0), coloured by
         speed |v| (one colour scale for the strip). --view side (x-y, default), top (x-z) or 3d.
         --slaves also draws the slaves (kind 1) as small grey dots.
history: per output: time, masters, slaves, centre-of-mass height, lowest master, max master
         speed, kinetic energy of the masters, and the velocity noise below; for spotting
         blow-ups and bodies passing through colliders.
noise:   velocity noise of the masters over time: the RMS over masters of |v_i - <v>_i|, where
         <v>_i is the mean velocity of the masters within --radius (default 0.02 m) of master i.
         Zero for any rigid translation; grows with the particle-scale (zero-energy) modes of
         spec 000 Fig. 7. One curve per output directory.

Needs Debian's python3-h5py, python3-matplotlib and python3-scipy (the system /usr/bin/python3).
"""
import argparse
import glob
import os
import sys

import h5py
import numpy as np

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from scipy.spatial import cKDTree  # noqa: E402


def outputs(directory):
    """[(time, path)] of the particle files of an output directory, in time order."""
    files = sorted(glob.glob(os.path.join(directory, "particles_*.h5")))
    result = []
    for path in files:
        with h5py.File(path, "r") as f:
            result.append((float(f.attrs["time"]), path))
    if not result:
        sys.exit(f"plot_slave_sph: no particles_*.h5 in {directory}")
    return result


def load(path):
    with h5py.File(path, "r") as f:
        p = f["particles"]
        x = p["position"][:]
        v = p["velocity"][:]
        kind = p["kind"][:] if "kind" in p else np.zeros(len(x), dtype=np.int32)
        mass = p["mass"][:] if "mass" in p else np.ones(len(x))
        return float(f.attrs["time"]), x, v, kind.reshape(-1), mass.reshape(-1)


def nearest(entries, t):
    return min(entries, key=lambda e: abs(e[0] - t))


def velocity_noise(x, v, radius):
    """RMS over particles of |v_i − mean of v_j over |x_j − x_i| < radius| (self included)."""
    if len(x) == 0:
        return float("nan")
    tree = cKDTree(x)
    pairs = tree.query_pairs(radius, output_type="ndarray")
    n = len(x)
    total = v.copy()
    count = np.ones(n)
    if len(pairs):
        i, j = pairs[:, 0], pairs[:, 1]
        np.add.at(total, i, v[j])
        np.add.at(total, j, v[i])
        np.add.at(count, i, 1)
        np.add.at(count, j, 1)
    mean = total / count[:, None]
    return float(np.sqrt(np.mean(np.sum((v - mean) ** 2, axis=1))))


def cmd_frames(args):
    entries = outputs(args.dir)
    chosen = [nearest(entries, t) for t in args.times]
    frames = [load(path) for _, path in chosen]
    vmax = args.vmax
    if vmax is None:
        vmax = max(float(np.max(np.linalg.norm(v[k == 0], axis=1), initial=0.0)) for _, _, v, k, _ in frames)
        vmax = max(vmax, 1e-3)
    masters = [x[k == 0] for _, x, _, k, _ in frames]
    allx = np.concatenate(masters)
    lo, hi = allx.min(axis=0), allx.max(axis=0)
    pad = 0.03
    axes_of = {"side": (0, 1), "top": (0, 2)}
    n = len(frames)
    if args.view == "3d":
        fig = plt.figure(figsize=(3.0 * n + 0.6, 3.2), dpi=args.dpi, layout="constrained")
    else:
        a, b = axes_of[args.view]
        span_a = hi[a] - lo[a] + 2 * pad
        span_b = max(hi[b], args.floor if args.floor is not None else hi[b]) - min(
            lo[b], args.floor if args.floor is not None else lo[b]) + 2 * pad
        panel_w = 2.6
        panel_h = min(max(panel_w * span_b / span_a, 1.2), 4.0)
        fig = plt.figure(figsize=(panel_w * n + 0.8, panel_h + 0.7), dpi=args.dpi, layout="constrained")
    scatter = None
    for idx, (t, x, v, k, _) in enumerate(frames):
        sel = k == 0
        xm, speed = x[sel], np.linalg.norm(v[sel], axis=1)
        order = np.argsort(xm[:, 2] if args.view == "side" else xm[:, 1])  # far particles first
        if args.view == "3d":
            ax = fig.add_subplot(1, n, idx + 1, projection="3d")
            if args.slaves:
                xs = x[k == 1]
                ax.scatter(xs[:, 0], xs[:, 2], xs[:, 1], s=0.2, c="0.75", depthshade=False)
            scatter = ax.scatter(xm[order, 0], xm[order, 2], xm[order, 1], c=speed[order], s=args.size,
                                 cmap="viridis", vmin=0, vmax=vmax, depthshade=False)
            ax.set_xlim(lo[0] - pad, hi[0] + pad)
            ax.set_ylim(lo[2] - pad, hi[2] + pad)
            ax.set_zlim(min(lo[1], 0) - pad, hi[1] + pad)
            ax.set_box_aspect((hi[0] - lo[0] + 2 * pad, hi[2] - lo[2] + 2 * pad, hi[1] - min(lo[1], 0) + 2 * pad))
            ax.set_xticks([]), ax.set_yticks([]), ax.set_zticks([])
            ax.view_init(elev=20, azim=-60)
        else:
            a, b = axes_of[args.view]
            ax = fig.add_subplot(1, n, idx + 1)
            if args.slaves:
                xs = x[k == 1]
                ax.scatter(xs[:, a], xs[:, b], s=0.3, c="0.75", linewidths=0)
            scatter = ax.scatter(xm[order, a], xm[order, b], c=speed[order], s=args.size, cmap="viridis",
                                 vmin=0, vmax=vmax, linewidths=0)
            if args.floor is not None and args.view == "side":
                ax.axhline(args.floor, color="0.3", lw=1)
            for rect in args.rect or []:
                x0, y0, x1, y1 = rect
                ax.add_patch(plt.Rectangle((x0, y0), x1 - x0, y1 - y0, color="0.55", alpha=0.6, lw=0))
            for circle in args.circle or []:
                cx, cy, r = circle
                ax.add_patch(plt.Circle((cx, cy), r, color="0.55", alpha=0.6, lw=0))
            ax.set_aspect("equal")
            ax.set_xlim(lo[a] - pad, hi[a] + pad)
            bottom = min(lo[b], args.floor) if args.floor is not None and args.view == "side" else lo[b]
            ax.set_ylim(bottom - pad, hi[b] + pad)
            ax.tick_params(labelsize=7)
        ax.set_title(f"t = {t:.2f} s", fontsize=9)
    cbar = fig.colorbar(scatter, ax=fig.axes, shrink=0.9, pad=0.01, aspect=25)
    cbar.set_label("master speed (m/s)", fontsize=8)
    cbar.ax.tick_params(labelsize=7)
    if args.title:
        fig.suptitle(args.title, fontsize=10)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    fig.savefig(args.out, dpi=args.dpi, bbox_inches="tight", pad_inches=0.05)
    print(f"wrote {args.out} ({os.path.getsize(args.out) // 1024} kB)")


def cmd_history(args):
    print("# time masters slaves com_y min_y max_speed kinetic noise")
    for t, path in outputs(args.dir):
        _, x, v, k, m = load(path)
        sel = k == 0
        xm, vm, mm = x[sel], v[sel], m[sel]
        speed = np.linalg.norm(vm, axis=1)
        com = (mm[:, None] * xm).sum(axis=0) / mm.sum()
        ke = 0.5 * float((mm * speed ** 2).sum())
        noise = velocity_noise(xm, vm, args.radius)
        print(f"{t:7.3f} {sel.sum():7d} {(k == 1).sum():7d} {com[1]:9.4f} {xm[:, 1].min():9.4f} "
              f"{speed.max():9.4f} {ke:11.4e} {noise:10.4e}")


def cmd_noise(args):
    labels = args.labels or [os.path.basename(os.path.normpath(d)) for d in args.dirs]
    fig, ax = plt.subplots(figsize=(5.5, 3.4), dpi=args.dpi)
    for directory, label in zip(args.dirs, labels):
        ts, ns = [], []
        for t, path in outputs(directory):
            _, x, v, k, _ = load(path)
            sel = k == 0
            ts.append(t)
            ns.append(velocity_noise(x[sel], v[sel], args.radius))
        ax.plot(ts, ns, marker="o", ms=2.5, label=label)
        print(f"{label}: max noise {np.nanmax(ns):.3e} m/s, last {ns[-1]:.3e} m/s at t = {ts[-1]:.3f} s")
    ax.set_yscale("log")
    ax.set_xlabel("t (s)")
    ax.set_ylabel(f"master velocity noise (m/s)\nRMS |v − mean within {args.radius * 100:g} cm|", fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    if args.title:
        ax.set_title(args.title, fontsize=9)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    fig.savefig(args.out, dpi=args.dpi)
    print(f"wrote {args.out} ({os.path.getsize(args.out) // 1024} kB)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("frames", help="strip of frames of one run, masters coloured by speed")
    p.add_argument("dir")
    p.add_argument("--times", type=float, nargs="+", default=[0.0, 0.3, 1.0])
    p.add_argument("--view", choices=["side", "top", "3d"], default="side")
    p.add_argument("--slaves", action="store_true", help="also draw the slaves (grey)")
    p.add_argument("--floor", type=float, default=0.0, help="height of the ground line (side view)")
    p.add_argument("--no-floor", dest="floor", action="store_const", const=None, help="no ground line")
    p.add_argument("--rect", type=float, nargs=4, action="append", metavar=("A0", "B0", "A1", "B1"),
                   help="draw a collider rectangle in the view plane (repeatable)")
    p.add_argument("--circle", type=float, nargs=3, action="append", metavar=("A", "B", "R"),
                   help="draw a collider circle in the view plane (repeatable)")
    p.add_argument("--vmax", type=float, help="top of the speed colour scale (default: largest speed shown)")
    p.add_argument("--size", type=float, default=4.0, help="marker size")
    p.add_argument("--title")
    p.add_argument("--dpi", type=int, default=100)
    p.add_argument("--out", required=True)
    p = sub.add_parser("history", help="table of global quantities per output")
    p.add_argument("dir")
    p.add_argument("--radius", type=float, default=0.02)
    p = sub.add_parser("noise", help="velocity noise of the masters over time, one curve per run")
    p.add_argument("dirs", nargs="+")
    p.add_argument("--labels", nargs="+")
    p.add_argument("--radius", type=float, default=0.02)
    p.add_argument("--title")
    p.add_argument("--dpi", type=int, default=110)
    p.add_argument("--out", required=True)
    args = parser.parse_args()
    {"frames": cmd_frames, "history": cmd_history, "noise": cmd_noise}[args.command](args)


if __name__ == "__main__":
    main()
