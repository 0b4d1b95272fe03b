#pragma once
// A tetrahedral mesh: vertex positions and four vertex indices per tet, positively oriented
// ((x1 − x0) × (x2 − x0) · (x3 − x0) > 0). What the mesh methods (shape matching, FEM) start from.
#include <cstdint>
#include <utility>
#include <vector>

#include "core/Types.hpp"

namespace nendo {

struct TetMesh {
  std::vector<Real> vertices;      // x, y, z per vertex
  std::vector<std::int32_t> tets;  // 4 vertex indices per tet

  std::size_t vertex_count() const { return vertices.size() / 3; }
  std::size_t tet_count() const { return tets.size() / 4; }
  const Real* vertex(std::size_t v) const { return &vertices[3 * v]; }
  // Signed volume of tet t (positive for the orientation above).
  Real volume(std::size_t t) const {
    const Real* a = vertex(tets[4 * t]);
    Real e[3][3];
    for (int k = 0; k < 3; ++k)
      for (int c = 0; c < 3; ++c) e[k][c] = vertex(tets[4 * t + k + 1])[c] - a[c];
    return (e[0][0] * (e[1][1] * e[2][2] - e[1][2] * e[2][1]) -
            e[0][1] * (e[1][0] * e[2][2] - e[1][2] * e[2][0]) +
            e[0][2] * (e[1][0] * e[2][1] - e[1][1] * e[2][0])) /
           6;
  }
  // Swaps the last two corners of every tet of negative volume.
  void orient_positively() {
    for (std::size_t t = 0; t < tet_count(); ++t)
      if (volume(t) < 0) std::swap(tets[4 * t + 2], tets[4 * t + 3]);
  }
};

}  // namespace nendo
