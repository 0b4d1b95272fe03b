#pragma once
// Neighbour lists that last (Verlet lists with a skin, spec 000 §3.13, spec 003 B11): for each row
// particle, the candidates within reach = support + skin at build time. While no particle has moved
// more than skin/2 since, every pair within the support is still in the lists, so a method rebuilds
// only then (Space::migrate_if_moved makes the same decision for the layout). A row's order
// depends on positions and ids only (see Order), so sums over it are the same bits on any rank
// count.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "decomposition/CellList.hpp"

namespace nendo {

class VerletList {
 public:
  // The order of a row: (cell key, id) at the build — cheapest, but a sum over a row then depends on
  // when the lists were built, so a method using it rebuilds at fixed points of its step (one a
  // restart also starts from); or ascending id — sums do not depend on the build at all.
  enum class Order { kCell, kId };

  // Rows for `rows` (indices into x, 3 reals each, and id), each listing the `candidates` within
  // `reach` of it at x, itself excluded, in `order`. Rows come in (cell key, id) order, so that
  // neighbouring rows share their candidates in cache.
  void build(const Real* x, const ParticleId* id, const std::vector<std::uint32_t>& rows,
             const std::vector<std::uint32_t>& candidates, Real reach, Order order = Order::kId) {
    // The cell lists and the sorted copy live for the build only: between builds a row costs
    // 4 bytes per neighbour. (Cells of reach/2 with a 5 × 5 × 5 search visit 42 % fewer
    // candidates but cost 40 % more in PBD's lists: ~2 particles per cell, 25 range searches.)
    CellList candidate_cells, row_cells;
    candidate_cells.build(x, id, candidates, reach);
    // Rows that are the first candidates (a method's owned particles before its halo copies) are
    // found in the candidates' cells: no second cell list.
    const bool rows_lead = rows_lead_candidates(rows, candidates);
    if (!rows_lead) row_cells.build(x, id, rows, reach);
    std::vector<Real> sorted(3 * candidates.size());  // positions in cell order: cells are contiguous
    for (std::uint32_t k = 0; k < candidates.size(); ++k)
      std::copy_n(x + 3 * *candidate_cells.item(k), 3, &sorted[3 * k]);
    const Real reach2 = reach * reach;
    const std::uint32_t row_end = static_cast<std::uint32_t>(rows.size());
    const CellList& cells = rows_lead ? candidate_cells : row_cells;
    // visit(i, j) for every pair in row order, then done(i) after each row.
    auto scan = [&](auto&& visit, auto&& done) {
      CellList::Range around[9];
      for (std::size_t cell = 0; cell < cells.cells(); ++cell) {
        if (rows_lead &&
            std::none_of(cells.begin(cell), cells.end(cell), [&](std::uint32_t c) { return c < row_end; }))
          continue;
        if (rows_lead)
          candidate_cells.around_cell(cell, around);
        else
          candidate_cells.around_point(x + 3 * *cells.begin(cell), around);
        for (const std::uint32_t* item = cells.begin(cell); item != cells.end(cell); ++item) {
          const std::uint32_t i = *item;
          if (rows_lead && i >= row_end) continue;
          const Real* xi = x + 3 * i;
          for (const CellList::Range& r : around) {
            const Real* xj = &sorted[3 * r.begin];
            for (std::uint32_t k = r.begin; k < r.end; ++k, xj += 3) {
              const Real d[3] = {xi[0] - xj[0], xi[1] - xj[1], xi[2] - xj[2]};
              const std::uint32_t j = *candidate_cells.item(k);
              if (d[0] * d[0] + d[1] * d[1] + d[2] * d[2] < reach2 && j != i) visit(j);
            }
          }
          done(i);
        }
      }
    };
    // The lists are most of a particle method's memory: allocated to size (counted at the first
    // build, 15 % above the last one's after), not grown by doubling (up to 2× the bytes).
    if (neighbours_.capacity() == 0) {
      std::size_t count = 0;
      scan([&](std::uint32_t) { ++count; }, [](std::uint32_t) {});
      neighbours_.reserve(count);
    } else {
      neighbours_.reserve(neighbours_.size() + neighbours_.size() / 7);
    }
    row_.clear(), neighbours_.clear(), offset_.assign(1, 0);
    row_.reserve(rows.size()), offset_.reserve(rows.size() + 1);
    scan([&](std::uint32_t j) { neighbours_.push_back(j); },
         [&](std::uint32_t i) {
           if (order == Order::kId)
             std::sort(neighbours_.begin() + static_cast<std::ptrdiff_t>(offset_.back()), neighbours_.end(),
                       [id](std::uint32_t a, std::uint32_t b) { return id[a] < id[b]; });
           row_.push_back(i);
           offset_.push_back(neighbours_.size());
         });
    if (neighbours_.capacity() > neighbours_.size() + neighbours_.size() / 3) neighbours_.shrink_to_fit();
  }

  std::size_t rows() const { return row_.size(); }
  std::uint32_t row(std::size_t r) const { return row_[r]; }
  const std::uint32_t* begin(std::size_t r) const { return neighbours_.data() + offset_[r]; }
  const std::uint32_t* end(std::size_t r) const { return neighbours_.data() + offset_[r + 1]; }
  // Row r may be reordered in place (a method keeping this substep's neighbours at its front).
  std::uint32_t* begin(std::size_t r) { return neighbours_.data() + offset_[r]; }
  std::uint32_t* end(std::size_t r) { return neighbours_.data() + offset_[r + 1]; }
  std::size_t pairs() const { return neighbours_.size(); }
  std::size_t bytes() const {
    return sizeof(std::uint32_t) * (row_.capacity() + neighbours_.capacity()) +
           sizeof(std::size_t) * offset_.capacity();
  }

 private:
  static bool rows_lead_candidates(const std::vector<std::uint32_t>& rows,
                                   const std::vector<std::uint32_t>& candidates) {
    if (rows.size() > candidates.size()) return false;
    for (std::uint32_t k = 0; k < candidates.size(); ++k)
      if (candidates[k] != k || (k < rows.size() && rows[k] != k)) return false;
    return true;
  }

  std::vector<std::uint32_t> row_, neighbours_;
  std::vector<std::size_t> offset_;
};

}  // namespace nendo
