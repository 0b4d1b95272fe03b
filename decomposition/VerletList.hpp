#pragma once
// Neighbour lists that last (Verlet lists with a skin, spec 000 §3.13, spec 003 B11): for each row
// particle, the candidates within reach = support + skin at build time. While no particle has moved
// more than skin/2 since, every pair within the support is still in the lists, so a method rebuilds
// only then (Space::migrate_if_moved makes the same decision for the layout). Rows list their
// neighbours in ascending id order: a sum over a row's pairs within the support is then the same
// bits whatever the rank count and whenever the list was built (a restart rebuilds it).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "decomposition/CellList.hpp"

namespace nendo {

class VerletList {
 public:
  // Rows for `rows` (indices into x, 3 reals each, and id), each listing the `candidates` within
  // `reach` of it at x, itself excluded. Rows come in (cell key, id) order, so that neighbouring
  // rows share their candidates in cache.
  void build(const Real* x, const ParticleId* id, const std::vector<std::uint32_t>& rows,
             const std::vector<std::uint32_t>& candidates, Real reach) {
    // The cell lists and the sorted copy live for the build only: between builds a row costs
    // 4 bytes per neighbour.
    CellList candidate_cells, row_cells;
    candidate_cells.build(x, id, candidates, reach);
    row_cells.build(x, id, rows, reach);
    std::vector<Real> sorted(3 * candidates.size());  // positions in cell order: cells are contiguous
    for (std::uint32_t k = 0; k < candidates.size(); ++k)
      std::copy_n(x + 3 * *candidate_cells.item(k), 3, &sorted[3 * k]);
    row_.clear(), neighbours_.clear(), offset_.assign(1, 0);
    const Real reach2 = reach * reach;
    CellList::Range around[9];
    for (std::size_t cell = 0; cell < row_cells.cells(); ++cell) {
      candidate_cells.around_point(x + 3 * *row_cells.begin(cell), around);
      for (const std::uint32_t* item = row_cells.begin(cell); item != row_cells.end(cell); ++item) {
        const std::uint32_t i = *item;
        const Real* xi = x + 3 * i;
        const std::size_t first = neighbours_.size();
        for (const CellList::Range& r : around) {
          const Real* xj = &sorted[3 * r.begin];
          for (std::uint32_t k = r.begin; k < r.end; ++k, xj += 3) {
            const Real d[3] = {xi[0] - xj[0], xi[1] - xj[1], xi[2] - xj[2]};
            const std::uint32_t j = *candidate_cells.item(k);
            if (d[0] * d[0] + d[1] * d[1] + d[2] * d[2] < reach2 && j != i) neighbours_.push_back(j);
          }
        }
        std::sort(neighbours_.begin() + static_cast<std::ptrdiff_t>(first), neighbours_.end(),
                  [id](std::uint32_t a, std::uint32_t b) { return id[a] < id[b]; });
        row_.push_back(i);
        offset_.push_back(neighbours_.size());
      }
    }
  }

  std::size_t rows() const { return row_.size(); }
  std::uint32_t row(std::size_t r) const { return row_[r]; }
  const std::uint32_t* begin(std::size_t r) const { return neighbours_.data() + offset_[r]; }
  const std::uint32_t* end(std::size_t r) const { return neighbours_.data() + offset_[r + 1]; }
  std::size_t pairs() const { return neighbours_.size(); }
  std::size_t bytes() const {
    return sizeof(std::uint32_t) * (row_.capacity() + neighbours_.capacity()) +
           sizeof(std::size_t) * offset_.capacity();
  }

 private:
  std::vector<std::uint32_t> row_, neighbours_;
  std::vector<std::size_t> offset_;
};

}  // namespace nendo
