#!/usr/bin/env python3
"""Log-log convergence plots of the validation tests (validation.md §4 and §7).

Reads the CSV files that ColumnSelfWeightTest and MmsConvergenceTest write into
$NENDO_BINARY_DIR/validation/ (ctest sets it to the build directory) and writes PNG plots.

    ctest --test-dir build -R 'ColumnSelfWeight|MmsConvergence'
    /usr/bin/python3 jobs/validation/plot_convergence.py build

Needs matplotlib (Debian: python3-matplotlib). Output: docs/images/validation/ unless --out.
"""
import argparse
import csv
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
BASE_STRESS = -1800 * 9.81 * 0.1  # −ρgH, validation.md §4


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def slope_guide(ax, xs, y0, order, label):
    """A line of the given slope through (max x, y0)."""
    x1, x0 = max(xs), min(xs)
    style = {1: "k:", 2: "k--"}.get(order, "k-.")
    ax.loglog([x1, x0], [y0, y0 * (x0 / x1) ** order], style, linewidth=0.8, alpha=0.7, label=label)


def observed_orders(xs, ys):
    return [math.log(ys[i - 1] / ys[i]) / math.log(xs[i - 1] / xs[i]) for i in range(1, len(xs))]


def plot_column(rows, out):
    dx = [float(r["dx"]) for r in rows]
    base = [abs(float(r["error"])) for r in rows]
    lowest = [abs(float(r["lowest_row_error"])) for r in rows]
    peer = [abs(float(r["peer_base_stress"]) - BASE_STRESS) for r in rows if r["peer_base_stress"]]
    fig, ax = plt.subplots(figsize=(6, 4.5))
    orders = ", ".join(f"{p:.2f}" for p in observed_orders(dx, base))
    ax.loglog(dx, base, "o-", label=f"nendo, line through rows at y ≥ 2Δx, at y = 0 (orders {orders})")
    ax.loglog(dx, lowest, "s--", label="nendo, lowest particle row (y = Δx/4)")
    if len(peer) == len(dx):
        orders = ", ".join(f"{p:.2f}" for p in observed_orders(dx, peer))
        ax.loglog(dx, peer, "^-.", label=f"CB-Geo, 25 particles per cell (orders {orders})")
    slope_guide(ax, dx, base[0] * 1.6, 1, "order 1")
    ax.set_xlabel("cell size Δx (m)")
    ax.set_ylabel("|σ_yy(base) + ρgH| (Pa)")
    ax.set_title("§4 column under self-weight: base stress error (exact −1765.8 Pa)")
    ax.title.set_fontsize(10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "column_base_stress.png", dpi=120)
    plt.close(fig)


def plot_column_profile(rows, out):
    fig, ax = plt.subplots(figsize=(6, 4.5))
    by_dx = {}
    for r in rows:
        by_dx.setdefault(float(r["dx"]), []).append(r)
    for dx, series in sorted(by_dx.items(), reverse=True):
        y = [float(r["y"]) / dx for r in series]
        d = [float(r["stress"]) - float(r["exact"]) for r in series]
        ax.plot(y, d, "o-", markersize=3, label=f"Δx = {dx:g} m")
    ax.axhline(0, color="k", linewidth=0.8)
    ax.axvline(2, color="k", linestyle=":", linewidth=1, label="fit starts (2Δx)")
    ax.set_xlim(0, 10)
    ax.set_xlabel("reference height of the particle row, y / Δx")
    ax.set_ylabel("σ_yy − (−ρg(H − y)) (Pa), time-averaged")
    ax.set_title("§4 column: stress error near the roller (2 × 2 particles per cell)")
    ax.title.set_fontsize(10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "column_profile.png", dpi=120)
    plt.close(fig)


def plot_mms(rows, out):
    fig, ax = plt.subplots(figsize=(6, 4.5))
    series = {}
    for r in rows:
        series.setdefault((r["series"], r["kernel"]), []).append(r)
    names = {"image": "free ends at X = −1/2, 3/2", "sticky": "sticky planes at X = 0, 1"}
    for (name, kernel), items in series.items():
        dx = [float(r["dx"]) for r in items]
        err = [float(r["error_l2"]) for r in items]
        orders = ", ".join(f"{p:.2f}" for p in observed_orders(dx, err))
        style = "o-" if name == "image" else "s--"
        ax.loglog(dx, err, style, label=f"{kernel}, {names.get(name, name)} (orders {orders})")
    first = series[next(iter(series))]
    dx = [float(r["dx"]) for r in first]
    slope_guide(ax, dx, float(first[0]["error_l2"]) * 0.5, 2, "order 2")
    if ("sticky", "quadratic") in series:
        sticky = series[("sticky", "quadratic")]
        slope_guide(ax, dx, float(sticky[0]["error_l2"]) * 1.6, 1, "order 1")
    ax.set_xlabel("cell size Δx (m)")
    ax.set_ylabel("L2 displacement error on X ∈ [0, 1] at t = 0.02 (m)")
    ax.set_title("§7 manufactured solution, G = 1e-4, Δt = 0.2Δx/c")
    ax.title.set_fontsize(10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "mms_convergence.png", dpi=120)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build", nargs="?", default="build", help="build directory (ctest's NENDO_BINARY_DIR)")
    parser.add_argument("--out", default=str(REPO / "docs" / "images" / "validation"))
    args = parser.parse_args()
    data = Path(args.build) / "validation"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plots = {
        "column.csv": plot_column,
        "column_profile.csv": plot_column_profile,
        "mms.csv": plot_mms,
    }
    found = 0
    for name, plot in plots.items():
        path = data / name
        if not path.exists():
            print(f"{path}: missing, run its test first", file=sys.stderr)
            continue
        plot(read(path), out)
        found += 1
    print(f"wrote {found} plot(s) into {out}")
    return 0 if found == len(plots) else 1


if __name__ == "__main__":
    sys.exit(main())
