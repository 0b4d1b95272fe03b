#pragma once
// The Newton solver's settings from a scene's `implicit` section: what every method with an
// implicit step (MPM, hierarchical FEM) hands to solvers/NewtonSolver.
#include "methods/ImplicitSettings.hpp"
#include "solvers/NewtonSolver.hpp"

namespace nendo {

// multigrid_by_default: the method's choice when implicit.preconditioner is unset (fem: its tet
// hierarchy makes multigrid the better preconditioner; MPM: Jacobi, docs/methods/implicit-mpm.md).
inline NewtonSettings newton_settings(const ImplicitSettings& implicit, bool multigrid_by_default = false) {
  NewtonSettings newton;
  newton.operator_type = implicit.operator_type;
  newton.rtol = implicit.newton_tol;
  newton.atol = implicit.newton_atol;
  newton.max_iterations = implicit.max_newton;
  newton.forcing = implicit.forcing;
  newton.solver = implicit.solver;
  newton.monitor = implicit.monitor;
  newton.multigrid =
      implicit.preconditioner.empty() ? multigrid_by_default : implicit.preconditioner == "multigrid";
  return newton;
}

}  // namespace nendo
