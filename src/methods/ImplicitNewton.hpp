#pragma once
// The Newton solver's settings from a scene's `implicit` section: what every method with an
// implicit step (MPM, hierarchical FEM) hands to solvers/NewtonSolver.
#include "scene/Scene.hpp"
#include "solvers/NewtonSolver.hpp"

namespace nendo {

inline NewtonSettings newton_settings(const ImplicitSettings& implicit) {
  NewtonSettings newton;
  newton.operator_type = implicit.operator_type;
  newton.rtol = implicit.newton_tol;
  newton.atol = implicit.newton_atol;
  newton.max_iterations = implicit.max_newton;
  newton.forcing = implicit.forcing;
  newton.monitor = implicit.monitor;
  newton.multigrid = implicit.preconditioner == "multigrid";
  return newton;
}

}  // namespace nendo
