#!/usr/bin/env python3
"""Post-processing of a nendo output directory: plots and probes, with Debian's h5py and matplotlib.

    nendo_post.py info OUT                                   # outputs, times and fields
    nendo_post.py diagnostics OUT [--y kinetic_energy,elastic_energy] [-o diag.png]
    nendo_post.py probe OUT --at 0.5,0.2,0.1 --radius 0.02 --field velocity [-o probe.png] [--csv probe.csv]
    nendo_post.py probe OUT --id 1234 --field position       # follow one particle
    nendo_post.py profile OUT --field velocity --component 1 --axis 2 [--bins 40] [--step -1] [-o profile.png]

OUT is the output directory (`output.dir` of the scene): `diagnostics.csv` and `particles_NNNNNN.h5`,
one file per output, `/particles/<field>` datasets with one row per particle (and per tet for mesh
fields), attributes `time` and `step`. A probe is the mass-weighted mean of a field over the
particles within `--radius` of a point (the particles' own mean where they carry no mass), or the
field of one particle followed by id; it is written as CSV (time, step, particles, components) and,
with -o, as a plot against time. A profile bins one output's particles along an axis and plots the
mass-weighted mean of a field per bin.
"""
import argparse
import csv
import glob
import os
import re
import sys


def require_modules():
    """h5py and numpy, or a one-line error naming the missing ones and their Debian packages."""
    missing = []
    for name in ("numpy", "h5py"):
        try:
            __import__(name)
        except ImportError as error:
            missing.append((name, error))
    if missing:
        names = " and ".join(name for name, _ in missing)
        packages = " ".join(f"python3-{name}" for name, _ in missing)
        details = "; ".join(f"{name}: {error}" for name, error in missing)
        debian = " and run the tool with /usr/bin/python3" if sys.executable != "/usr/bin/python3" else ""
        sys.exit(f"nendo_post: error: {sys.executable} cannot import {names} ({details}). "
                 f"Install the Debian package(s): apt-get install {packages}{debian}, "
                 f"or use a python3 that has {names}")


require_modules()
import h5py  # noqa: E402
import numpy as np  # noqa: E402


def outputs(out):
    """The particle files of an output directory, in step order."""
    files = sorted(glob.glob(os.path.join(out, "particles_*.h5")),
                   key=lambda f: int(re.search(r"particles_(\d+)\.h5$", f).group(1)))
    if not files:
        sys.exit(f"nendo_post: no particles_*.h5 in {out} (is it a nendo output directory?)")
    return files


def particle_field(h, name, path):
    if f"particles/{name}" not in h:
        known = ", ".join(k for k in h["particles"] if h["particles"][k].shape[:1] == h["particles/id"].shape)
        sys.exit(f"nendo_post: {path} has no particle field '{name}' (it has: {known})")
    values = h[f"particles/{name}"][:]
    return values.reshape(len(values), -1).astype(float)


def weights(h):
    return h["particles/mass"][:].astype(float) if "particles/mass" in h else None


def mean(values, w):
    if len(values) == 0:
        return np.full(values.shape[1], np.nan)
    if w is None or w.sum() <= 0:
        return values.mean(axis=0)
    return (w[:, None] * values).sum(axis=0) / w.sum()


def read_csv(path):
    with open(path) as f:
        rows = [line for line in f if not line.startswith("#")]
    reader = csv.DictReader(rows)
    return reader.fieldnames, [{k: float(v) for k, v in r.items()} for r in reader]


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"written: {path}")


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def cmd_info(args):
    for path in outputs(args.out):
        with h5py.File(path, "r") as h:
            n = h["particles/id"].shape[0]
            fields = [k for k in h["particles"] if h["particles"][k].shape[:1] == (n,)]
            print(f"{os.path.basename(path)}  step {int(h.attrs['step'])}  time {float(h.attrs['time']):.6g}  "
                  f"{n} particles  fields: {', '.join(fields)}")


def cmd_diagnostics(args):
    names, rows = read_csv(os.path.join(args.out, "diagnostics.csv"))
    ys = args.y.split(",") if args.y else [n for n in names if n not in ("step", "time", "dt", "wall_seconds")]
    for y in ys + [args.x]:
        if y not in names:
            sys.exit(f"nendo_post: diagnostics.csv has no column '{y}' (it has: {', '.join(names)})")
    plt = pyplot()
    fig, axes = plt.subplots(len(ys), 1, figsize=(7, 2.2 * len(ys)), sharex=True, squeeze=False)
    for ax, y in zip(axes[:, 0], ys):
        ax.plot([r[args.x] for r in rows], [r[y] for r in rows], ".-")
        ax.set_ylabel(y.replace("_", " "), fontsize=9)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel(args.x)
    fig.suptitle(os.path.join(args.out, "diagnostics.csv"), fontsize=9)
    save(fig, args.output or os.path.join(args.out, "diagnostics.png"))


def probe_selection(h, args, path):
    """Which particles of one output the probe takes: the one with --id, or those within --radius of --at."""
    if args.id is not None:
        return h["particles/id"][:] == args.id
    x = h["particles/position"][:]
    at = np.array([float(c) for c in args.at.split(",")])
    if len(at) != x.shape[1]:
        sys.exit(f"nendo_post: --at has {len(at)} coordinates, the scene is {x.shape[1]}D")
    return ((x - at) ** 2).sum(axis=1) <= args.radius ** 2


def what_exists(h, args):
    """What the probe could have asked for in one output: the ids, or the particles' extent and the nearest one."""
    if args.id is not None:
        ids = h["particles/id"][:]
        return f"its {len(ids)} particles have ids {ids.min()} to {ids.max()}" if len(ids) else "it has no particles"
    x = h["particles/position"][:]
    if len(x) == 0:
        return "it has no particles"
    at = np.array([float(c) for c in args.at.split(",")])
    nearest = np.sqrt(((x - at) ** 2).sum(axis=1)).min()
    extent = " x ".join(f"[{lo:.4g}, {hi:.4g}]" for lo, hi in zip(x.min(axis=0), x.max(axis=0)))
    return f"its {len(x)} particles span {extent} m, the nearest is {nearest:.4g} m from the point"


def check_probe_found(series, empty, args):
    """Exits with a message when the probe found no particle at some output (unless --allow-empty)."""
    if not empty:
        return
    asked = (f"particle id {args.id}" if args.id is not None
             else f"no particle within --radius {args.radius:g} of --at {args.at}")
    name, hint = empty[0]
    where = f"{len(empty)} of {len(series)} outputs" if len(empty) < len(series) else f"all {len(series)} outputs"
    if args.id is not None:
        message = f"{asked} is missing from {where}, e.g. {name}: {hint}"
    else:
        message = f"{asked} in {where}, e.g. {name}: {hint}"
    if len(empty) == len(series) or not args.allow_empty:
        extra = "" if len(empty) == len(series) else " (--allow-empty writes NaN rows for them)"
        sys.exit(f"nendo_post: error: probe: {message}{extra}")
    print(f"nendo_post: warning: probe: {message}; their rows are NaN", file=sys.stderr)


def cmd_probe(args):
    if (args.at is None) == (args.id is None):
        sys.exit("nendo_post: probe needs either --at X,Y[,Z] (with --radius) or --id N")
    if args.at is not None and args.radius <= 0:
        sys.exit("nendo_post: probe --at needs --radius > 0 (the particles within it are averaged)")
    series, empty = [], []
    for path in outputs(args.out):
        with h5py.File(path, "r") as h:
            values = particle_field(h, args.field, path)
            chosen = probe_selection(h, args, path)
            if not chosen.any():
                empty.append((os.path.basename(path), what_exists(h, args)))
            w = weights(h)
            series.append((float(h.attrs["time"]), int(h.attrs["step"]), int(chosen.sum()),
                           mean(values[chosen], None if w is None else w[chosen])))
    check_probe_found(series, empty, args)
    components = len(series[0][3])
    header = ["time", "step", "particles"] + [f"{args.field}_{c}" if components > 1 else args.field
                                              for c in range(components)]
    csv_path = args.csv or os.path.join(args.out, f"probe_{args.field}.csv")
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for t, step, n, v in series:
            w.writerow([repr(t), step, n] + [repr(float(c)) for c in v])
    print(f"written: {csv_path}")
    if args.output:
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7, 3.5))
        for c in range(components):
            ax.plot([s[0] for s in series], [s[3][c] for s in series], ".-", label=header[3 + c])
        ax.set_xlabel("time (s)")
        ax.set_title(f"{args.field} at " + (f"particle {args.id}" if args.id is not None
                                              else f"{args.at} (radius {args.radius})"), fontsize=10)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        save(fig, args.output)


def cmd_profile(args):
    path = outputs(args.out)[args.step]
    with h5py.File(path, "r") as h:
        x = h["particles/position"][:, args.axis]
        values = particle_field(h, args.field, path)
        if args.component == "magnitude":
            v = np.linalg.norm(values, axis=1)
        else:
            v = values[:, int(args.component)]
        w = weights(h)
        w = np.ones_like(v) if w is None or w.sum() <= 0 else w
        t = float(h.attrs["time"])
    edges = np.linspace(x.min(), x.max(), args.bins + 1)
    which = np.clip(np.digitize(x, edges) - 1, 0, args.bins - 1)
    mass = np.bincount(which, weights=w, minlength=args.bins)
    sums = np.bincount(which, weights=w * v, minlength=args.bins)
    centres = 0.5 * (edges[1:] + edges[:-1])
    profile = np.where(mass > 0, sums / np.where(mass > 0, mass, 1), np.nan)
    csv_path = args.csv or os.path.join(args.out, f"profile_{args.field}.csv")
    with open(csv_path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow([f"x{args.axis}", f"{args.field}_{args.component}", "weight"])
        for c, p, m in zip(centres, profile, mass):
            out.writerow([repr(float(c)), repr(float(p)), repr(float(m))])
    print(f"written: {csv_path}")
    if args.output:
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(7, 3.5))
        ax.plot(centres, profile, ".-")
        ax.set_xlabel(f"position along axis {args.axis} (m)")
        ax.set_ylabel(f"{args.field} ({args.component})")
        ax.set_title(f"{os.path.basename(path)}, t = {t:.6g} s", fontsize=10)
        ax.grid(alpha=0.3)
        save(fig, args.output)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("info", help="list the outputs and their fields")
    p.add_argument("out")
    p = sub.add_parser("diagnostics", help="plot diagnostics.csv against time")
    p.add_argument("out")
    p.add_argument("--x", default="time")
    p.add_argument("--y", help="comma-separated columns (default: all but step, time, dt)")
    p.add_argument("-o", "--output", help="PNG (default OUT/diagnostics.png)")
    p = sub.add_parser("probe", help="a field at a point or on one particle, over time")
    p.add_argument("out")
    p.add_argument("--field", default="velocity")
    p.add_argument("--at", help="X,Y[,Z] in metres")
    p.add_argument("--radius", type=float, default=0.0, help="particles within this distance of --at (m)")
    p.add_argument("--id", type=int, help="follow the particle with this id")
    p.add_argument("--allow-empty", action="store_true",
                   help="write NaN rows for outputs where the probe finds no particle (default: an error)")
    p.add_argument("--csv", help="CSV (default OUT/probe_FIELD.csv)")
    p.add_argument("-o", "--output", help="PNG of the probe against time")
    p = sub.add_parser("profile", help="a field binned along an axis at one output")
    p.add_argument("out")
    p.add_argument("--field", default="velocity")
    p.add_argument("--component", default="magnitude", help="0, 1, 2 or magnitude")
    p.add_argument("--axis", type=int, default=2)
    p.add_argument("--bins", type=int, default=40)
    p.add_argument("--step", type=int, default=-1, help="index of the output file (default: the last)")
    p.add_argument("--csv", help="CSV (default OUT/profile_FIELD.csv)")
    p.add_argument("-o", "--output", help="PNG of the profile")
    args = ap.parse_args()
    {"info": cmd_info, "diagnostics": cmd_diagnostics, "probe": cmd_probe, "profile": cmd_profile}[args.command](args)


if __name__ == "__main__":
    main()
