#include "methods/ImplicitSettings.hpp"

namespace nendo {

namespace {

SettingsKeys<ImplicitSettings> implicit_keys() {
  using S = ImplicitSettings;
  return SettingsKeys<S>()
      .add(KeySchema::choice(
               "scheme", {"midpoint", "backward_euler"},
               "MPM's implicit step: midpoint (the implicit midpoint rule, second order, no numerical "
               "damping: a swinging body keeps its amplitude at large steps; Newmark beta = 1/4 for a "
               "linear material) or backward_euler (first order, damps: energy never grows; for "
               "quasi-static loading and settling). FEM always steps by backward Euler"),
           &S::scheme)
      .add(KeySchema::choice("operator", {"matrix_free", "assembled"},
                             "Hessian as a matrix-free MatShell or an assembled MPIAIJ/MPIBAIJ matrix"),
           &S::operator_type)
      .add(KeySchema::real("newton_tol",
                           "Newton stops when the projected gradient norm of the incremental potential has "
                           "fallen by this factor from its first value")
               .above(0),
           &S::newton_tol)
      .add(KeySchema::real("newton_atol",
                           "... or when the worst node's velocity error times dt/dx (a displacement in "
                           "cells) is below this")
               .above(0),
           &S::newton_atol)
      .add(KeySchema::integer("max_newton", "largest number of Newton iterations per step").at_least(1),
           &S::max_newton)
      .add(KeySchema::integer("max_halvings",
                              "a step whose Newton iteration fails is retried as two half steps, at most "
                              "this many times in a row; then the run checkpoints and stops")
               .at_least(0),
           &S::max_halvings)
      .add(KeySchema::choice(
               "forcing", {"eisenstat_walker", "fixed"},
               "the relative tolerance of each Newton iteration's linear solve: eisenstat_walker "
               "(loose far from the solution, tighter as Newton converges, never below 1e-4 nor "
               "tighter than newton_tol needs) or fixed (1e-4); a -ksp_rtol in petsc_options or "
               "on the command line always fixes it"),
           &S::forcing)
      .add(
          KeySchema::choice("solver", {"newton", "lbfgs"},
                            "newton (each step direction a Krylov solve to the forcing's tolerance) or lbfgs "
                            "(quasi-Newton as in HOT: the L-BFGS direction over one application of the "
                            "preconditioner, which is built at the step's first linearisation and kept; up "
                            "to 10 x max_newton iterations; docs/methods/implicit-mpm.md)"),
          &S::solver)
      .add(KeySchema::boolean("project_spd",
                              "make each particle's energy Hessian positive semi-definite (spec 002 "
                              "section 2.6), so that CG applies"),
           &S::project_spd)
      .add(KeySchema::boolean("monitor", "print one line per Newton iteration on rank 0"), &S::monitor)
      .add(KeySchema::text("petsc_options",
                           "PETSc options database entries, e.g. \"-ksp_type cg -pc_type gamg\"; the "
                           "command line, PETSC_OPTIONS and .petscrc override them"),
           &S::petsc_options)
      .add(KeySchema::choice(
               "preconditioner", {"jacobi", "multigrid"},
               "of the matrix-free operator (the assembled one takes GAMG): jacobi, or multigrid "
               "(two-level geometric multigrid through PETSc's PCMG, the options -mg_levels_* "
               "and -mg_coarse_* apply; MPM: the block grid coarsened by 2, fewer CG iterations, "
               "each dearer, docs/methods/implicit-mpm.md; fem: every level of the tet hierarchy, "
               "docs/methods/fem.md)")
               .when_unset("unset: jacobi for mpm, multigrid for fem"),
           &S::preconditioner);
}

void check_multigrid(const SceneCheck& check) {
  const ImplicitSettings& implicit = check.scene.sections.get<ImplicitSettings>();
  if (implicit.preconditioner == "multigrid" && !find_method(check.scene.method)->geometric_multigrid)
    check.fail("implicit.preconditioner",
               "multigrid coarsens implicit MPM's block grid or the fem method's tet "
               "hierarchy; use jacobi, or operator: assembled for GAMG");
}

}  // namespace

SceneSection implicit_section() {
  SceneSection section = method_section(
      "implicit", "implicit solver",
      "Newton-Krylov solver of the implicit integrator (time.integrator: implicit).", implicit_keys());
  section.check = check_multigrid;
  return section;
}

}  // namespace nendo
