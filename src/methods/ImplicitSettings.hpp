#pragma once
// The `implicit` section: the Newton-Krylov solver of implicit MPM and the fem method, and the
// PETSc options every method's solvers read (slave SPH's KSP too).
#include <string>

#include "core/Types.hpp"
#include "scene/SceneRegistry.hpp"

namespace nendo {

struct ImplicitSettings {
  std::string scheme = "midpoint";            // midpoint | backward_euler (MPM; FEM: backward Euler only)
  std::string operator_type = "matrix_free";  // matrix_free | assembled (scene key `operator`)
  Real newton_tol = 1e-6;                     // on ‖P∇E‖ relative to the first
  Real newton_atol = 1e-6;                    // on the worst node's velocity error × Δt/dx
  int max_newton = 20;
  int max_halvings = 8;                      // a failed step is retried in halves, this many times at most
  std::string forcing = "eisenstat_walker";  // eisenstat_walker | fixed (NewtonSettings::forcing)
  std::string solver = "newton";             // newton | lbfgs (NewtonSettings::solver)
  bool project_spd = true;
  bool monitor = false;
  std::string petsc_options;
  std::string preconditioner;  // jacobi | multigrid of the matrix-free operator; "": the method's
};

// Refuses preconditioner: multigrid for a method without MethodSchema::geometric_multigrid.
SceneSection implicit_section();

}  // namespace nendo
