#!/usr/bin/python3
"""Measurements and images of the example-based shape-matching scenes (docs/methods/shape-matching.md)
from their HDF5 outputs (OUT/particles_NNNNNN.h5 with /particles/{id,position,velocity,weights,...};
the scenes in jobs/scenes/shape_matching/ write velocity, weights, rest and body). The images in
docs/images/shape_matching/ are made with the default rotation (shape_matching.rotation: matched);
compare another with --set shape_matching.rotation=Apq or A on the nendo command line.

    nendo run jobs/scenes/shape_matching/bars-twist-and-s.yaml --output out/bars-twist-and-s
    /usr/bin/python3 jobs/validation/plot_shape_matching.py frames out/bars-twist-and-s \\
        --times 0 0.5 1.0 2.0 --out docs/images/shape_matching/bars-twist-and-s.png
    nendo run jobs/scenes/shape_matching/cylinder-bend.yaml --output out/cylinder-bend
    /usr/bin/python3 jobs/validation/plot_shape_matching.py frames out/cylinder-bend \\
        --times 0 0.5 1.0 2.0 --out docs/images/shape_matching/cylinder-bend.png
    /usr/bin/python3 jobs/validation/plot_shape_matching.py history out/bars-twist-and-s
    for b in 0 0.9 0.99 0.995 0.999; do
      nendo run jobs/scenes/shape_matching/bar-beta-sweep.yaml --set shape_matching.beta=$b \\
          --output out/beta-sweep/beta-$b
    done
    /usr/bin/python3 jobs/validation/plot_shape_matching.py beta out/beta-sweep/beta-* \\
        --out docs/images/shape_matching/beta-sweep.png
    nendo run jobs/scenes/shape_matching/bar-drop-per-region.yaml --output out/bar-drop-per-region
    nendo run jobs/scenes/shape_matching/bar-drop-per-region.yaml --set bodies.0.groups=global \\
        --output out/bar-drop-global
    /usr/bin/python3 jobs/validation/plot_shape_matching.py regions out/bar-drop-global \\
        out/bar-drop-per-region --out docs/images/shape_matching/drop-regions.png
    nendo run jobs/scenes/shape_matching/cars-wall.yaml --output out/cars-wall
    /usr/bin/python3 jobs/validation/plot_shape_matching.py cars out/cars-wall \\
        --out docs/images/shape_matching/cars-wall.png

frames:   one 3-D panel per requested time (the nearest output), every vertex coloured by the example
          weight W'_1 of its region (column 1 of `weights`).
history:  per output and body: time, centre-of-mass height, lowest vertex, largest speed, mean W'_1
          and the end-to-end twist (below).
beta:     the spec's Fig. 5 / section 8 test 7: the twist Theta(t) of each run (one run per beta,
          beta read from the directory name `...beta-B`), and the final Theta against beta.
regions:  the spec's Fig. 7 / section 8 test 8: W'_1 per vertex at impact + 0.2 s (impact: the
          first output with a vertex on a collider, --planes), one run with a global group and one
          with a group per region; prints the standard deviation of W'_1 over the regions and the
          twist at the end.
cars:     the spec's Fig. 9 / section 8 test 10: side and top views of the cars after the impact
          and, per car, its nose shape (length, height of the nose above the tail) and the correlation
          of its descriptor S - S^0 with the squash and the shear example (1-rings rebuilt from
          the lattice with equal masses, so an approximation of the solver's descriptor).

Twist Theta: the rotation about the body's rest long axis between its first and last cross-section
(the vertices with the smallest and largest rest coordinate along that axis): each section's best
rotation from rest (Kabsch; a planar set fixes it), and the twist part (swing-twist split) of
R_first^T R_last about the axis. 90 degrees in the twist example, 0 at rest, unchanged by rigid
motion.

Needs Debian's python3-h5py, python3-numpy and python3-matplotlib (the system /usr/bin/python3).
"""
import argparse
import glob
import os
import re
import sys

import h5py
import numpy as np

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def outputs(directory):
    """[(time, path)] of the particle files of an output directory, in time order."""
    files = sorted(glob.glob(os.path.join(directory, "particles_*.h5")))
    result = []
    for path in files:
        with h5py.File(path, "r") as f:
            result.append((float(f.attrs["time"]), path))
    if not result:
        sys.exit(f"plot_shape_matching: no particles_*.h5 in {directory}")
    return result


class Frame:
    """One output, sorted by id."""

    def __init__(self, path):
        with h5py.File(path, "r") as f:
            self.t = float(f.attrs["time"])
            p = f["particles"]
            ids = p["id"][:].reshape(-1)
            order = np.argsort(ids)
            self.id = ids[order]
            self.fields = {}
            for name in p:
                if name == "id":
                    continue
                self.fields[name] = p[name][:][order]
        self.x = self.fields["position"]
        self.v = self.fields.get("velocity", np.zeros_like(self.x))
        if "rest" not in self.fields:
            sys.exit(f"plot_shape_matching: {path} has no `rest` field (add rest to output.fields)")
        self.rest = self.fields["rest"]
        self.body = self.fields["body"].reshape(-1) if "body" in self.fields else np.zeros(len(self.x), int)
        w = self.fields.get("weights")
        self.w1 = w[:, 1] if w is not None and w.shape[1] > 1 else np.zeros(len(self.x))

    def bodies(self):
        return sorted(set(int(b) for b in self.body))


def nearest(entries, t):
    return min(entries, key=lambda e: abs(e[0] - t))


def kabsch(q, p):
    """Rotation R with R q ≈ p for centred point sets (rows); planar sets allowed."""
    h = q.T @ p
    u, _, vt = np.linalg.svd(h)
    d = np.sign(np.linalg.det(vt.T @ u.T))
    return vt.T @ np.diag([1.0, 1.0, d]) @ u.T


def twist_angle(rest, x):
    """End-to-end twist (degrees) about the rest long axis, see the module docstring."""
    extent = rest.max(axis=0) - rest.min(axis=0)
    axis = int(np.argmax(extent))
    tol = 1e-6 * extent[axis]
    ends = []
    for sel in (rest[:, axis] < rest[:, axis].min() + tol, rest[:, axis] > rest[:, axis].max() - tol):
        q = rest[sel] - rest[sel].mean(axis=0)
        p = x[sel] - x[sel].mean(axis=0)
        ends.append(kabsch(q, p))
    rel = ends[0].T @ ends[1]
    # twist part of rel about e: quaternion (w, v), twist = 2 atan2(v.e, w)
    w = np.sqrt(max(0.0, 1.0 + np.trace(rel))) / 2
    v = np.array([rel[2, 1] - rel[1, 2], rel[0, 2] - rel[2, 0], rel[1, 0] - rel[0, 1]]) / (4 * max(w, 1e-300))
    if w < 1e-8:  # half turn: fall back to the axis of the rotation
        vals, vecs = np.linalg.eigh((rel + rel.T) / 2)
        v = vecs[:, -1]
    angle = np.degrees(2 * np.arctan2(v[axis], w))
    return (angle + 180) % 360 - 180


def twist_history(directory, body=0):
    ts, thetas = [], []
    for t, path in outputs(directory):
        f = Frame(path)
        sel = f.body == body
        ts.append(t)
        thetas.append(twist_angle(f.rest[sel], f.x[sel]))
    return np.array(ts), np.array(thetas)


def save(fig, out, dpi):
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out, dpi=dpi, bbox_inches="tight", pad_inches=0.05)
    print(f"wrote {out} ({os.path.getsize(out) // 1024} kB)")


def scatter3d(ax, x, c, lo, hi, size, vmax, elev=22, azim=-60):
    order = np.argsort(x[:, 2] * np.sin(np.radians(azim)) + x[:, 0] * np.cos(np.radians(azim)))
    sc = ax.scatter(x[order, 0], x[order, 2], x[order, 1], c=c[order], s=size, cmap="viridis", vmin=0,
                    vmax=vmax, depthshade=False, linewidths=0)
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[2], hi[2])
    ax.set_zlim(lo[1], hi[1])
    ax.set_box_aspect(tuple(hi[[0, 2, 1]] - lo[[0, 2, 1]]))
    ax.set_xticks([]), ax.set_yticks([]), ax.set_zticks([])
    ax.view_init(elev=elev, azim=azim)
    return sc


def bounds(frames, pad=0.03, floor=0.0):
    allx = np.concatenate([f.x for f in frames])
    lo, hi = allx.min(axis=0) - pad, allx.max(axis=0) + pad
    lo[1] = min(lo[1], floor)
    return lo, hi


def cmd_frames(args):
    entries = outputs(args.dir)
    frames = [Frame(path) for _, path in (nearest(entries, t) for t in args.times)]
    lo, hi = bounds(frames)
    n = len(frames)
    fig = plt.figure(figsize=(args.width * n + 0.6, args.height), dpi=args.dpi, layout="constrained")
    sc = None
    for k, f in enumerate(frames):
        ax = fig.add_subplot(1, n, k + 1, projection="3d")
        sc = scatter3d(ax, f.x, f.w1, lo, hi, args.size, args.vmax, args.elev, args.azim)
        ax.set_title(f"t = {f.t:.2f} s", fontsize=9)
    cbar = fig.colorbar(sc, ax=fig.axes, shrink=0.7, pad=0.01, aspect=25)
    cbar.set_label("example weight W'$_1$", fontsize=8)
    cbar.ax.tick_params(labelsize=7)
    if args.title:
        fig.suptitle(args.title, fontsize=10)
    save(fig, args.out, args.dpi)


def cmd_history(args):
    print("# time body com_y min_y max_speed mean_W1 twist_deg")
    for t, path in outputs(args.dir):
        f = Frame(path)
        for b in f.bodies():
            sel = f.body == b
            x = f.x[sel]
            print(f"{t:7.3f} {b:3d} {x[:, 1].mean():8.4f} {x[:, 1].min():8.4f} "
                  f"{np.linalg.norm(f.v[sel], axis=1).max():8.4f} {f.w1[sel].mean():8.4f} "
                  f"{twist_angle(f.rest[sel], x):8.2f}")


def beta_of(directory):
    m = re.search(r"beta-?([0-9.]+)/?$", directory)
    if not m:
        sys.exit(f"plot_shape_matching: cannot read beta from the directory name {directory}")
    return float(m.group(1))


def cmd_beta(args):
    runs = sorted(((beta_of(d), d) for d in args.dirs))
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(8.4, 3.2), dpi=args.dpi, gridspec_kw={"width_ratios": [1.6, 1]})
    finals = []
    print("# beta  Theta(0.5 s) Theta(1 s) Theta(2 s) Theta(5 s) Theta(end) [deg]  mean W'_1 at end")
    for beta, d in runs:
        ts, th = twist_history(d)
        last = Frame(outputs(d)[-1][1])
        finals.append(th[-1])
        at = [th[np.argmin(abs(ts - s))] for s in (0.5, 1.0, 2.0, 5.0)]
        print(f"{beta:6g} " + " ".join(f"{a:8.2f}" for a in at) + f" {th[-1]:8.2f}   {last.w1.mean():.4f}")
        ax.plot(ts, th, label=f"β = {beta:g}", lw=1.3)
    ax.axhline(90, color="0.5", lw=0.8, ls="--")
    ax.set_xlabel("t (s)")
    ax.set_ylabel("end-to-end twist Θ (degrees)")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    betas = [b for b, _ in runs]
    labels = [f"{b:g}" for b in betas]
    bx.plot(range(len(betas)), finals, "o-")
    bx.set_xticks(range(len(betas)), labels, fontsize=7)
    bx.set_xlabel("β")
    bx.set_ylabel(f"Θ at t = {ts[-1]:g} s (degrees)")
    bx.grid(alpha=0.3)
    bx.set_ylim(min(0, min(finals)) - 3, 93)
    if args.title:
        fig.suptitle(args.title, fontsize=10)
    fig.tight_layout()
    save(fig, args.out, args.dpi)


def impact_time(directory, planes):
    for t, path in outputs(directory):
        f = Frame(path)
        for point, normal in planes:
            n = np.asarray(normal, float)
            n /= np.linalg.norm(n)
            if ((f.x - np.asarray(point, float)) @ n).min() < 1e-3 and t > 0:
                return t
    return None


def cmd_regions(args):
    planes = [(args.planes[i:i + 3], args.planes[i + 3:i + 6]) for i in range(0, len(args.planes), 6)]
    frames, labels = [], []
    for d, label in zip(args.dirs, args.labels):
        t_hit = impact_time(d, planes)
        if t_hit is None:
            sys.exit(f"plot_shape_matching: no impact in {d}")
        t_show = t_hit + args.after
        f = Frame(nearest(outputs(d), t_show)[1])
        ts, th = twist_history(d)
        print(f"{label}: impact at t = {t_hit:.3f} s; at t = {f.t:.3f} s W'_1 mean {f.w1.mean():.4f}, "
              f"std over regions {f.w1.std():.4f}, min {f.w1.min():.4f}, max {f.w1.max():.4f}; "
              f"twist max |Θ| {np.abs(th).max():.2f} deg, Θ at t = {ts[-1]:g} s {th[-1]:.2f} deg")
        frames.append(f)
        labels.append(label)
    lo, hi = bounds(frames)
    vmax = args.vmax or max(0.05, max(float(f.w1.max()) for f in frames))
    n = len(frames)
    fig = plt.figure(figsize=(3.4 * n + 0.6, 3.0), dpi=args.dpi, layout="constrained")
    sc = None
    for k, (f, label) in enumerate(zip(frames, labels)):
        ax = fig.add_subplot(1, n, k + 1, projection="3d")
        sc = scatter3d(ax, f.x, f.w1, lo, hi, args.size, vmax, args.elev, args.azim)
        ax.set_title(f"{label}, t = {f.t:.2f} s\nW'$_1$ std {f.w1.std():.3f}", fontsize=9)
    cbar = fig.colorbar(sc, ax=fig.axes, shrink=0.7, pad=0.01, aspect=25)
    cbar.set_label("example weight W'$_1$ of the region", fontsize=8)
    cbar.ax.tick_params(labelsize=7)
    save(fig, args.out, args.dpi)


# --- cars -------------------------------------------------------------------------------------


def lattice_rings(rest):
    """1-rings of a box body's Kuhn lattice, rebuilt from its rest positions: the vertex and the
    lattice neighbours at offsets in {0,1}^3 or {0,-1}^3 (the 14 edges of the 6-tet split along the
    main diagonal). The output does not carry the rings, so test 10 uses these (equal masses)."""
    spacing = np.sort(np.unique(np.round(rest[:, 0], 9)))
    h = np.diff(spacing).min()
    ijk = np.round((rest - rest.min(axis=0)) / h).astype(int)
    index = {tuple(v): k for k, v in enumerate(ijk)}
    offsets = [(a, b, c) for a in (0, 1) for b in (0, 1) for c in (0, 1)]
    offsets = offsets + [(-a, -b, -c) for a, b, c in offsets[1:]]
    return [[index[t] for t in (tuple(v + o) for o in np.array(offsets)) if t in index] for v in ijk]


def stretches(rings, rest, x):
    """vec6(S_r − I) of every region: A_r = A_pq A_qq^-1 with equal masses, S_r = polar(A_r)."""
    d = np.zeros((len(rings), 6))
    for r, members in enumerate(rings):
        q = rest[members] - rest[members].mean(axis=0)
        p = x[members] - x[members].mean(axis=0)
        a = (p.T @ q) @ np.linalg.inv(q.T @ q)
        u, s, vt = np.linalg.svd(a)
        if np.linalg.det(u @ vt) < 0:
            s[2] *= -1
        S = vt.T @ np.diag(s) @ vt - np.eye(3)
        d[r] = [S[0, 0], S[1, 1], S[2, 2], S[0, 1], S[0, 2], S[1, 2]]
    return d


def car_examples(rest):
    """The squash (factor 0.5, start 0.7) and shear (25 degrees up, start 0.7) examples of
    cars-wall.yaml, as src/methods/shape_matching/ExampleShapes.cpp makes them."""
    lo, hi = rest.min(axis=0), rest.max(axis=0)
    length, centre = hi[0] - lo[0], (lo + hi) / 2
    s = rest[:, 0] - lo[0]
    s0 = 0.7 * length
    beyond = s > s0
    squash = rest.copy()
    ramp = np.minimum(1, (s - s0) / (length - s0))
    widen = 1 + (1 / np.sqrt(0.5) - 1) * ramp
    squash[beyond, 0] = lo[0] + s0 + 0.5 * (s[beyond] - s0)
    for b in (1, 2):
        squash[beyond, b] = centre[b] + widen[beyond] * (rest[beyond, b] - centre[b])
    shear = rest.copy()
    shear[beyond, 1] += np.tan(np.radians(25)) * (s[beyond] - s0)
    return {"squash": squash, "shear": shear}


def cmd_cars(args):
    entries = outputs(args.dir)
    f = Frame(nearest(entries, args.time)[1])
    f0 = Frame(entries[0][1])
    bodies = f.bodies()
    names = args.labels or [f"car {chr(65 + b)}" for b in bodies]
    print(f"# t = {f.t:.3f} s")
    print("# car  length (m)  nose height above tail (m)  nose top y (m)  mean W'_1  max W'_1")
    for b, name in zip(bodies, names):
        sel = f.body == b
        x, rest = f.x[sel], f.rest[sel]
        s = (rest[:, 0] - rest[:, 0].min()) / np.ptp(rest[:, 0])
        nose, tail = s > 0.9, s < 0.3
        print(f"{name:8s} {np.ptp(x[:, 0]):8.3f} (rest {np.ptp(rest[:, 0]):.3f}) "
              f"{x[nose, 1].mean() - x[tail, 1].mean():10.3f} {x[nose, 1].max():10.3f}   "
              f"{f.w1[sel].mean():.4f}  {f.w1[sel].max():.4f}")
    rest = f.rest[f.body == bodies[0]]
    rings = lattice_rings(rest)
    examples = {k: stretches(rings, rest, v).reshape(-1) for k, v in car_examples(rest).items()}
    print("# correlation <S - S0, S^k - S0> / norms of each car's descriptor with the squash and the "
          "shear example (section 8 test 10)")
    for b, name in zip(bodies, names):
        d = stretches(rings, f.rest[f.body == b], f.x[f.body == b]).reshape(-1)
        row = [float(d @ e / (np.linalg.norm(d) * np.linalg.norm(e))) for e in examples.values()]
        print(f"{name:8s} squash {row[0]:7.3f}  shear {row[1]:7.3f}")
    lo, hi = bounds([f, f0], floor=0.0)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(8.4, 3.4), dpi=args.dpi)
    vmax = max(0.05, float(f.w1.max()))
    sc = None
    for b, name in zip(bodies, names):
        sel = f.body == b
        x = f.x[sel]
        zorder = np.argsort(-x[:, 2])
        ax.scatter(x[zorder, 0], x[zorder, 1] + 0.45 * (len(bodies) - 1 - b), c=f.w1[sel][zorder], s=args.size,
                   cmap="viridis", vmin=0, vmax=vmax, linewidths=0)
        ax.text(lo[0] + 0.02, 0.45 * (len(bodies) - 1 - b) + 0.33, name, fontsize=8)
        yorder = np.argsort(x[:, 1])
        sc = bx.scatter(x[yorder, 0], x[yorder, 2], c=f.w1[sel][yorder], s=args.size, cmap="viridis", vmin=0,
                        vmax=vmax, linewidths=0)
    wall = args.wall
    for a in (ax, bx):
        a.axvline(wall, color="0.3", lw=1.5)
        a.set_aspect("equal")
        a.tick_params(labelsize=7)
        a.set_xlim(lo[0], max(hi[0], wall + 0.05))
    ax.set_ylim(-0.05, 0.45 * len(bodies))
    ax.set_yticks([])
    ax.set_title(f"side views (x-y, stacked), t = {f.t:.2f} s", fontsize=9)
    bx.set_title("top view (x-z)", fontsize=9)
    bx.set_xlabel("x (m)", fontsize=8)
    fig.tight_layout()
    cbar = fig.colorbar(sc, ax=[ax, bx], shrink=0.8, pad=0.02, aspect=25)
    cbar.set_label("example weight W'$_1$", fontsize=8)
    cbar.ax.tick_params(labelsize=7)
    save(fig, args.out, args.dpi)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("frames", help="3-D frames of one run, vertices coloured by W'_1")
    p.add_argument("dir")
    p.add_argument("--times", type=float, nargs="+", default=[0.0, 0.5, 1.0, 2.0])
    p.add_argument("--vmax", type=float, default=1.0, help="top of the W'_1 colour scale")
    p.add_argument("--size", type=float, default=2.0, help="marker size")
    p.add_argument("--width", type=float, default=2.6, help="panel width (inches)")
    p.add_argument("--height", type=float, default=2.6, help="figure height (inches)")
    p.add_argument("--elev", type=float, default=28)
    p.add_argument("--azim", type=float, default=-60)
    p.add_argument("--title")
    p.add_argument("--dpi", type=int, default=90)
    p.add_argument("--out", required=True)
    p = sub.add_parser("history", help="table per output and body")
    p.add_argument("dir")
    p = sub.add_parser("beta", help="twist against time and beta (Fig. 5)")
    p.add_argument("dirs", nargs="+", help="one output directory per beta, named ...beta-B")
    p.add_argument("--title")
    p.add_argument("--dpi", type=int, default=90)
    p.add_argument("--out", required=True)
    p = sub.add_parser("regions", help="W'_1 per vertex after the impact, global vs per-region (Fig. 7)")
    p.add_argument("dirs", nargs="+")
    p.add_argument("--labels", nargs="+", default=["global group", "group per region"])
    p.add_argument("--after", type=float, default=0.2, help="time after the impact (s)")
    p.add_argument("--planes", type=float, nargs="+",
                   default=[0, 0, 0, -0.5, 0.8660254037844386, 0, 0, 0, 0, 0, 1, 0],
                   help="colliders as point and normal, 6 numbers each (default: bar-drop-per-region)")
    p.add_argument("--vmax", type=float)
    p.add_argument("--size", type=float, default=3.0)
    p.add_argument("--elev", type=float, default=20)
    p.add_argument("--azim", type=float, default=-70)
    p.add_argument("--dpi", type=int, default=90)
    p.add_argument("--out", required=True)
    p = sub.add_parser("cars", help="cars after the impact (Fig. 9)")
    p.add_argument("dir")
    p.add_argument("--time", type=float, default=3.0)
    p.add_argument("--labels", nargs="+", default=["A squash", "B shear", "C none"])
    p.add_argument("--wall", type=float, default=1.3)
    p.add_argument("--size", type=float, default=3.0)
    p.add_argument("--dpi", type=int, default=90)
    p.add_argument("--out", required=True)
    args = parser.parse_args()
    {"frames": cmd_frames, "history": cmd_history, "beta": cmd_beta, "regions": cmd_regions,
     "cars": cmd_cars}[args.command](args)


if __name__ == "__main__":
    main()
