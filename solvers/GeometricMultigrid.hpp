#pragma once
// Geometric multigrid for the Newton solver's linear systems (issue 30), through PETSc's PCMG so
// that the options database controls every part of it (-mg_levels_ksp_type, -mg_levels_pc_type,
// -pc_mg_type, -mg_coarse_pc_type, -pc_mg_log, ...):
//   finest:  the problem's own operator (matrix-free), smoothed by Chebyshev + Jacobi on its
//            matrix-free diagonal;
//   coarse:  the problem's CoarseSpace, assembled; below it the space's deeper levels if it has
//            any (the fem tet hierarchy), each the Galerkin product of the one above, smoothed
//            alike;
//   coarsest: one V-cycle of GAMG, which builds the levels below it, or, for a space whose
//            coarse operators are Galerkin products of nested spaces and a coarsest level of at
//            most kExactCoarseUnknowns, a redundant Cholesky solve (iteration counts then do not
//            depend on the rank count);
//   transfer: the CoarseSpace's interpolations P, restriction Pᵀ.
// The smoother sees the fine operator through a shell of its own whose state changes only at
// update(): its products follow the current linearisation, but Chebyshev's eigenvalue estimate
// (10 products) and the Jacobi diagonal are made once per update, not at every Newton iteration
// (they took 28 % of a fem solve's time).
// Lifecycle: set_defaults() on a new PC before KSPSetFromOptions; setup() for each new layout;
// update() at the linearisation the coarse operator should follow (NewtonSolver: a solve's
// first), before the KSP solves.
#include <petscksp.h>

#include <vector>

#include "solvers/CoarseSpace.hpp"
#include "solvers/DofMap.hpp"

namespace nendo {

class GeometricMultigrid {
 public:
  GeometricMultigrid() = default;
  ~GeometricMultigrid();
  GeometricMultigrid(const GeometricMultigrid&) = delete;
  GeometricMultigrid& operator=(const GeometricMultigrid&) = delete;

  // Makes pc a two-level PCMG with nendo's smoother and coarse solve; options override them.
  static void set_defaults(PC pc);
  // pc is a PCMG (the options kept it one): builds P and the coarse matrix for this layout;
  // fine_operator is the KSP's operator.
  void setup(PC pc, const DofMap& fine, CoarseSpace& coarse, ::Mat fine_operator);
  // Reassembles the coarse operator at the problem's new linearisation point and has the
  // smoother re-estimate its eigenvalues and read the diagonal again.
  void update(CoarseSpace& coarse);
  ::Mat interpolation() const { return interpolation_; }
  ::Mat coarse_operator() const { return coarse_; }

 private:
  void destroy();
  // A coarsest level up to this size is solved exactly where the space says that helps.
  static constexpr PetscInt kExactCoarseUnknowns = 12000;
  struct Level {  // a deeper level: its interpolation into the level above, its Galerkin operator
    ::Mat interpolation, op;
  };
  static void configure_levels(PC pc, int levels, bool exact);
  static PetscErrorCode smoother_mult(::Mat A, Vec x, Vec y);
  static PetscErrorCode smoother_diagonal(::Mat A, Vec d);
  ::Mat interpolation_ = nullptr, coarse_ = nullptr;
  ::Mat smoother_operator_ = nullptr;  // forwards to the fine operator; its state changes at update()
  std::vector<Level> deeper_;
  PC pc_ = nullptr;
  ::Vec unreached_ = nullptr, coarse_diagonal_ = nullptr;
};

}  // namespace nendo
