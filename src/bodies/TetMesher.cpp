#include "bodies/TetMesher.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/Error.hpp"
#include "io/GmshMesh.hpp"

namespace nendo {

BoxLattice::BoxLattice(const Vec3& min_, const Vec3& max_, Real spacing) : min(min_), max(max_) {
  for (int a = 0; a < 3; ++a)
    cells[a] = std::max(1, static_cast<int>(std::lround((max[a] - min[a]) / spacing)));
}

std::int64_t BoxLattice::vertex_count() const { return std::int64_t{nodes()[0]} * nodes()[1] * nodes()[2]; }

std::int64_t BoxLattice::cube_count() const { return std::int64_t{cells[0]} * cells[1] * cells[2]; }

std::int64_t BoxLattice::vertex_id(int i, int j, int k) const {
  return (std::int64_t{k} * nodes()[1] + j) * nodes()[0] + i;
}

Real BoxLattice::coordinate(int axis, int at) const {
  return min[axis] + (max[axis] - min[axis]) * at / cells[axis];
}

TetMeshPart box_tet_mesh_part(const BoxLattice& lattice, std::array<int, 3> lo, std::array<int, 3> hi) {
  for (int a = 0; a < 3; ++a) {
    lo[a] = std::clamp(lo[a], 0, lattice.cells[a]);
    hi[a] = std::clamp(hi[a], lo[a], lattice.cells[a]);
  }
  TetMeshPart part;
  if (lo[0] == hi[0] || lo[1] == hi[1] || lo[2] == hi[2]) return part;
  const std::array<int, 3> nodes = {hi[0] - lo[0] + 1, hi[1] - lo[1] + 1, hi[2] - lo[2] + 1};
  const std::size_t vertex_count = std::size_t(nodes[0]) * nodes[1] * nodes[2];
  part.mesh.vertices.reserve(3 * vertex_count);
  part.vertex_ids.reserve(vertex_count);
  for (int k = lo[2]; k <= hi[2]; ++k)
    for (int j = lo[1]; j <= hi[1]; ++j)
      for (int i = lo[0]; i <= hi[0]; ++i) {
        const int at[3] = {i, j, k};
        for (int a = 0; a < 3; ++a) part.mesh.vertices.push_back(lattice.coordinate(a, at[a]));
        part.vertex_ids.push_back(lattice.vertex_id(i, j, k));
      }
  auto index = [&](const int at[3]) {
    return static_cast<std::int32_t>(((at[2] - lo[2]) * nodes[1] + at[1] - lo[1]) * nodes[0] + at[0] - lo[0]);
  };
  // Kuhn (Freudenthal) split: one tet per ordering (a, b, c) of the axes, walking from corner 000
  // to 111 one axis at a time.
  static constexpr int kOrders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  const std::size_t cube_count = std::size_t(hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
  part.mesh.tets.reserve(24 * cube_count);
  part.tet_ids.reserve(6 * cube_count);
  const auto& cells = lattice.cells;
  for (int k = lo[2]; k < hi[2]; ++k)
    for (int j = lo[1]; j < hi[1]; ++j)
      for (int i = lo[0]; i < hi[0]; ++i) {
        const std::int64_t cube = (std::int64_t{k} * cells[1] + j) * cells[0] + i;
        for (int o = 0; o < 6; ++o) {
          int at[3] = {i, j, k};
          part.mesh.tets.push_back(index(at));
          for (int step = 0; step < 3; ++step) {
            ++at[kOrders[o][step]];
            part.mesh.tets.push_back(index(at));
          }
          const std::size_t t = part.mesh.tet_count() - 1;
          if (part.mesh.volume(t) < 0) std::swap(part.mesh.tets[4 * t + 2], part.mesh.tets[4 * t + 3]);
          part.tet_ids.push_back(6 * cube + o);
        }
      }
  return part;
}

TetMeshPart tet_mesh_part_near(const TetMesh& whole, std::int64_t first, std::int64_t last, int rings) {
  // reached[v]: the step at which v joined (1: the range itself, s + 1: a corner of a tet taken at
  // step s), 0 while it has not.
  std::vector<std::uint8_t> reached(whole.vertex_count(), 0);
  std::fill(reached.begin() + first, reached.begin() + last, 1);
  std::vector<bool> taken(whole.tet_count(), false);
  for (int step = 1; step <= rings; ++step)
    for (std::size_t t = 0; t < whole.tet_count(); ++t) {
      const std::int32_t* corner = &whole.tets[4 * t];
      if (taken[t] || std::none_of(corner, corner + 4,
                                   [&](std::int32_t v) { return reached[v] != 0 && reached[v] <= step; }))
        continue;
      taken[t] = true;
      for (int a = 0; a < 4; ++a)
        if (reached[corner[a]] == 0) reached[corner[a]] = static_cast<std::uint8_t>(step + 1);
    }
  TetMeshPart part;
  std::vector<std::int32_t> local(whole.vertex_count(), -1);
  for (std::size_t v = 0; v < whole.vertex_count(); ++v) {
    if (reached[v] == 0) continue;
    local[v] = static_cast<std::int32_t>(part.vertex_ids.size());
    part.vertex_ids.push_back(static_cast<std::int64_t>(v));
    part.mesh.vertices.insert(part.mesh.vertices.end(), whole.vertex(v), whole.vertex(v) + 3);
  }
  for (std::size_t t = 0; t < whole.tet_count(); ++t) {
    if (!taken[t]) continue;
    part.tet_ids.push_back(static_cast<std::int64_t>(t));
    for (int a = 0; a < 4; ++a) part.mesh.tets.push_back(local[whole.tets[4 * t + a]]);
  }
  return part;
}

TetMesh box_tet_mesh(const Vec3& min, const Vec3& max, Real spacing) {
  const BoxLattice lattice(min, max, spacing);
  return box_tet_mesh_part(lattice, {0, 0, 0}, lattice.cells).mesh;
}

TetMesh body_tet_mesh(const BodySettings& body, Real spacing) {
  if (body.shape == "box") return box_tet_mesh(body.min, body.max, spacing);
  if (body.shape == "cylinder")
    return gmsh_cylinder(body.center, body.axis, body.radius, body.height, spacing);
  if (body.shape == "sphere") return gmsh_sphere(body.center, body.radius, spacing);
  if (body.shape == "file") return read_gmsh_tet_mesh(body.path);
  throw Error("no tetrahedral mesh for a body of shape '" + body.shape + "'");
}

}  // namespace nendo
