#pragma once
// A hashed cell list in the manner of Green's "CUDA Particles" (spec 000 §3.13, spec 003 B11), the
// neighbour search of the particle methods (slave SPH, powder PBD): items sorted by
// (cell key, id), the key ordering cells z-major, then y, then x. The 3×3 columns of cells around
// a cell are then 9 contiguous ranges, found once per cell by binary search, and a neighbour scan
// visits candidates in (cell key, id) order, which depends on positions only: sums over them come
// out bitwise the same on any rank count. Memory is O(items), whatever the extent of space.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/Types.hpp"

namespace nendo {

class CellList {
 public:
  struct Range {
    std::uint32_t begin = 0, end = 0;
  };

  // items: indices into x (3 reals each) and id; cell: the cell edge.
  void build(const Real* x, const ParticleId* id, const std::vector<std::uint32_t>& items, Real cell) {
    inv_cell_ = 1 / cell;
    entries_.resize(items.size());
    for (std::size_t i = 0; i < items.size(); ++i)
      entries_[i] = {key_of(x + 3 * items[i]), id[items[i]], items[i]};
    std::sort(entries_.begin(), entries_.end(),
              [](const Entry& a, const Entry& b) { return a.key != b.key ? a.key < b.key : a.id < b.id; });
    sorted_.resize(entries_.size());
    cells_.clear();
    starts_.clear();
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      sorted_[i] = entries_[i].index;
      if (i == 0 || entries_[i].key != entries_[i - 1].key)
        cells_.push_back(entries_[i].key), starts_.push_back(i);
    }
    starts_.push_back(entries_.size());
  }

  std::size_t cells() const { return cells_.size(); }
  // Items of cell c, in id order.
  const std::uint32_t* begin(std::size_t c) const { return sorted_.data() + starts_[c]; }
  const std::uint32_t* end(std::size_t c) const { return sorted_.data() + starts_[c + 1]; }
  const std::uint32_t* item(std::uint32_t position) const { return sorted_.data() + position; }

  // The 9 ranges (positions in the sorted items) covering the 27 cells around cell c, ascending.
  void around_cell(std::size_t c, Range out[9]) const { around_key(cells_[c], out); }
  // The same around the cell holding the point x.
  void around_point(const Real* x, Range out[9]) const { around_key(key_of(x), out); }

 private:
  static constexpr std::int64_t kBias = std::int64_t(1) << 20;
  struct Entry {
    std::uint64_t key;
    ParticleId id;
    std::uint32_t index;
  };
  static std::uint64_t pack(std::int64_t i, std::int64_t j, std::int64_t k) {
    return (std::uint64_t(k + kBias) << 42) | (std::uint64_t(j + kBias) << 21) | std::uint64_t(i + kBias);
  }
  std::uint64_t key_of(const Real* x) const {
    return pack(static_cast<std::int64_t>(std::floor(x[0] * inv_cell_)),
                static_cast<std::int64_t>(std::floor(x[1] * inv_cell_)),
                static_cast<std::int64_t>(std::floor(x[2] * inv_cell_)));
  }
  void around_key(std::uint64_t key, Range out[9]) const {
    const std::int64_t mask = (std::int64_t(1) << 21) - 1;
    const std::int64_t i = std::int64_t(key & mask) - kBias, j = std::int64_t((key >> 21) & mask) - kBias,
                       k = std::int64_t(key >> 42) - kBias;
    int n = 0;
    for (int dk = -1; dk <= 1; ++dk)
      for (int dj = -1; dj <= 1; ++dj, ++n) {
        const auto lo = std::lower_bound(cells_.begin(), cells_.end(), pack(i - 1, j + dj, k + dk));
        const auto hi = std::upper_bound(lo, cells_.end(), pack(i + 1, j + dj, k + dk));
        out[n] = {static_cast<std::uint32_t>(starts_[lo - cells_.begin()]),
                  static_cast<std::uint32_t>(starts_[hi - cells_.begin()])};
      }
  }

  Real inv_cell_ = 1;
  std::vector<Entry> entries_;
  std::vector<std::uint32_t> sorted_;
  std::vector<std::uint64_t> cells_;
  std::vector<std::size_t> starts_;
};

}  // namespace nendo
