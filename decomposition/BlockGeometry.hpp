#pragma once
// Where cells and blocks are: uniform cells of size dx from an origin, grouped into cubes of B^d
// cells. Grid node i (per axis) sits at origin + i*dx and belongs to block floor(i / B), like cell i.
#include <cmath>

#include "core/Types.hpp"
#include "decomposition/BlockKey.hpp"

namespace nendo {

inline std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

struct BlockGeometry {
  int dimension = 3;
  Real dx = 1.0;
  int block = 4;  // B: cells per block edge
  Vec3 origin{0, 0, 0};

  int block_extent(int axis) const { return axis < dimension ? block : 1; }
  int nodes_per_block() const { return dimension == 3 ? block * block * block : block * block; }
  Real cells_from_origin(const Real* x, int axis) const { return (x[axis] - origin[axis]) / dx; }
  std::int64_t cell(const Real* x, int axis) const {
    return static_cast<std::int64_t>(std::floor(cells_from_origin(x, axis)));
  }
  BlockCoord block_of(const Real* x) const {
    BlockCoord c{0, 0, 0};
    for (int a = 0; a < dimension; ++a) c[a] = static_cast<std::int32_t>(floor_div(cell(x, a), block));
    return c;
  }
  BlockKey key_of(const Real* x) const { return encode_block_key(block_of(x)); }
  // Whether x is finite and inside the blocks that keys address (if not, key_of would throw).
  bool addressable(const Real* x) const {
    const Real reach = Real(kBlockCoordMax) * block;  // in cells
    for (int a = 0; a < dimension; ++a)
      if (!(std::abs(cells_from_origin(x, a)) < reach)) return false;  // NaN fails too
    return true;
  }
  // addressable(x), and if so x's cell on each axis into cells[0..dimension): one division per axis
  // for both.
  bool addressable_cells(const Real* x, std::int64_t* cells) const {
    const Real reach = Real(kBlockCoordMax) * block;
    for (int a = 0; a < dimension; ++a) {
      const Real t = cells_from_origin(x, a);
      if (!(std::abs(t) < reach)) return false;
      cells[a] = static_cast<std::int64_t>(std::floor(t));
    }
    return true;
  }
};

}  // namespace nendo
