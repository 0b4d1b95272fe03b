// Meshing a box in parts: each part holds, bit for bit, the vertices and tets of the whole mesh at
// its ids, in the whole mesh's order, and the parts of a split together hold every tet; a part cut
// around a vertex range holds every tet within its tet steps and no other.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "bodies/TetMesher.hpp"

namespace nendo {
namespace {

// Whether the part is the whole mesh at its ids: positions bit for bit, tets corner for corner.
void expect_part_of(const TetMesh& whole, const TetMeshPart& part) {
  ASSERT_EQ(part.vertex_ids.size(), part.mesh.vertex_count());
  ASSERT_EQ(part.tet_ids.size(), part.mesh.tet_count());
  EXPECT_TRUE(std::is_sorted(part.vertex_ids.begin(), part.vertex_ids.end()));
  EXPECT_TRUE(std::is_sorted(part.tet_ids.begin(), part.tet_ids.end()));
  for (std::size_t v = 0; v < part.vertex_ids.size(); ++v)
    EXPECT_EQ(std::memcmp(part.mesh.vertex(v), whole.vertex(part.vertex_ids[v]), 3 * sizeof(Real)), 0);
  for (std::size_t t = 0; t < part.tet_ids.size(); ++t)
    for (int a = 0; a < 4; ++a)
      EXPECT_EQ(part.vertex_ids[part.mesh.tets[4 * t + a]], whole.tets[4 * part.tet_ids[t] + a]);
}

TEST(TetMesher, BoxPartsAreTheWholeMeshAtTheirIds) {
  const Vec3 min = {-0.1, 0.3, 0.05}, max = {0.23, 0.41, 0.32};
  const Real spacing = 0.037;
  const BoxLattice lattice(min, max, spacing);
  const TetMesh whole = box_tet_mesh(min, max, spacing);
  ASSERT_EQ(static_cast<std::int64_t>(whole.vertex_count()), lattice.vertex_count());
  ASSERT_EQ(static_cast<std::int64_t>(whole.tet_count()), 6 * lattice.cube_count());
  for (int a = 0; a < 3; ++a) EXPECT_EQ(lattice.coordinate(a, 0), min[a]);
  // Slabs along each axis, cut at every plane: together every tet once.
  for (int axis = 0; axis < 3; ++axis) {
    std::vector<int> seen(whole.tet_count(), 0);
    for (int cut = 0; cut < lattice.cells[axis]; ++cut) {
      std::array<int, 3> lo = {0, 0, 0}, hi = lattice.cells;
      lo[axis] = cut;
      hi[axis] = cut + 1;
      const TetMeshPart part = box_tet_mesh_part(lattice, lo, hi);
      expect_part_of(whole, part);
      for (std::int64_t t : part.tet_ids) ++seen[t];
    }
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  }
  // An inner box, ranges beyond the lattice (clamped) and an empty range.
  expect_part_of(whole, box_tet_mesh_part(lattice, {1, 0, 2}, {3, 2, 5}));
  const TetMeshPart clamped = box_tet_mesh_part(lattice, {-2, -2, -2}, {99, 99, 99});
  expect_part_of(whole, clamped);
  EXPECT_EQ(clamped.mesh.tets, whole.tets);
  EXPECT_EQ(box_tet_mesh_part(lattice, {2, 0, 0}, {2, 3, 3}).mesh.vertex_count(), 0u);
}

TEST(TetMesher, PartNearARangeHoldsTheTetsWithinItsSteps) {
  const TetMesh whole = box_tet_mesh({0, 0, 0}, {0.3, 0.2, 0.5}, 0.05);
  const std::int64_t first = 40, last = 97;
  std::set<std::int64_t> near;  // vertices within s - 1 steps, then within s
  for (std::int64_t v = first; v < last; ++v) near.insert(v);
  for (int steps = 1; steps <= 2; ++steps) {
    std::set<std::int64_t> tets, next = near;
    for (std::size_t t = 0; t < whole.tet_count(); ++t)
      for (int a = 0; a < 4; ++a)
        if (near.count(whole.tets[4 * t + a])) {
          tets.insert(static_cast<std::int64_t>(t));
          for (int b = 0; b < 4; ++b) next.insert(whole.tets[4 * t + b]);
        }
    const TetMeshPart part = tet_mesh_part_near(whole, first, last, steps);
    expect_part_of(whole, part);
    EXPECT_EQ(std::vector<std::int64_t>(tets.begin(), tets.end()), part.tet_ids);
    EXPECT_EQ(std::vector<std::int64_t>(next.begin(), next.end()), part.vertex_ids);
    near = next;
  }
}

}  // namespace
}  // namespace nendo
