#pragma once
// Two-level geometric multigrid for the Newton solver's linear systems (issue 30), through
// PETSc's PCMG so that the options database controls every part of it (-mg_levels_ksp_type,
// -mg_levels_pc_type, -pc_mg_type, -mg_coarse_pc_type, -pc_mg_log, ...):
//   level 1: the problem's own operator (matrix-free), smoothed by Chebyshev + Jacobi on its
//            matrix-free diagonal;
//   level 0: the problem's CoarseSpace, assembled and solved by one V-cycle of GAMG, which
//            builds the levels below it;
//   transfer: the CoarseSpace's interpolation P, restriction Pᵀ.
// Lifecycle: set_defaults() on a new PC before KSPSetFromOptions; setup() for each new layout;
// update() at the linearisation the coarse operator should follow (NewtonSolver: the layout's
// first), before the KSP solves.
#include <petscksp.h>

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
  // pc is a PCMG (the options kept it one): builds P and the coarse matrix for this layout.
  void setup(PC pc, const DofMap& fine, CoarseSpace& coarse);
  // Reassembles the coarse operator at the problem's new linearisation point.
  void update(CoarseSpace& coarse);
  ::Mat interpolation() const { return interpolation_; }
  ::Mat coarse_operator() const { return coarse_; }

 private:
  void destroy();
  ::Mat interpolation_ = nullptr, coarse_ = nullptr;
  ::Vec unreached_ = nullptr, coarse_diagonal_ = nullptr;
};

}  // namespace nendo
