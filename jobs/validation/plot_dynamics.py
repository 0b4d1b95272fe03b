#!/usr/bin/python3
"""Plots of the dynamic validation problems (docs/validation.md §1, §2, §5) from the CSV files the
validation tests write to $NENDO_BINARY_DIR/validation/ when ctest runs them:

    ctest --test-dir build -R 'BarVibrationTest|DiskCollisionTest|UniaxialPatchTest'
    /usr/bin/python3 jobs/validation/plot_dynamics.py --csv build/validation

writes PNG files to docs/images/validation/. Needs Debian's python3-matplotlib (the system
python3; a pyenv or venv python may not have it). A missing CSV skips its figure with a note.
"""
import argparse
import csv
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# validation.md §1
PERIOD = 0.4
AMPLITUDE = 2 * 0.1 / math.pi
ENERGY_PER_SECTION = 0.0025


def read(directory, name):
    """Columns of <directory>/<name>.csv as lists of floats, or None if the file is missing."""
    path = os.path.join(directory, name + ".csv")
    if not os.path.exists(path):
        print(f"plot_dynamics: {path} missing, its figure is skipped", file=sys.stderr)
        return None
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return {key: [float(row[key]) for row in rows] for key in rows[0]}


def save(fig, out, name):
    path = os.path.join(out, name)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"plot_dynamics: wrote {os.path.relpath(path, REPO)}")


def bar_time_series(csv_dir, out):
    sticky = read(csv_dir, "bar_sticky_apic_20")
    runs = [
        ("APIC, sticky wall", sticky, "C0"),
        ("APIC, antisymmetric", read(csv_dir, "bar_antisymmetric_apic_20"), "C1"),
        ("FLIP 1, antisymmetric", read(csv_dir, "bar_antisymmetric_flip1_20"), "C2"),
        ("FLIP 0.99, antisymmetric", read(csv_dir, "bar_antisymmetric_flip099_20"), "C3"),
    ]
    runs = [r for r in runs if r[1] is not None]
    if not runs:
        return
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6.5), sharex=True)
    exact = runs[0][1]
    top.plot(exact["time"], exact["v_cm_exact"], "k-", lw=2.5, alpha=0.3, label=r"exact $(2v_0/\pi)\cos\omega_1 t$")
    for label, data, color in runs[:2]:
        top.plot(data["time"], data["v_cm"], color=color, lw=1, label=label)
    top.axhline(AMPLITUDE * 0.98, color="gray", ls=":", lw=0.8)
    top.axhline(-AMPLITUDE * 0.98, color="gray", ls=":", lw=0.8, label="98 % of the amplitude")
    top.set_ylabel(r"$v_{cm}$ of $0 \leq x \leq L$ (m/s)")
    top.set_title("Bar, first mode, 20 cells, 2x2 particles per cell, dt = 0.1 dx/c")
    top.set_ylim(-0.1, 0.075)
    top.legend(loc="lower center", fontsize=8, ncol=2)
    for label, data, color in runs:
        bottom.plot(data["time"], [e / ENERGY_PER_SECTION for e in data["total_per_section"]], color=color, lw=1,
                    label=label)
    bottom.axhspan(0.99, 1.01, color="green", alpha=0.12, label="gate: drift within 1 %")
    bottom.set_xlabel("t (s)")
    bottom.set_ylabel(r"(kinetic + elastic) / $\rho v_0^2 L/4$")
    bottom.legend(loc="lower left", fontsize=8, ncol=2)
    fig.tight_layout()
    save(fig, out, "bar_vibration.png")


def bar_convergence(csv_dir, out):
    data = read(csv_dir, "bar_convergence")
    if data is None:
        return
    dx, error, drift = data["dx"], data["period_error"], data["energy_drift"]
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    ax.loglog(dx, [100 * e for e in error], "o-", color="C0", label="period error, sticky wall (APIC)")
    ax.loglog(dx, [100 * d for d in drift], "s--", color="C3", label="energy drift over 5 periods, sticky wall")
    ref = [100 * error[0] * (h / dx[0]) for h in dx]
    ax.loglog(dx, ref, "k:", lw=1, label="slope 1")
    ref2 = [100 * drift[0] * (h / dx[0]) ** 2 for h in dx]
    ax.loglog(dx, ref2, "k-.", lw=0.8, label="slope 2")
    ax.plot([dx[0]], [2.0], "v", color="C0", ms=9, label="gates: 2 % at 20 cells, 0.5 % at 80")
    ax.plot([dx[-1]], [0.5], "v", color="C0", ms=9)
    ax.axhline(1.0, color="C3", ls=":", lw=0.8, label="energy gate 1 %")
    for h, e in zip(dx, error):
        ax.annotate(f"{100 * e:.2f} %", (h, 100 * e), textcoords="offset points", xytext=(6, -12), fontsize=8)
    ax.set_xlabel("dx (m)")
    ax.set_ylabel("%")
    ax.set_title("Bar: period error and energy drift against cell size")
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    save(fig, out, "bar_convergence.png")


def disks(csv_dir, out):
    runs = [
        ("APIC, dx = 0.05", read(csv_dir, "disks_apic_0.05"), "C0", "-"),
        ("APIC, dx = 0.025", read(csv_dir, "disks_apic_0.025"), "C1", "-"),
        ("FLIP 0.99, dx = 0.05", read(csv_dir, "disks_flip_0.05"), "C2", "-"),
    ]
    runs = [r for r in runs if r[1] is not None]
    if not runs:
        return
    fig, ax = plt.subplots(figsize=(8, 5))
    for label, data, color, style in runs:
        ax.plot(data["time"], data["kinetic_over_ke0"], color=color, ls=style, lw=1.4, label=f"kinetic, {label}")
        ax.plot(data["time"], data["total_over_ke0"], color=color, ls=":", lw=1.2, label=f"kinetic + elastic, {label}")
    ax.add_patch(plt.Rectangle((1.7, 0), 0.4, 0.10, color="gray", alpha=0.3, label="dip gate: < 0.10 in 1.7-2.1 s"))
    ax.errorbar([3.5], [0.825], yerr=[[0.125], [0.125]], fmt="none", ecolor="C2", capsize=6, lw=2,
                label="FLIP 0.99 peer window 0.70-0.95")
    ax.axhline(1.02, color="k", ls="--", lw=0.8, label="1.02 E0 (never above)")
    ax.set_xlabel("t (s)")
    ax.set_ylabel("energy / KE0 (KE0 = 2.600)")
    ax.set_ylim(0, 1.1)
    ax.set_title("Two elastic disks colliding (Sulsky et al. 1994)")
    ax.legend(fontsize=7.5, loc="center left", bbox_to_anchor=(0.0, 0.45), ncol=1, framealpha=0.9)
    fig.tight_layout()
    save(fig, out, "disks_energy.png")


def patch(csv_dir, out):
    quadratic = read(csv_dir, "patch_uniaxial_quadratic")
    cubic = read(csv_dir, "patch_uniaxial_cubic")
    if quadratic is None:
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    step = quadratic["step"]
    left.plot(step, quadratic["sigma_yy_additive"], "k-", lw=2.5, alpha=0.3, label=r"CB-Geo: $E\sum\Delta t\,\dot\varepsilon$")
    left.plot(step, quadratic["sigma_yy"], "o", color="C0", label=r"nendo $\sigma_{yy}$, quadratic")
    if cubic is not None:
        left.plot(step, cubic["sigma_yy"], "x", color="C1", label=r"nendo $\sigma_{yy}$, cubic")
    left.plot(step, quadratic["sigma_xx"], "s", color="C2", ms=4, label=r"nendo $\sigma_{xx}$")
    left.set_xlabel("step")
    left.set_ylabel("stress (Pa)")
    left.set_title("Uniaxial patch test, E = 1000, v_top = -0.01")
    left.legend(fontsize=8)
    right.plot(step, [s - a for s, a in zip(quadratic["sigma_yy"], quadratic["sigma_yy_additive"])], "o", color="C0",
               label="nendo - CB-Geo, quadratic")
    if cubic is not None:
        right.plot(step, [s - a for s, a in zip(cubic["sigma_yy"], cubic["sigma_yy_additive"])], "x", color="C1",
                   label="nendo - CB-Geo, cubic")
    right.plot(step, [m - a for m, a in zip(quadratic["sigma_yy_multiplicative"], quadratic["sigma_yy_additive"])],
               "k-", lw=1, label=r"$E[(1+\Delta t L_{yy})^n - 1] - E\,n\Delta t L_{yy}$")
    right.set_xlabel("step")
    right.set_ylabel(r"$\sigma_{yy}$ difference (Pa)")
    right.set_title("Multiplicative F update vs additive strain")
    right.legend(fontsize=8)
    fig.tight_layout()
    save(fig, out, "patch_uniaxial.png")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_csv = os.path.join(os.environ.get("NENDO_BINARY_DIR", os.path.join(REPO, "build")), "validation")
    parser.add_argument("--csv", default=default_csv, help="directory of the CSV files (default: %(default)s)")
    parser.add_argument("--out", default=os.path.join(REPO, "docs", "images", "validation"),
                        help="directory of the PNG files (default: %(default)s)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    bar_time_series(args.csv, args.out)
    bar_convergence(args.csv, args.out)
    disks(args.csv, args.out)
    patch(args.csv, args.out)


if __name__ == "__main__":
    main()
