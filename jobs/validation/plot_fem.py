#!/usr/bin/python3
"""Validation measurements of the hierarchical FEM (spec 004 section 8, tests 5-9) and their plots.

Runs nendo (or reads the outputs of an earlier invocation: a run is reused when RUNS/NAME/cmd.txt
holds the same command) and prints, with PASS/FAIL against the spec's gates:

test 5  small deformation (jobs/scenes/fem/cantilever-small.yaml, E = 1e7 Pa, 0.5 s): per-step
        time t_fine/t_hier (stage times of nendo, output excluded) >= 10; max over the outputs and
        the 20 level-0 nodes of |x_hier - x_fine| / L <= 0.02 (L = 0.4 m); tip-sag ratio hier/fine
        at the end (expected < 1, locking).
        Then the moderate case of issue 28 (cantilever-moderate.yaml, E = 2.3e6 Pa, fine sag 4 % of
        L, 0.5 s): the same error gate for the default selection; reported, not gated: the paper's
        criterion alone (fem.error_tolerance = 1e9, which stays at level 0) and t_hier/t_fine.
test 6  large deformation (cantilever-large.yaml, E = 3e5 Pa, 2 s): at peak sag (the output with the
        lowest hierarchical tip) the fraction of the volume of the slab x < 0.1 m covered by active
        level-3 tets >= 50 %; t_hier <= 1.3 t_fine; tip-trajectory error
        max_t |w_hier - w_fine| / max_t |w_fine| <= 0.25.
test 7  the sweep delta_lin in {0.005, 0.01, 0.02, 0.05} x tau_agree in {0.001, 0.01} on the large
        case with the paper's criterion alone (fem.error_tolerance = 1e9: the spec's sweep of the
        paper's knobs; at the default tau_err the error indicator decides), and tau_err in {0.001,
        0.003, 0.01, 0.03} at the scene's defaults: the tip-trajectory error must not increase as a
        tolerance decreases; and delta_lin = 0 (all bounds 0: refine everywhere) must track the fine
        mesh within 1e-3 L.
test 8  anisotropy (cantilever-fibre-x.yaml, cantilever-fibre-z.yaml, k_f = 9 E): sag(x) < sag(z)
        and the ratio sag(z)/sag(x) of the hierarchical runs within 10 % of the fine runs'.
        Also run with fem.min_level = 2 (the spec's locking remedy, an extension): reported, not gated.
test 9  checkerboard (cantilever-checkerboard.yaml, soft E = 1e7 / stiff 10 E, cells of 0.025 m):
        the sag lies between the all-soft and all-stiff beams (hierarchical and fine), and the
        hierarchical run is within 0.02 L of the fine one (max over outputs and level-0 nodes).
        Also run with fem.min_level = 2, reported, not gated.

Definitions. Tip: the 4 level-0 nodes at rest x = 0.4 m; w_tip its mean z displacement; sag =
-w_tip at the end. Rest positions of all 2 673 nodes: the first output of a uniform fine run
(every node is present at t = 0 there). Active tets: /mesh/tets of the output files (rows of
/particles), their level from /mesh/fields/level when written, else from their rest volume
(each red refinement divides it by 8). Per-step time: the sum of nendo's `time per stage (max over
ranks)` over the steps (10 ms resolution).

    /usr/bin/python3 jobs/validation/plot_fem.py PLOTDIR [--runs /tmp/nendo-fem-validation]
        [--only 5 6 7 8 9] [--quick] [--rerun] [--ranks 1] [--build build]

--quick: 0.1 s of the small, fibre and checkerboard cases, 0.6 s of the large case and the sweep
(the first swing's peak sag is near 0.36 s). Plots in PLOTDIR: tip_small.png, tip_large.png,
levels_large.png (active tets per level and the level-3 coverage of the wall slab over time),
energy_large.png (kinetic and total energy hier vs fine), sweep.png, tip_fibre_checker.png.

Needs Debian's python3-h5py, python3-numpy and python3-matplotlib (the system /usr/bin/python3).
"""
import argparse
import csv
import glob
import math
import os
import re
import subprocess
import sys

import h5py
import numpy as np

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCENES = os.path.join(ROOT, "jobs", "scenes", "fem")
L = 0.4  # beam length (m)
SLAB = 0.1  # the wall slab x < 0.1 m of test 6
LEVEL0_TET_VOLUME = 0.1 ** 3 / 6  # a level-0 cube of 0.1 m cut into 6 Kuhn tets
FINE = ["--set", "fem.min_level=3"]
# tests 8 and 9 also run min_level = 2 (spec section 8 locking note: an extension, not the paper)
MESH_SETS = {"hier": [], "fine": FINE, "hier-min2": ["--set", "fem.min_level=2"]}
DELTAS = [0.005, 0.01, 0.02, 0.05]
TAUS = [0.001, 0.01]
ERRORS = [0.001, 0.003, 0.01, 0.03]  # tau_err; 0.003 is the default
PAPER = ["--set", "fem.error_tolerance=1e9"]  # the paper's criterion alone: no strain reaches this
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


# ---------------------------------------------------------------------------------------------
# Runs


class Run:
    """One nendo run: its outputs, stage times and derived series."""

    def __init__(self, directory):
        self.dir = directory
        with open(os.path.join(directory, "stdout.txt")) as f:
            text = f.read()
        line = re.search(r"time per stage \(max over ranks\): (.*)", text).group(1)
        self.stages = {k: float(v) for k, v in re.findall(r"(\w+) (\S+) s \(", line)}
        done = re.search(r"(\d+) steps to t = \S+ in (\S+) s", text)
        self.steps, self.wall = int(done.group(1)), float(done.group(2))
        self.ms_per_step = 1e3 * sum(self.stages.values()) / self.steps
        with open(os.path.join(directory, "diagnostics.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
        self.diag = {k: np.array([float(r[k]) for r in rows]) for k in rows[0]}
        self.files = sorted(glob.glob(os.path.join(directory, "particles_*.h5")))
        self._frames = None

    def frames(self):
        """[(t, ids sorted, positions, status, level, tets as id quadruples or None)]"""
        if self._frames is None:
            self._frames = [read_frame(p) for p in self.files]
        return self._frames

    def times(self):
        return np.array([f[0] for f in self.frames()])

    def level0(self):
        """positions of nodes 0..19 per output, shape (outputs, 20, 3)"""
        out = []
        for t, ids, x, *_ in self.frames():
            assert np.array_equal(ids[:20], np.arange(20)), "level-0 nodes missing in %s" % self.dir
            out.append(x[:20])
        return np.array(out)

    def finite(self):
        return all(np.isfinite(f[2]).all() for f in self.frames()) and np.isfinite(self.diag["kinetic_energy"]).all()


def read_frame(path):
    with h5py.File(path, "r") as f:
        t = float(f.attrs["time"])
        p = f["particles"]
        ids = p["id"][:].astype(np.int64)
        order = np.argsort(ids)
        x = p["position"][:][order]
        status = p["status"][:][order] if "status" in p else None
        level = p["level"][:][order] if "level" in p else None
        tets = tet_levels = None
        if "mesh" in f and "tets" in f["mesh"]:
            tets = ids[f["mesh/tets"][:]]  # rows of /particles -> node ids
            if "fields" in f["mesh"] and "level" in f["mesh/fields"]:
                tet_levels = f["mesh/fields/level"][:]
    return t, ids[order], x, status, level, (tets, tet_levels)


def nendo(args, name, scene, extra):
    """Runs (or reuses) one case; returns its Run."""
    out = os.path.join(args.runs, name)
    cmd = ["mpirun", "-np", str(args.ranks), "--bind-to", "none", os.path.join(args.build, "src", "app", "nendo"),
           "run", os.path.join(SCENES, scene), "--output", out, "--overwrite", *extra]
    stamp = os.path.join(out, "cmd.txt")
    if not args.rerun and os.path.exists(stamp) and open(stamp).read() == " ".join(cmd):
        return Run(out)
    for old in glob.glob(os.path.join(out, "particles_*.h5")):
        os.remove(old)
    print("running: " + " ".join(cmd), flush=True)
    done = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **MPI_ENV))
    if done.returncode != 0:
        sys.exit("%s\n%s\n%s" % (" ".join(cmd), done.stdout, done.stderr))
    with open(os.path.join(out, "stdout.txt"), "w") as f:
        f.write(done.stdout)
    with open(stamp, "w") as f:
        f.write(" ".join(cmd))
    return Run(out)


def sets(**keys):
    out = []
    for k, v in keys.items():
        out += ["--set", "%s=%s" % (k.replace("__", "."), v)]
    return out


# ---------------------------------------------------------------------------------------------
# Measures


class Rest:
    """Rest positions of every node id, from the first output of a uniform fine run."""

    def __init__(self, fine_run):
        t, ids, x, _, level, _ = read_frame(fine_run.files[0])
        assert t == 0.0 and len(ids) == 2673, "%s: not the t = 0 output of a uniform fine run" % fine_run.dir
        self.x = np.full((ids.max() + 1, 3), np.nan)
        self.x[ids] = x
        self.level = np.zeros(ids.max() + 1, int)
        self.level[ids] = level
        self.tip = np.where(np.isclose(self.x[:20, 0], L))[0]
        self.wall_level3 = np.where(self.x[:, 0] < SLAB - 1e-9)[0]


def tip_w(run, rest):
    """mean z displacement of the level-0 tip nodes per output"""
    x0 = run.level0()
    return (x0[:, rest.tip, 2] - rest.x[rest.tip, 2]).mean(axis=1)


def aligned(hier, fine):
    th, tf = hier.times(), fine.times()
    n = min(len(th), len(tf))
    assert np.allclose(th[:n], tf[:n], atol=1e-9), "output times differ: %s %s" % (hier.dir, fine.dir)
    return n


def level0_error(hier, fine):
    """max over outputs and level-0 nodes of |x_hier - x_fine| / L"""
    n = aligned(hier, fine)
    return np.linalg.norm(hier.level0()[:n] - fine.level0()[:n], axis=2).max() / L


def tip_error(hier, fine, rest):
    """max_t |w_hier - w_fine| / max_t |w_fine| and the absolute max_t |w_hier - w_fine|"""
    n = aligned(hier, fine)
    d = np.abs(tip_w(hier, rest)[:n] - tip_w(fine, rest)[:n]).max()
    return d / np.abs(tip_w(fine, rest)[:n]).max(), d


def tet_levels(frame, rest):
    """level of each active tet of an output (None if the output has no mesh)"""
    tets, levels = frame[5]
    if tets is None:
        return None
    if levels is not None:
        return levels
    p = rest.x[tets]  # (T, 4, 3)
    vol = np.abs(np.einsum("ij,ij->i", p[:, 1] - p[:, 0], np.cross(p[:, 2] - p[:, 0], p[:, 3] - p[:, 0]))) / 6
    return np.rint(np.log(LEVEL0_TET_VOLUME / vol) / np.log(8)).astype(int)


def slab_coverage(frame, rest):
    """(fraction of the slab x < 0.1 covered by active level-3 tets from the mesh or None,
    fraction of its level-3 nodes present, fraction regular): the last two are node estimates"""
    levels = tet_levels(frame, rest)
    exact = None
    if levels is not None:
        tets = frame[5][0]
        centroid_x = rest.x[tets][:, :, 0].mean(axis=1)
        in_slab = (levels == 3) & (centroid_x < SLAB)
        exact = in_slab.sum() * LEVEL0_TET_VOLUME / 8 ** 3 / SLAB ** 3
    t, ids, x, status, level = frame[:5]
    fine3 = np.intersect1d(rest.wall_level3, np.where(rest.level == 3)[0])
    present = np.isin(fine3, ids)
    regular = np.isin(fine3, ids[status == 1]) if status is not None else present
    return exact, present.mean(), regular.mean()


def per_level_counts(run, rest):
    """(times, counts[level] per output): active tets if the outputs hold the mesh, else present nodes"""
    rows, kind = [], "active tets"
    for frame in run.frames():
        levels = tet_levels(frame, rest)
        if levels is None:
            kind, levels = "present nodes", frame[4]
        rows.append(np.bincount(levels, minlength=4)[:4])
    return run.times(), np.array(rows), kind


def total_energy(run):
    """kinetic + elastic + gravitational (sum of m g z, from the outputs' mass field) per output"""
    pe = []
    for path in run.files:
        with h5py.File(path, "r") as f:
            pe.append(9.81 * np.dot(f["particles/mass"][:], f["particles/position"][:, 2]))
    n = min(len(pe), len(run.diag["time"]))
    return run.diag["kinetic_energy"][:n] + run.diag["elastic_energy"][:n] + np.array(pe[:n]) - pe[0]


def energy_rise(run):
    """largest rise of the total energy between consecutive outputs (damping only removes energy)
    and the largest drop, both over the largest kinetic energy"""
    e = np.diff(total_energy(run))
    scale = run.diag["kinetic_energy"].max()
    return e.max() / scale, -e.min() / scale


def gate(name, ok):
    return "%s: %s" % (name, "PASS" if ok else "FAIL")


# ---------------------------------------------------------------------------------------------
# Tests


def test5(args, rest_holder):
    end = 0.1 if args.quick else 0.5
    extra = sets(time__end=end, output__every=0.005, output__fields="[velocity,status,level,mass]")
    hier = nendo(args, "small-hier", "cantilever-small.yaml", extra)
    fine = nendo(args, "small-fine", "cantilever-small.yaml", extra + FINE)
    rest = rest_holder(fine)
    speedup = fine.ms_per_step / hier.ms_per_step
    err = level0_error(hier, fine)
    wh, wf = tip_w(hier, rest), tip_w(fine, rest)
    print("\n## Test 5: small deformation (E = 1e7 Pa, %g s, %d steps)" % (end, hier.steps))
    print("run | ms/step (stages) | stages (s) | max active nodes | finite")
    for name, r in (("hier", hier), ("fine", fine)):
        print("%s | %.4f | %s | %d | %s" % (name, r.ms_per_step, r.stages, r.diag["particles"].max(), r.finite()))
    print("t_fine/t_hier = %.1f; max |x_hier - x_fine| over level-0 nodes = %.3g L (%.3g mm); "
          "tip sag hier %.3f mm, fine %.3f mm, ratio %.3f; fine tip min %.3f mm" %
          (speedup, err, 1e3 * err * L, -1e3 * wh[-1], -1e3 * wf[-1], wh[-1] / wf[-1], 1e3 * wf.min()))
    print(gate("speed-up >= 10", speedup >= 10), "|", gate("error <= 0.02 L", err <= 0.02))
    plot_tip(args, "tip_small.png", "Small deformation (E = 1e7 Pa)", [("hierarchical", hier), ("uniform level 3", fine)], rest)

    extra = sets(time__end=0.1 if args.quick else 0.5, output__every=0.005,
                 output__fields="[velocity,status,level,mass]")
    mod = nendo(args, "moderate-hier", "cantilever-moderate.yaml", extra)
    paper = nendo(args, "moderate-paper", "cantilever-moderate.yaml", extra + PAPER)
    mod_fine = nendo(args, "moderate-fine", "cantilever-moderate.yaml", extra + FINE)
    print("\n## Test 5, moderate deformation (issue 28: E = 2.3e6 Pa, %d steps)" % mod.steps)
    print("run | ms/step (stages) | max active nodes | max level-0 node error / L | tip sag at the end (mm) | finite")
    for name, r in (("hier", mod), ("paper's criterion alone", paper), ("fine", mod_fine)):
        print("%s | %.4f | %d | %.4f | %.2f | %s" % (name, r.ms_per_step, r.diag["particles"].max(),
                                                     level0_error(r, mod_fine), -1e3 * tip_w(r, rest)[-1], r.finite()))
    mod_err = level0_error(mod, mod_fine)
    print("t_hier/t_fine = %.3f; the paper's criterion alone: %.3f" %
          (mod.ms_per_step / mod_fine.ms_per_step, paper.ms_per_step / mod_fine.ms_per_step))
    print(gate("error <= 0.02 L", mod_err <= 0.02))
    plot_tip(args, "tip_moderate.png", "Moderate deformation (E = 2.3e6 Pa)",
             [("hierarchical", mod), ("paper's criterion alone", paper), ("uniform level 3", mod_fine)], rest)
    return hier, fine


def test6(args, rest_holder):
    end = 0.6 if args.quick else 2.0
    extra = sets(time__end=end, output__every=0.005, output__fields="[velocity,status,level,mass]")
    hier = nendo(args, "large-hier", "cantilever-large.yaml", extra)
    fine = nendo(args, "large-fine", "cantilever-large.yaml", extra + FINE)
    rest = rest_holder(fine)
    wh = tip_w(hier, rest)
    peak = int(np.argmin(wh))
    frames = hier.frames()
    exact, present, regular = slab_coverage(frames[peak], rest)
    ratio = hier.ms_per_step / fine.ms_per_step
    rel, absolute = tip_error(hier, fine, rest)
    print("\n## Test 6: large deformation (E = 3e5 Pa, %g s, %d steps)" % (end, hier.steps))
    print("run | ms/step (stages) | stages (s) | max active nodes | finite")
    for name, r in (("hier", hier), ("fine", fine)):
        print("%s | %.4f | %s | %d | %s" % (name, r.ms_per_step, r.stages, r.diag["particles"].max(), r.finite()))
    print("peak sag at t = %.3f s: hier %.4f m, fine min %.4f m (at %.3f s)" %
          (frames[peak][0], -wh[peak], -tip_w(fine, rest).min(), fine.times()[np.argmin(tip_w(fine, rest))]))
    print("level-3 coverage of the slab x < 0.1 m at peak sag: %s; level-3 nodes of the slab present %.1f %%, "
          "regular %.1f %% (node estimates)" %
          ("%.1f %% (active tets)" % (100 * exact) if exact is not None else "n/a (no /mesh in the output)",
           100 * present, 100 * regular))
    cov = [slab_coverage(f, rest)[0] for f in frames]
    if cov[0] is not None:
        print("coverage over time: max %.1f %% at t = %.3f s, at the end %.1f %%" %
              (100 * max(cov), frames[int(np.argmax(cov))][0], 100 * cov[-1]))
    print("t_hier/t_fine = %.3f; tip-trajectory error = %.3f (max |dw| = %.4f m = %.4f L); "
          "level-0 node error max %.3g L" % (ratio, rel, absolute, absolute / L, level0_error(hier, fine)))
    (rise_h, drop_h), (rise_f, drop_f) = energy_rise(hier), energy_rise(fine)
    ke_jump = np.diff(hier.diag["kinetic_energy"]).max() / hier.diag["kinetic_energy"].max()
    print("total energy (kinetic + elastic + gravity) between outputs, over the max KE: largest rise hier %.4f, "
          "fine %.4f; largest drop hier %.4f, fine %.4f; largest KE rise hier %.3f; final KE hier %.4g, fine %.4g J" %
          (rise_h, rise_f, drop_h, drop_f, ke_jump, hier.diag["kinetic_energy"][-1], fine.diag["kinetic_energy"][-1]))
    cover = exact if exact is not None else regular
    print(gate("level-3 coverage >= 50 %", cover >= 0.5), "|", gate("t_hier <= 1.3 t_fine", ratio <= 1.3), "|",
          gate("tip error <= 0.25", rel <= 0.25))
    plot_tip(args, "tip_large.png", "Large deformation (E = 3e5 Pa)", [("hierarchical", hier), ("uniform level 3", fine)], rest)
    plot_levels(args, hier, rest)
    plot_energy(args, hier, fine)
    return hier, fine


def test7(args, rest_holder, large):
    end = 0.6 if args.quick else 2.0
    extra = sets(time__end=end, output__every=0.005, output__fields="[velocity,status,level,mass]")
    hier_default, fine = large
    rest = rest_holder(fine)
    rows = []
    for tau in TAUS:
        for delta in DELTAS:
            run = nendo(args, "sweep-paper-d%g-t%g" % (delta, tau), "cantilever-large.yaml",
                        extra + PAPER + sets(fem__linear_tolerance=delta, fem__agree_tolerance=tau))
            rel, absolute = tip_error(run, fine, rest)
            rows.append((delta, tau, rel, absolute / L, level0_error(run, fine), run.ms_per_step / fine.ms_per_step,
                         run.diag["particles"].mean(), run.finite()))
    error_rows = []
    for tol in ERRORS:
        run = hier_default if tol == 0.003 else nendo(args, "sweep-e%g" % tol, "cantilever-large.yaml",
                                                      extra + sets(fem__error_tolerance=tol))
        rel, absolute = tip_error(run, fine, rest)
        error_rows.append((tol, rel, absolute / L, level0_error(run, fine), run.ms_per_step / fine.ms_per_step,
                           run.diag["particles"].mean(), run.finite()))
    zero = nendo(args, "sweep-d0", "cantilever-large.yaml", extra + sets(fem__linear_tolerance=0))
    zero_rel, zero_abs = tip_error(zero, fine, rest)
    print("\n## Test 7: sweep on the large case (%g s)" % end)
    print("The paper's criterion alone (fem.error_tolerance = 1e9):")
    print("delta_lin | tau_agree | tip error (rel) | max |dw_tip| / L | level-0 error / L | t_hier/t_fine | "
          "mean active nodes | finite")
    for r in rows:
        print("%g | %g | %.4f | %.4f | %.4f | %.3f | %.0f | %s" % r)
    print("The error indicator at the default delta_lin and tau_agree:")
    print("tau_err | tip error (rel) | max |dw_tip| / L | level-0 error / L | t_hier/t_fine | mean active nodes | finite")
    for r in error_rows:
        print("%g | %.4f | %.4f | %.4f | %.3f | %.0f | %s" % r)
    print("delta_lin = 0: tip error %.4f (rel), max |dw_tip| = %.3g L, t/t_fine %.3f, mean active nodes %.0f, "
          "first output with every node: t = %s" %
          (zero_rel, zero_abs / L, zero.ms_per_step / fine.ms_per_step, zero.diag["particles"].mean(),
           next(("%.3f s" % t for t, n in zip(zero.diag["time"], zero.diag["particles"]) if n == 2673), "never")))
    monotone = True
    for tau in TAUS:
        errs = [r[2] for r in rows if r[1] == tau]  # delta increasing
        monotone &= all(a <= b for a, b in zip(errs, errs[1:]))
    for delta in DELTAS:
        errs = [r[2] for r in rows if r[0] == delta]  # tau increasing
        monotone &= errs[0] <= errs[1]
    errs = [r[1] for r in error_rows]  # tau_err increasing
    monotone_error = all(a <= b for a, b in zip(errs, errs[1:]))
    print(gate("error non-increasing as the tolerances decrease (paper's criterion)", monotone), "|",
          gate("... as tau_err decreases", monotone_error), "|",
          gate("delta_lin = 0 within 1e-3 L of fine", zero_abs <= 1e-3 * L))
    plot_sweep(args, rows, zero_rel)


def sag_end(run, rest):
    return -tip_w(run, rest)[-1]


def test8(args, rest_holder):
    end = 0.1 if args.quick else 0.3
    extra = sets(time__end=end, output__every=0.005, output__fields="[velocity,status,level]")
    runs = {(a, m): nendo(args, "fibre-%s-%s" % (a, m), "cantilever-fibre-%s.yaml" % a, extra + MESH_SETS[m])
            for a in ("x", "z") for m in MESH_SETS}
    rest = rest_holder(runs["x", "fine"])
    sag = {k: sag_end(r, rest) for k, r in runs.items()}
    ratio = {m: sag["z", m] / sag["x", m] for m in MESH_SETS}
    print("\n## Test 8: anisotropy (k_f = 9 E, E = 1e7 Pa, %g s)" % end)
    print("fibre | mesh | sag at end (mm) | ms/step | max active nodes | finite")
    for (a, m), r in runs.items():
        print("%s | %s | %.4f | %.4f | %d | %s" % (a, m, 1e3 * sag[a, m], r.ms_per_step, r.diag["particles"].max(),
                                                r.finite()))
    dev = ratio["hier"] / ratio["fine"] - 1
    print("sag(z)/sag(x): hier %.3f, fine %.3f (hier/fine - 1 = %+.1f %%); hier/fine sag: x %.3f, z %.3f" %
          (ratio["hier"], ratio["fine"], 100 * dev, sag["x", "hier"] / sag["x", "fine"],
           sag["z", "hier"] / sag["z", "fine"]))
    print("extension (not the paper), min_level = 2: sag(z)/sag(x) %.3f (%+.1f %% vs fine); hier/fine sag: x %.3f, "
          "z %.3f" % (ratio["hier-min2"], 100 * (ratio["hier-min2"] / ratio["fine"] - 1),
                      sag["x", "hier-min2"] / sag["x", "fine"], sag["z", "hier-min2"] / sag["z", "fine"]))
    print(gate("sag(x) < sag(z) (hier and fine)", sag["x", "hier"] < sag["z", "hier"] and sag["x", "fine"] < sag["z", "fine"]),
          "|", gate("ratio within 10 %", abs(dev) <= 0.10))
    return runs, rest


def test9(args, rest_holder):
    end = 0.1 if args.quick else 0.3
    extra = sets(time__end=end, output__every=0.005, output__fields="[velocity,status,level]")
    variants = {"checker": [], "soft": sets(materials__stiff__E=1e7), "stiff": sets(materials__soft__E=1e8)}
    runs = {(v, m): nendo(args, "%s-%s" % (v, m), "cantilever-checkerboard.yaml", extra + s + MESH_SETS[m])
            for v, s in variants.items() for m in MESH_SETS}
    rest = rest_holder(runs["checker", "fine"])
    sag = {k: sag_end(r, rest) for k, r in runs.items()}
    err = level0_error(runs["checker", "hier"], runs["checker", "fine"])
    print("\n## Test 9: checkerboard (soft 1e7 / stiff 1e8 Pa, cells 0.025 m, %g s)" % end)
    print("beam | mesh | sag at end (mm) | ms/step | max active nodes | finite")
    for (v, m), r in runs.items():
        print("%s | %s | %.4f | %.4f | %d | %s" % (v, m, 1e3 * sag[v, m], r.ms_per_step, r.diag["particles"].max(),
                                                r.finite()))
    between = all(sag["stiff", m] < sag["checker", m] < sag["soft", m] for m in ("hier", "fine"))
    print("checkerboard hier vs fine: max level-0 node error %.3g L (%.3g mm), end sag difference %.3g L, "
          "sag ratio hier/fine %.3f" % (err, 1e3 * err * L, abs(sag["checker", "hier"] - sag["checker", "fine"]) / L,
                                        sag["checker", "hier"] / sag["checker", "fine"]))
    err2 = level0_error(runs["checker", "hier-min2"], runs["checker", "fine"])
    print("extension (not the paper), min_level = 2: checkerboard max level-0 node error %.3g L, sag ratio "
          "hier/fine %.3f (soft %.3f, stiff %.3f)" %
          (err2, sag["checker", "hier-min2"] / sag["checker", "fine"], sag["soft", "hier-min2"] / sag["soft", "fine"],
           sag["stiff", "hier-min2"] / sag["stiff", "fine"]))
    print(gate("stiff < checkerboard < soft sag (hier and fine)", between), "|", gate("within 0.02 L", err <= 0.02))
    return runs, rest


# ---------------------------------------------------------------------------------------------
# Plots


def plot_tip(args, name, title, runs, rest):
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for label, run in runs:
        ax.plot(run.times(), 1e3 * tip_w(run, rest), label=label)
    ax.set_xlabel("t (s)")
    ax.set_ylabel("tip z displacement (mm)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(args.plots, name), dpi=120)
    plt.close(fig)


def plot_levels(args, hier, rest):
    t, counts, kind = per_level_counts(hier, rest)
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    ax.stackplot(t, counts.T, labels=["level %d" % l for l in range(4)])
    ax.set_xlabel("t (s)")
    ax.set_ylabel(kind)
    ax.set_title("Large deformation, hierarchical run: %s per level" % kind)
    cov = [slab_coverage(f, rest)[0] for f in hier.frames()]
    if cov[0] is not None:
        ax2 = ax.twinx()
        ax2.plot(t, 100 * np.array(cov), "k--", label="level-3 coverage of x < 0.1 m")
        ax2.set_ylabel("slab coverage (%)")
        ax2.set_ylim(0, 105)
        ax2.legend(loc="upper right", fontsize=8)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(args.plots, "levels_large.png"), dpi=120)
    plt.close(fig)


def plot_energy(args, hier, fine):
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for (label, run), color in zip((("hierarchical", hier), ("uniform level 3", fine)), ("C0", "C1")):
        ax.plot(run.diag["time"], run.diag["kinetic_energy"], color=color, label=label + ": kinetic")
        e = total_energy(run)
        ax.plot(run.diag["time"][:len(e)], e, color=color, ls="--", label=label + ": total")
    ax.set_xlabel("t (s)")
    ax.set_ylabel("energy (J)")
    ax.set_title("Large deformation: kinetic and total energy (damped)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(args.plots, "energy_large.png"), dpi=120)
    plt.close(fig)


def plot_sweep(args, rows, zero_rel):
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.5))
    for tau in TAUS:
        sel = [r for r in rows if r[1] == tau]
        a1.plot([r[0] for r in sel], [r[2] for r in sel], "o-", label="tau_agree = %g" % tau)
        a2.plot([r[0] for r in sel], [r[5] for r in sel], "o-", label="tau_agree = %g" % tau)
    a1.axhline(zero_rel, color="k", ls=":", label="delta_lin = 0")
    a1.axhline(0.25, color="r", ls="--", lw=0.8, label="test 6 gate")
    for a in (a1, a2):
        a.set_xscale("log")
        a.set_xlabel("delta_lin")
        a.legend(fontsize=8)
    a1.set_ylabel("tip-trajectory error vs fine")
    a2.set_ylabel("t_hier / t_fine per step")
    fig.suptitle("Large deformation: accuracy-speed sweep, the paper's criterion alone")
    fig.tight_layout()
    fig.savefig(os.path.join(args.plots, "sweep.png"), dpi=120)
    plt.close(fig)


def plot_fibre_checker(args, fibre, checker):
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, (runs, rest), title in ((axes[0], fibre, "Anisotropic (k_f = 9E)"), (axes[1], checker, "Checkerboard")):
        if runs is None:
            continue
        for (v, m), run in runs.items():
            style = {"hier": "-", "fine": "--", "hier-min2": ":"}[m]
            ax.plot(run.times(), 1e3 * tip_w(run, rest), style, label="%s %s" % (v, m))
        ax.set_xlabel("t (s)")
        ax.set_ylabel("tip z displacement (mm)")
        ax.set_title(title)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(args.plots, "tip_fibre_checker.png"), dpi=120)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("plots", help="directory of the PNG plots")
    parser.add_argument("--runs", default="/tmp/nendo-fem-validation", help="directory of the nendo outputs")
    parser.add_argument("--only", nargs="+", type=int, default=[5, 6, 7, 8, 9])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rerun", action="store_true", help="run again even if an identical run is there")
    parser.add_argument("--ranks", type=int, default=1)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = parser.parse_args()
    if args.quick:
        args.runs = os.path.join(args.runs, "quick")
    os.makedirs(args.plots, exist_ok=True)
    os.makedirs(args.runs, exist_ok=True)
    cache = {}

    def rest_holder(fine_run):
        if "rest" not in cache:
            cache["rest"] = Rest(fine_run)
        return cache["rest"]

    if 5 in args.only:
        test5(args, rest_holder)
    large = test6(args, rest_holder) if 6 in args.only or 7 in args.only else None
    if 7 in args.only:
        test7(args, rest_holder, large)
    fibre = test8(args, rest_holder) if 8 in args.only else (None, None)
    checker = test9(args, rest_holder) if 9 in args.only else (None, None)
    if 8 in args.only or 9 in args.only:
        plot_fibre_checker(args, fibre, checker)


if __name__ == "__main__":
    main()
