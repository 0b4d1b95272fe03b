#include "methods/fem/FemCoarseSpace.hpp"

#include <mpi.h>

#include <algorithm>

#include "core/CollectiveError.hpp"
#include "core/Error.hpp"
#include "solvers/PetscCall.hpp"

namespace nendo::fem {

void FemCoarseSpace::Row::add(PetscInt c, Real w) {
  for (int i = 0; i < count; ++i)
    if (column[i] == c) {
      weight[i] += w;
      return;
    }
  if (count == kWidth) throw Error("fem multigrid: a fine node interpolates from more than 4 coarse nodes");
  column[count] = c, weight[count] = w, ++count;
}

FemCoarseSpace::FemCoarseSpace(const HierarchicalFem& fem, Space& space, const DofMap& fine,
                               const std::vector<std::int64_t>& fine_global)
    : fem_(fem), space_(space), fine_(fine) {
  const TetHierarchy& h = fem.model_->hierarchy;
  int finest = 0;
  for (Index t : fem.needed_) finest = std::max(finest, static_cast<int>(h.level[t]));
  MPI_Allreduce(MPI_IN_PLACE, &finest, 1, MPI_INT, MPI_MAX, space.comm());
  for (int level = std::max(finest - 1, 0); level >= 0; --level)
    levels_.push_back(make_level(space, level, fine_global));
  exchange_rows(space);
  deeper_rows_.resize(levels_.size());
  for (std::size_t k = 1; k < levels_.size(); ++k)
    for (PetscInt l = 0; l < levels_[k - 1].dofs.owned_nodes(); ++l)
      deeper_rows_[k].push_back(row(levels_[k - 1].dofs.node(l), levels_[k].global));
  raise_collectively(space.comm(), beyond_ == 0 ? std::string()
                                                : "fem multigrid: " + std::to_string(beyond_) +
                                                      " parent edge endpoints are beyond the particle halo");
}

FemCoarseSpace::Level FemCoarseSpace::make_level(Space& space, int level,
                                                 const std::vector<std::int64_t>& fine_global) const {
  const TetHierarchy& h = fem_.model_->hierarchy;
  const std::size_t n_own = fem_.view_.owned();
  std::vector<char> active(n_own);
  for (std::size_t k = 0; k < n_own; ++k)
    active[k] = fine_global[k] >= 0 && h.node_level[static_cast<std::size_t>(fem_.view_node_[k])] <= level;
  Level out{DofMap(space.comm(), active, 3), {}};
  std::vector<Real> global(fem_.view_.size(), -1);  // exchanged as doubles: exact below 2^53
  for (std::size_t k = 0; k < n_own; ++k) global[k] = static_cast<Real>(out.dofs.global(k));
  space.halo().update_values(global.data(), 1, global.data() + n_own);
  out.global.assign(global.begin(), global.end());
  return out;
}

FemCoarseSpace::Row FemCoarseSpace::row(std::size_t s, const std::vector<PetscInt>& coarse_global) {
  Row out;
  if (coarse_global[s] >= 0) {
    out.add(coarse_global[s], 1);
    return out;
  }
  auto slot = [&](Index node) {
    const std::int32_t at = fem_.slot_[static_cast<std::size_t>(node)];
    beyond_ += at < 0;
    return at;
  };
  std::vector<Master> masters;
  for (Index end : fem_.model_->hierarchy.node_edge[static_cast<std::size_t>(fem_.view_node_[s])]) {
    const std::int32_t e = slot(end);
    if (e < 0) continue;
    if (coarse_global[static_cast<std::size_t>(e)] >= 0) {
      out.add(coarse_global[static_cast<std::size_t>(e)], 0.5);
    } else if (fem_.status_[static_cast<std::size_t>(end)] == NodeStatus::Hanging) {
      fem_.active_->masters(end, masters);
      for (const Master& m : masters)
        if (const std::int32_t at = slot(m.node); at >= 0 && coarse_global[static_cast<std::size_t>(at)] >= 0)
          out.add(coarse_global[static_cast<std::size_t>(at)], 0.5 * m.weight);
    }  // else held: no share
  }
  return out;
}

// The fine level's rows of the owned unknowns, then the halo's by exchange (2 kWidth numbers each):
// the Galerkin sum over a tet needs the rows of all its corners.
void FemCoarseSpace::exchange_rows(Space& space) {
  const std::size_t n_own = fem_.view_.owned(), n = fem_.view_.size();
  const std::vector<PetscInt>& coarse = levels_[0].global;
  rows_.assign(n, Row{});
  for (PetscInt l = 0; l < fine_.owned_nodes(); ++l) rows_[fine_.node(l)] = row(fine_.node(l), coarse);
  std::vector<Real> packed(2 * kWidth * n, -1);
  for (std::size_t k = 0; k < n_own; ++k)
    for (int i = 0; i < rows_[k].count; ++i) {
      packed[2 * kWidth * k + 2 * i] = static_cast<Real>(rows_[k].column[i]);
      packed[2 * kWidth * k + 2 * i + 1] = rows_[k].weight[i];
    }
  space.halo().update_values(packed.data(), 2 * kWidth, packed.data() + 2 * kWidth * n_own);
  for (std::size_t k = n_own; k < n; ++k)
    for (int i = 0; i < kWidth && packed[2 * kWidth * k + 2 * i] >= 0; ++i)
      rows_[k].add(static_cast<PetscInt>(packed[2 * kWidth * k + 2 * i]), packed[2 * kWidth * k + 2 * i + 1]);
}

void FemCoarseSpace::expand(std::size_t s, Real w, std::vector<PetscInt>& columns,
                            std::vector<Real>& weights) const {
  const auto node = static_cast<std::size_t>(fem_.view_node_[s]);
  if (fem_.status_[node] != NodeStatus::Hanging) {
    for (int i = 0; i < rows_[s].count; ++i)
      columns.push_back(rows_[s].column[i]), weights.push_back(w * rows_[s].weight[i]);
    return;
  }
  std::vector<Master> masters;
  fem_.active_->masters(static_cast<Index>(node), masters);
  for (const Master& m : masters)
    expand(static_cast<std::size_t>(fem_.slot_[m.node]), w * m.weight, columns, weights);
}

// rows_of: by owned particle (fine_rows) or by the rows' local node number.
void FemCoarseSpace::insert_rows(::Mat P, const DofMap& rows, const std::vector<Row>& rows_of,
                                 bool fine_rows) const {
  Real block[kWidth * 9];
  for (PetscInt l = 0; l < rows.owned_nodes(); ++l) {
    const std::size_t k = rows.node(l);
    const Row& r = rows_of[static_cast<std::size_t>(fine_rows ? static_cast<PetscInt>(k) : l)];
    const PetscInt g = rows.first_node() + l;
    std::fill_n(block, 9 * r.count, 0.0);
    for (int i = 0; i < r.count; ++i)  // the row-major 3 x 3 count block row: w I per column
      for (int c = 0; c < 3; ++c) block[3 * r.count * c + 3 * i + c] = r.weight[i];
    petsc_call(MatSetValuesBlocked(P, 1, &g, r.count, r.column.data(), block, INSERT_VALUES),
               "MatSetValuesBlocked(P)");
  }
}

void FemCoarseSpace::interpolation(::Mat P) { insert_rows(P, fine_, rows_, true); }

void FemCoarseSpace::deeper_interpolation(int k, ::Mat P) {
  const auto level = static_cast<std::size_t>(k);
  insert_rows(P, levels_[level - 1].dofs, deeper_rows_[level], false);
}

// Pᵀ A P: each owned fine unknown's mass m P_kᵀ P_k, and each needed tet whose corner 0 is owned
// here (Q its corners' rows of P, through their masters) Qᵀ K_T Q, on the coarse columns it reaches.
void FemCoarseSpace::assemble(::Mat A) {
  const Real* mass = space_.particles().real("mass");
  std::vector<PetscInt> columns, unique;
  std::vector<Real> weights, values;
  for (PetscInt l = 0; l < fine_.owned_nodes(); ++l) {
    const std::size_t k = fine_.node(l);
    const Row& row = rows_[k];
    const Real m = mass_factor_ * mass[k];
    values.assign(9 * row.count * row.count, 0.0);
    for (int i = 0; i < row.count; ++i)
      for (int j = 0; j < row.count; ++j)
        for (int c = 0; c < 3; ++c)
          values[(3 * i + c) * 3 * row.count + 3 * j + c] = m * row.weight[i] * row.weight[j];
    petsc_call(MatSetValuesBlocked(A, row.count, row.column.data(), row.count, row.column.data(),
                                   values.data(), ADD_VALUES),
               "MatSetValuesBlocked");
  }
  // Every owned coarse node gets its diagonal block (a pattern that does not depend on the values).
  const std::vector<Real> zero(9, 0.0);
  const DofMap& coarse = levels_[0].dofs;
  for (PetscInt l = 0; l < coarse.owned_nodes(); ++l) {
    const PetscInt g = coarse.first_node() + l;
    petsc_call(MatSetValuesBlocked(A, 1, &g, 1, &g, zero.data(), ADD_VALUES), "MatSetValuesBlocked");
  }
  if (!tangents_) return;
  std::vector<int> corner, index;  // per expanded entry: its tet corner and its place in unique
  for (std::size_t i = 0; i < fem_.needed_.size(); ++i) {
    if (static_cast<std::size_t>(fem_.needed_slots_[4 * i]) >= fem_.view_.owned())
      continue;  // its owner adds it
    columns.clear(), weights.clear(), corner.clear();
    for (int a = 0; a < 4; ++a) {
      expand(static_cast<std::size_t>(fem_.needed_slots_[4 * i + a]), 1, columns, weights);
      corner.resize(columns.size(), a);
    }
    unique = columns;
    std::sort(unique.begin(), unique.end());
    unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
    if (unique.empty()) continue;
    index.resize(columns.size());
    for (std::size_t e = 0; e < columns.size(); ++e)
      index[e] =
          static_cast<int>(std::lower_bound(unique.begin(), unique.end(), columns[e]) - unique.begin());
    const int u = static_cast<int>(unique.size());
    values.assign(9 * static_cast<std::size_t>(u * u), 0.0);  // row-major (3u) x (3u)
    const Mat12& K = (*tangents_)[i];
    for (std::size_t p = 0; p < columns.size(); ++p)
      for (std::size_t q = 0; q < columns.size(); ++q) {
        const Real w = weights[p] * weights[q];
        for (int r = 0; r < 3; ++r)
          for (int c = 0; c < 3; ++c)
            values[static_cast<std::size_t>((3 * index[p] + r) * 3 * u + 3 * index[q] + c)] +=
                w * K(3 * corner[p] + r, 3 * corner[q] + c);
      }
    petsc_call(MatSetValuesBlocked(A, u, unique.data(), u, unique.data(), values.data(), ADD_VALUES),
               "MatSetValuesBlocked");
  }
}

void FemCoarseSpace::coordinates(Real* xyz) {
  const DofMap& coarse = levels_[0].dofs;
  for (PetscInt l = 0; l < coarse.owned_nodes(); ++l)
    std::copy_n(&fem_.x_[3 * coarse.node(l)], 3, xyz + 3 * l);
}

}  // namespace nendo::fem
