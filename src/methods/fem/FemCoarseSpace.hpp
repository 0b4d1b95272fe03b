#pragma once
// The coarse levels of the fem implicit solve's geometric multigrid (issue 30 item 5): the Bey
// hierarchy (spec 004 §4.1). With L the finest active level, level l < L is the active mesh with
// every tet finer than l replaced by its level-l ancestor: its unknowns are the fine unknowns of
// levels ≤ l, and a level-l unknown, the midpoint of its parent edge (a, b), takes ½ (a + b) of
// level l − 1 — the spaces are nested and the interpolation exact. A hanging endpoint passes its
// share on to its two masters; a held one carries none. Level L − 1's operator is the Galerkin
// product Pᵀ A P, summed tet by tet from the element tangents of the linearisation point (no fine
// matrix is ever assembled); the levels below it are its Galerkin products (GeometricMultigrid),
// down to level 0, the level-0 mesh, small enough for an exact solve. With one level only (L = 0)
// the coarse level is the fine one, assembled.
#include <array>
#include <cstdint>
#include <vector>

#include "methods/fem/HierarchicalFem.hpp"
#include "methods/fem/StvkElement.hpp"
#include "solvers/CoarseSpace.hpp"
#include "solvers/DofMap.hpp"

namespace nendo::fem {

class FemCoarseSpace final : public CoarseSpace {
 public:
  // fine_global: the fine unknowns' global block number per view entry (−1: none). Collective.
  FemCoarseSpace(const HierarchicalFem& fem, Space& space, const DofMap& fine,
                 const std::vector<std::int64_t>& fine_global);

  int block_size() const override { return 3; }
  PetscInt owned_nodes() const override { return levels_[0].dofs.owned_nodes(); }
  void interpolation(::Mat P) override;
  PetscInt interpolation_width() const override { return kWidth; }
  void assemble(::Mat A) override;
  void coordinates(Real* xyz) override;
  int deeper_levels() const override { return static_cast<int>(levels_.size()) - 1; }
  PetscInt deeper_nodes(int k) const override {
    return levels_[static_cast<std::size_t>(k)].dofs.owned_nodes();
  }
  void deeper_interpolation(int k, ::Mat P) override;
  bool exact_coarse_solve_helps() const override { return true; }

  // The operator assemble() adds: (1 + c_m Δt) M and the needed tets' Δt² K_T (FemBackwardEuler).
  void set_operator(Real mass_factor, const std::vector<Mat12>* tangents) {
    mass_factor_ = mass_factor, tangents_ = tangents;
  }

 private:
  static constexpr int kWidth = 4;  // a midpoint's two endpoints, each hanging on two masters
  struct Row {                      // a row of P: coarse block columns and weights
    int count = 0;
    std::array<PetscInt, kWidth> column{};
    std::array<Real, kWidth> weight{};
    void add(PetscInt c, Real w);
  };
  struct Level {
    DofMap dofs;                   // the fine unknowns of hierarchy levels ≤ this level's
    std::vector<PetscInt> global;  // their global numbers per view entry, or −1
  };
  Level make_level(Space& space, int level, const std::vector<std::int64_t>& fine_global) const;
  // P's row of view entry s into the level numbered by coarse_global; counts in beyond_ the
  // endpoints not in the view.
  Row row(std::size_t s, const std::vector<PetscInt>& coarse_global);
  void insert_rows(::Mat P, const DofMap& rows, const std::vector<Row>& rows_of, bool fine_rows) const;
  void exchange_rows(Space& space);
  // P's row of view entry s with any weight, appended to (columns, weights): a hanging node's
  // through its masters.
  void expand(std::size_t s, Real w, std::vector<PetscInt>& columns, std::vector<Real>& weights) const;

  const HierarchicalFem& fem_;
  Space& space_;
  const DofMap& fine_;
  std::vector<Level> levels_;  // hierarchy levels L − 1, L − 2, ..., 0 (just 0 when L = 0)
  std::vector<Row> rows_;      // per view entry: its row of the fine level's P
  std::vector<std::vector<Row>> deeper_rows_;  // [k]: level k − 1's owned rows into level k
  long beyond_ = 0;
  Real mass_factor_ = 1;
  const std::vector<Mat12>* tangents_ = nullptr;
};

}  // namespace nendo::fem
