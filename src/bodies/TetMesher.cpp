#include "bodies/TetMesher.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/Error.hpp"
#include "io/GmshMesh.hpp"

namespace nendo {

TetMesh box_tet_mesh(const Vec3& min, const Vec3& max, Real spacing) {
  std::array<int, 3> cells;
  for (int a = 0; a < 3; ++a)
    cells[a] = std::max(1, static_cast<int>(std::lround((max[a] - min[a]) / spacing)));
  const std::array<int, 3> nodes = {cells[0] + 1, cells[1] + 1, cells[2] + 1};
  TetMesh mesh;
  mesh.vertices.reserve(3 * std::size_t(nodes[0]) * nodes[1] * nodes[2]);
  for (int k = 0; k < nodes[2]; ++k)
    for (int j = 0; j < nodes[1]; ++j)
      for (int i = 0; i < nodes[0]; ++i) {
        const int at[3] = {i, j, k};
        for (int a = 0; a < 3; ++a) mesh.vertices.push_back(min[a] + (max[a] - min[a]) * at[a] / cells[a]);
      }
  auto index = [&](int i, int j, int k) {
    return static_cast<std::int32_t>((k * nodes[1] + j) * nodes[0] + i);
  };
  // Kuhn (Freudenthal) split: one tet per ordering (a, b, c) of the axes, walking from corner 000
  // to 111 one axis at a time.
  static constexpr int kOrders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  mesh.tets.reserve(24 * std::size_t(cells[0]) * cells[1] * cells[2]);
  for (int k = 0; k < cells[2]; ++k)
    for (int j = 0; j < cells[1]; ++j)
      for (int i = 0; i < cells[0]; ++i)
        for (const auto& order : kOrders) {
          int at[3] = {i, j, k};
          mesh.tets.push_back(index(at[0], at[1], at[2]));
          for (int step = 0; step < 3; ++step) {
            ++at[order[step]];
            mesh.tets.push_back(index(at[0], at[1], at[2]));
          }
          const std::size_t t = mesh.tet_count() - 1;
          if (mesh.volume(t) < 0) std::swap(mesh.tets[4 * t + 2], mesh.tets[4 * t + 3]);
        }
  return mesh;
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
