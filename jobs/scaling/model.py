#!/usr/bin/env python3
"""A model of nendo's explicit MPM step on large machines (issue 11; docs/scaling.md explains it).

Weak scaling, n particles per rank, each rank's blocks a cube of b x b x b blocks of B cells
inside a domain filled with material (every rank has 26 neighbours: the worst case):

  T(P) = I * n / R  +  T_p2p  +  T_coll(P)

  n / R      compute: R particle-steps/s per core, measured on one rank (nendo_mpm_bench);
  I          load imbalance (max/mean work), measured on 2 ranks;
  T_p2p      = m * alpha + f * V / beta: m messages per step (ghost scatter and gather, the ghost
             plan's NBX headers and particle migration, to each of the 26 neighbours), V the bytes
             a cube of blocks sends per step (counted exactly below, slice by slice as
             decomposition/GhostExchange.cpp sends them), f the surface factor of nendo's Morton
             partition over a cube (measured: bytes sent on 2 ranks / bytes of a planar cut);
  T_coll(P)  = (2 allreduces * 2 + 2 barriers) * ceil(log2 P) * alpha: the finite-state check and
             particle count (allreduce, recursive doubling) and the NBX barriers of migration and
             the ghost plan (dissemination).

No overlap of the exchange with interior work is assumed (it only helps), and P-independent node
effects (two ranks sharing a memory bus) are kept apart as the measured 1 -> 2 rank efficiency.

    python3 jobs/scaling/model.py [--rate 1.64e6] [--per-rank 512000] [--alpha 1.5e-6 --beta 1.0e10]
    python3 jobs/scaling/model.py --planar 20x10x10 --split-x 10   # bytes of the 2-rank planar cut

The particle methods (issue 34): powder PBD and slave SPH exchange particle halos, not grid windows.
A rank's particles fill a cube of side L = (n / rho)^(1/3); its halo is every copy within one grid
cell dx of it (decomposition/ParticleHalo.hpp), f times the planar count for nendo's Morton
partition:

  H = f rho ((L + 2 dx)^3 - L^3),   T(P) = I n / R + M alpha + H b / beta + C 2 ceil(log2 P) alpha

  b  bytes sent per halo copy per step, M messages per step to 26 neighbours, C collective calls
     per step: measured by `nendo run` on 2 ranks (its "per step and rank" line; halo copies
     counted on the same run), R on one rank (docs/performance.md).

    python3 jobs/scaling/model.py --method pbd_powder [--per-rank 203600]
    python3 jobs/scaling/model.py --method slave_sph [--per-rank 203600]
"""
import argparse
import itertools
import math


def slice_nodes(offset, B, D):
    """Nodes of the window slice that a source block sends to its neighbour at `offset`."""
    n = 1
    for a in range(D):
        n *= {-1: 1, 0: B, 1: 2}[offset[a]]  # window: 1 node below, B in the block, 2 above
    return n


def exchange_bytes(owned, B, D=3):
    """(scatter bytes, gather bytes, neighbour blocks) that the set of blocks `owned` (all of
    them holding particles, in a domain full of particles) sends per step."""
    offsets = [o for o in itertools.product((-1, 0, 1), repeat=D)]
    scatter = gather = 0
    for s in owned:  # our windows reaching blocks owned elsewhere: (1 + D) reals per node
        for o in offsets:
            t = tuple(s[a] + o[a] for a in range(D))
            if t not in owned:
                scatter += slice_nodes(o, B, D) * (1 + D) * 8
    outside = {tuple(s[a] + o[a] for a in range(D)) for s in owned for o in offsets} - owned
    for s in outside:  # their windows reaching our grid blocks: D reals per node come back
        for o in offsets:
            t = tuple(s[a] + o[a] for a in range(D))
            if t in owned:
                gather += slice_nodes(o, B, D) * D * 8
    return scatter, gather


def cube_bytes(b, B):
    owned = set(itertools.product(range(b), repeat=3))
    return exchange_bytes(owned, B)


# Measured here (docs/scaling.md, "Powder PBD and slave SPH"): the step is a PBD frame (8 substeps x
# 4 Jacobi iterations) or a slave SPH step (Delta t = 1 ms, ~14 CG iterations).
PARTICLE_METHODS = {
    "pbd_powder": dict(rate=1.75e6 / 32,   # particle-frames/s: 1.75 M particle-iterations/s, 1 M block
                       density=8.0e6,      # particles per m^3 (spacing 5 mm)
                       dx=0.02,            # grid cell = halo depth, m
                       copy_bytes=5302,    # per halo copy per frame
                       messages=97,        # per frame to each neighbour
                       collectives=45,     # per frame
                       surface=2.83),      # halo copies on 2 ranks / one planar cell layer
    "slave_sph": dict(rate=0.395 * 562119,  # particle-steps/s, the 64^3 cube on the floor
                      density=2.30e6,       # masters and slaves per m^3 (d = 1 cm, 1.2 slaves a master)
                      dx=0.03,
                      copy_bytes=2069,      # per halo copy per step
                      messages=44.5,
                      collectives=103,
                      surface=2.89),
}


def particle_model(args):
    m = PARTICLE_METHODS[args.method]
    n, rho, dx = args.per_rank, m["density"], m["dx"]
    side = (n / rho) ** (1 / 3)
    surface = args.surface if args.surface != 1.0 else m["surface"]
    halo = surface * rho * ((side + 2 * dx) ** 3 - side ** 3)
    volume, messages = halo * m["copy_bytes"], 26 * m["messages"]
    t1 = n / m["rate"]
    print(f"{args.method}: {n:.0f} particles per rank, a cube of {side:.3f} m; halo {halo:.0f} copies "
          f"({halo / n:.2f} per particle, f {surface:g}), {volume:.3e} B and {messages:.0f} messages "
          f"per step, {m['collectives']} collective calls; alpha {args.alpha:.2e} s, beta {args.beta:.2e} B/s")
    print(f"{'ranks':>7} {'compute s':>10} {'p2p s':>10} {'coll s':>10} {'step s':>10} {'efficiency':>10}")
    for p in (int(v) for v in args.ranks.split(",")):
        comp, p2p, coll = (t1, 0.0, 0.0) if p == 1 else (
            args.imbalance * t1, messages * args.alpha + volume / args.beta,
            m["collectives"] * 2 * math.ceil(math.log2(p)) * args.alpha)
        step = comp + p2p + coll
        print(f"{p:>7} {comp:>10.4f} {p2p:>10.2e} {coll:>10.2e} {step:>10.4f} {t1 / step:>10.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", type=float, default=1.64e6, help="particle-steps/s per core on one rank")
    ap.add_argument("--per-rank", type=float, default=512000, help="particles per rank (weak scaling)")
    ap.add_argument("--ppc", type=float, default=8, help="particles per cell")
    ap.add_argument("--block", type=int, default=4, help="cells per block edge")
    ap.add_argument("--alpha", type=float, default=1.5e-6, help="latency, s (default: an InfiniBand-class network)")
    ap.add_argument("--beta", type=float, default=1.0e10, help="bandwidth per rank, B/s")
    ap.add_argument("--imbalance", type=float, default=1.028, help="max/mean work")
    ap.add_argument("--surface", type=float, default=1.0, help="Morton-partition surface factor f")
    ap.add_argument("--node-efficiency", type=float, default=1.0, help="measured 1 -> 2 rank efficiency on a node")
    ap.add_argument("--planar", help="BXxBYxBZ: print the bytes of a planar cut of this block box at --split-x")
    ap.add_argument("--split-x", type=int, default=0)
    ap.add_argument("--ranks", default="1,2,100,1000,10000")
    ap.add_argument("--method", default="mpm", choices=["mpm", *PARTICLE_METHODS])
    args = ap.parse_args()
    if args.method != "mpm":
        return particle_model(args)

    if args.planar:
        nx, ny, nz = (int(v) for v in args.planar.split("x"))
        for side in ("left", "right"):
            sc, ga = planar_cut_bytes((nx, ny, nz), args.split_x, args.block, side == "left")
            print(f"{side}: scatter {sc} B, gather {ga} B, total {sc + ga} B per step")
        return

    cells = args.per_rank / args.ppc
    b = max(1, round(cells ** (1 / 3) / args.block))
    scatter, gather = cube_bytes(b, args.block)
    volume = args.surface * (scatter + gather)
    messages = 4 * 26
    compute = args.imbalance * args.per_rank / args.rate
    print(f"per rank: {args.per_rank:.0f} particles, a cube of {b}^3 blocks of {args.block}^3 cells; "
          f"ghost bytes per step {scatter + gather:.0f} (scatter {scatter}, gather {gather}) x f {args.surface:g}; "
          f"{messages} messages; alpha {args.alpha:.2e} s, beta {args.beta:.2e} B/s")
    print(f"{'ranks':>7} {'compute s':>10} {'p2p s':>10} {'coll s':>10} {'step s':>10} {'efficiency':>10}")
    t1 = args.per_rank / args.rate
    for p in (int(v) for v in args.ranks.split(",")):
        if p == 1:
            comp, p2p, coll = t1, 0.0, 0.0
        else:
            comp = compute
            p2p = messages * args.alpha + volume / args.beta
            coll = (2 * 2 + 2) * math.ceil(math.log2(p)) * args.alpha
        step = comp + p2p + coll
        eff = t1 / step * (args.node_efficiency if p > 1 else 1)
        print(f"{p:>7} {comp:>10.4f} {p2p:>10.2e} {coll:>10.2e} {step:>10.4f} {eff:>10.3f}")


def planar_cut_bytes(box, split, B, left, D=3):
    """(scatter, gather) bytes one side of a planar cut at block x = split sends per step, when the
    blocks of `box` hold particles; grid blocks around them belong to the side their x is on."""
    mine = (lambda t: t[0] < split) if left else (lambda t: t[0] >= split)
    sources = list(itertools.product(*(range(n) for n in box)))
    offsets = list(itertools.product((-1, 0, 1), repeat=D))
    scatter = gather = 0
    for s in sources:
        for o in offsets:
            t = tuple(s[a] + o[a] for a in range(D))
            if mine(s) and not mine(t):
                scatter += slice_nodes(o, B, D) * (1 + D) * 8
            elif not mine(s) and mine(t):
                gather += slice_nodes(o, B, D) * D * 8
    return scatter, gather


if __name__ == "__main__":
    main()
