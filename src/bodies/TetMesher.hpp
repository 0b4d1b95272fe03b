#pragma once
// The tetrahedral mesh of a scene body, for the mesh methods: a box is a lattice of cubes, each cut
// into the 6 Kuhn tetrahedra around its main diagonal (conforming across cubes); a sphere or a
// cylinder is meshed by Gmsh; a file body is read by Gmsh. Vertex numbering is fixed by the body
// alone (lattice order, or Gmsh's), so ids built from it do not depend on the rank count.
//
// A box can also be meshed in parts (box_tet_mesh_part): the cubes of a range, with the lattice's
// global vertex and tet ids, bit for bit the vertices and tets of the whole mesh, so that each rank
// can make its own share of a body without anyone holding the whole.
#include <array>
#include <cstdint>

#include "core/TetMesh.hpp"
#include "scene/Scene.hpp"

namespace nendo {

// The cube lattice of a box: `spacing` is the target edge length, stretched so that the box is a
// whole number of cubes on every axis. Vertex (i, j, k) has id (k ny + j) nx + i with n = cells + 1;
// the 6 tets of cube (i, j, k) have ids 6 ((k cy + j) cx + i) + 0..5 with c = cells.
struct BoxLattice {
  Vec3 min, max;
  std::array<int, 3> cells;

  BoxLattice(const Vec3& min, const Vec3& max, Real spacing);
  std::array<int, 3> nodes() const { return {cells[0] + 1, cells[1] + 1, cells[2] + 1}; }
  std::int64_t vertex_count() const;
  std::int64_t cube_count() const;
  std::int64_t vertex_id(int i, int j, int k) const;
  // Coordinate `at` of the lattice along `axis` (at = 0 gives min, at = cells gives max).
  Real coordinate(int axis, int at) const;
};

// A part of a mesh: vertices and tets with their ids in the whole mesh, both ascending; the tets'
// corners are indices into the part's vertices.
struct TetMeshPart {
  TetMesh mesh;
  std::vector<std::int64_t> vertex_ids, tet_ids;
};

// The cubes lo[a] <= c[a] < hi[a] of a box's lattice (clamped to the lattice; empty when a range
// is), with every vertex of those cubes.
TetMeshPart box_tet_mesh_part(const BoxLattice& lattice, std::array<int, 3> lo, std::array<int, 3> hi);

// The tets of `whole` within `rings` tet steps of its vertices [first, last) (1: the tets around
// them; 2: also those around every vertex of those tets), with their vertices and those vertices.
TetMeshPart tet_mesh_part_near(const TetMesh& whole, std::int64_t first, std::int64_t last, int rings);

TetMesh body_tet_mesh(const BodySettings& body, Real spacing);
TetMesh box_tet_mesh(const Vec3& min, const Vec3& max, Real spacing);

}  // namespace nendo
