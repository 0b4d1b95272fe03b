#pragma once
// Newton–Krylov minimisation of an incremental potential (MPM spec 002 §10.5, §10.8):
//
//   v ← v⁰ (constraint-consistent)
//   repeat: g ← P∇E(v); stop if ‖g‖ ≤ rtol ‖g⁰‖, the scaled residual ≤ atol, or ‖g‖ is at round-off
//           η ← the forcing term (below)
//           solve (P H P + I − P) d = −g with KSP from a zero guess, to relative tolerance η
//           if g·d ≥ 0 (KSP failed or H indefinite): d ← −diag⁻¹ g (scaled gradient)
//           α: backtracking Armijo on E, E(v + αd) − E(v) ≤ 1e-4 α g·d, halving
//           v ← v + α d
// or, with settings.solver lbfgs, d the L-BFGS direction over the preconditioner (solvers/Lbfgs).
//
// The KSP (and its PC) is configured from the PETSc options database, so -ksp_type, -pc_type,
// -ksp_rtol, -ksp_monitor, ... on the command line, in .petscrc or in a scene's
// implicit.petsc_options all apply. nendo's defaults, which options override: CG with relative
// tolerance 1e-4, preconditioned by Jacobi or geometric multigrid on the problem's CoarseSpace
// (matrix-free; GeometricMultigrid, settings.multigrid) or GAMG (assembled: unsmoothed
// aggregation, interpolation reused while the problem's layout() stays the same).
//
// The forcing term η, the KSP's relative tolerance at each Newton iteration (inexact Newton):
// "fixed" keeps the KSP's tolerance (1e-4, or -ksp_rtol); "eisenstat_walker" chooses η from the
// progress of Newton itself (Eisenstat & Walker 1996, choice 2, as PETSc's -snes_ksp_ew), loose
// while far from the solution and tighter as Newton converges, never tighter than the fixed 1e-4
// nor than the Newton tolerance needs. A -ksp_rtol in the options database always wins (fixed).
#include <mpi.h>
#include <petscksp.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/Error.hpp"
#include "solvers/GeometricMultigrid.hpp"
#include "solvers/HessianOperator.hpp"
#include "solvers/Lbfgs.hpp"
#include "solvers/NewtonProblem.hpp"

namespace nendo {

// A problem found its iterate inadmissible (e.g. an inverted element) where no line search can
// help, such as at the first iterate: the caller retries with a smaller step. Thrown on every rank.
class NewtonFailure : public Error {
 public:
  using Error::Error;
};

struct NewtonSettings {
  std::string operator_type = "matrix_free";  // matrix_free | assembled
  Real rtol = 1e-6;                           // on ‖P∇E‖₂ relative to its first value
  Real atol = 1e-6;                           // on the problem's scaled residual
  int max_iterations = 20;
  int max_halvings = 30;                     // of the line search
  bool multigrid = false;                    // matrix-free: PCMG on the problem's coarse space, not Jacobi
  std::string forcing = "eisenstat_walker";  // eisenstat_walker | fixed: the KSP's relative tolerance
  bool monitor = false;                      // one line per Newton iteration on rank 0
  // newton: each direction a Krylov solve; lbfgs: the L-BFGS direction over one application of
  // the KSP's preconditioner, built at the solve's first linearisation (HOT's quasi-Newton),
  // max_iterations × kLbfgsIterations iterations at most (NewtonSolver::kLbfgsIterations).
  std::string solver = "newton";
};

// What one solve did, the same on every rank.
struct NewtonReport {
  int iterations = 0;            // Newton iterations (linear solves)
  long ksp_iterations = 0;       // summed over the Newton iterations
  int line_search_halvings = 0;  // summed
  int gradient_steps = 0;        // iterations that fell back to the scaled gradient
  Real residual0 = 0;            // ‖P∇E(v⁰)‖₂
  Real residual = 0;             // ‖P∇E‖₂ at the end
  Real scaled_residual = 0;      // the problem's scaled residual at the end
  bool converged = false;
  std::string failure;  // why it did not converge
};

class NewtonSolver {
 public:
  NewtonSolver(MPI_Comm comm, NewtonSettings settings);
  ~NewtonSolver();
  NewtonSolver(const NewtonSolver&) = delete;
  NewtonSolver& operator=(const NewtonSolver&) = delete;

  // Minimises the problem's energy starting from v (owned unknowns, satisfying the constraints);
  // v holds the last iterate on return, converged or not. The problem's layout may differ from
  // the last call's. Collective.
  NewtonReport solve(NewtonProblem& problem, Real* v);

  const NewtonSettings& settings() const { return settings_; }
  // "cg + jacobi", as configured from the options database.
  std::string ksp_description() const;

 private:
  static constexpr int kGradientHalvings = 10;
  static constexpr int kLbfgsIterations = 10;  // L-BFGS may take this many times max_iterations
  void create_ksp(NewtonProblem* problem);
  void solve_linear(Vec rhs, Vec solution, bool adaptive, bool user_norm, Real& eta, PetscInt& iterations,
                    KSPConvergedReason& reason);
  void lbfgs_direction(Vec gradient, Vec direction);
  void remember_step(const Real* v);
  void setup_multigrid(NewtonProblem& problem);
  bool gradient_search(NewtonProblem& problem, Real* v, Real before, Real& alpha, int& halvings);

  MPI_Comm comm_;
  NewtonSettings settings_;
  KSP ksp_ = nullptr;
  std::uint64_t layout_ = 0;  // the problem layout the KSP and operator are set up for
  std::unique_ptr<HessianOperator> operator_;
  std::unique_ptr<GeometricMultigrid> multigrid_;  // while the PC is PCMG
  std::vector<Real> gradient_, direction_, trial_, diagonal_;
  Lbfgs history_;                                     // settings.solver lbfgs
  std::vector<Real> previous_v_, previous_gradient_;  // at the iteration's start
  std::vector<Real> scratch_, lbfgs_out_;
};

}  // namespace nendo
