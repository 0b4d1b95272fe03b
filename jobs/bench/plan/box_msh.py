#!/usr/bin/python3
"""Writes a box's Kuhn lattice (bodies/TetMesher.cpp's box_tet_mesh: the same vertices, bit for bit,
and tets, in the same order) as an MSH 4.1 ASCII file, for the benchmarks of a mesh file body.

Usage: jobs/bench/plan/box_msh.py MINX MINY MINZ MAXX MAXY MAXZ SPACING PATH
"""
import sys

ORDERS = [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]


def main():
    lo, hi = [float(v) for v in sys.argv[1:4]], [float(v) for v in sys.argv[4:7]]
    spacing, path = float(sys.argv[7]), sys.argv[8]
    cells = [max(1, round((hi[a] - lo[a]) / spacing)) for a in range(3)]
    n = [c + 1 for c in cells]
    count = n[0] * n[1] * n[2]
    coord = [[lo[a] + (hi[a] - lo[a]) * i / cells[a] for i in range(n[a])] for a in range(3)]
    tag = lambda i, j, k: (k * n[1] + j) * n[0] + i + 1
    tets = 6 * cells[0] * cells[1] * cells[2]
    with open(path, "w") as f:
        f.write("$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Entities\n0 0 0 1\n")
        f.write("1 %r %r %r %r %r %r 0 0\n$EndEntities\n" % (*lo, *hi))
        f.write("$Nodes\n1 %d 1 %d\n3 1 0 %d\n" % (count, count, count))
        f.write("".join("%d\n" % t for t in range(1, count + 1)))
        for k in range(n[2]):
            f.write("".join("%r %r %r\n" % (coord[0][i], coord[1][j], coord[2][k])
                            for j in range(n[1]) for i in range(n[0])))
        f.write("$EndNodes\n$Elements\n1 %d 1 %d\n3 1 4 %d\n" % (tets, tets, tets))
        e = 0
        for k in range(cells[2]):
            lines = []
            for j in range(cells[1]):
                for i in range(cells[0]):
                    for order in ORDERS:
                        at = [i, j, k]
                        corners = [tag(*at)]
                        for axis in order:
                            at[axis] += 1
                            corners.append(tag(*at))
                        e += 1
                        lines.append("%d %d %d %d %d\n" % (e, *corners))
            f.write("".join(lines))
        f.write("$EndElements\n")


if __name__ == "__main__":
    main()
