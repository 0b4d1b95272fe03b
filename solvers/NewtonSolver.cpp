#include "solvers/NewtonSolver.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/Error.hpp"
#include "solvers/PetscCall.hpp"

namespace nendo {

namespace {

// GAMG's Galerkin products on more than one rank by PETSc's all-at-once algorithm (-matptap_via
// allatonce) while a preconditioner is set up, unless the options name one: the default keeps
// merged copies of the off-rank rows of P, which on 4 ranks of the 1.18 M-tet FEM slab were the
// largest part of a rank's peak (about 85 MiB of 555; issue 34), and all-at-once holds no such
// copy. Sequential matrices know no such algorithm. The option is taken out again afterwards, so
// that no other product and no report of unused options sees it.
class GalerkinProductAlgorithm {
 public:
  GalerkinProductAlgorithm(MPI_Comm comm, KSP ksp) {
    int ranks = 1;
    MPI_Comm_size(comm, &ranks);
    PC pc = nullptr;
    PCType type = nullptr;
    petsc_call(KSPGetPC(ksp, &pc), "KSPGetPC");
    petsc_call(PCGetType(pc, &type), "PCGetType");
    PetscBool given = PETSC_FALSE;
    petsc_call(PetscOptionsHasName(nullptr, nullptr, "-matptap_via", &given), "PetscOptionsHasName");
    set_ = ranks > 1 && type && std::string(type) == PCGAMG && !given;
    if (set_) petsc_call(PetscOptionsSetValue(nullptr, "-matptap_via", "allatonce"), "PetscOptionsSetValue");
  }
  ~GalerkinProductAlgorithm() {
    if (set_) PetscOptionsClearValue(nullptr, "-matptap_via");
  }
  GalerkinProductAlgorithm(const GalerkinProductAlgorithm&) = delete;
  GalerkinProductAlgorithm& operator=(const GalerkinProductAlgorithm&) = delete;

 private:
  bool set_ = false;
};

Real dot(MPI_Comm comm, const std::vector<Real>& a, const std::vector<Real>& b) {
  Real local = std::inner_product(a.begin(), a.end(), b.begin(), Real(0)), global = 0;
  MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, comm);
  return global;
}

// A PETSc vector over the owned unknowns that shares nendo's array.
struct WrappedVec {
  Vec vec = nullptr;
  WrappedVec(MPI_Comm comm, const DofMap& dofs, Real* data) {
    petsc_call(VecCreateMPIWithArray(comm, dofs.block_size(), dofs.local_size(), PETSC_DETERMINE, data, &vec),
               "VecCreateMPIWithArray");
  }
  ~WrappedVec() { VecDestroy(&vec); }
  WrappedVec(const WrappedVec&) = delete;
  WrappedVec& operator=(const WrappedVec&) = delete;
};

// The forcing term of inexact Newton, the linear solve's relative tolerance η_k: Eisenstat and
// Walker's choice 2 (SIAM J. Sci. Comput. 17:16–32, 1996; PETSc's -snes_ksp_ew, version 2), with
// their γ = 0.9 (PETSc: 1.0):
//   η_0 = 0.03,   η_k = γ (‖g_k‖ / ‖g_{k−1}‖)^α,   α = (1 + √5)/2;
//   η_k ← max(η_k, γ η_{k−1}^α) when γ η_{k−1}^α > 0.1   (no sudden tightening after one lucky step);
//   η_k ← η_{k−1} when ‖g_k‖ ≥ ‖g_{k−1}‖   (the line search lowers E, not ‖g‖: after a step that
//         raised ‖g‖, as the first steps of a beam bending under its weight do, the ratio would
//         loosen η to 0.9 and waste the next iterations; the static FEM beam took 13 instead of 7);
//   η_k ← max(η_k, ½ rtol ‖g_0‖ / ‖g_k‖)   (Kelley 1995, eq. 6.20: the last solve need not take ‖g‖
//         far below where Newton stops);
//   η_k ← min(max(η_k, 1e-4), 0.9).
// η_0 is below EW's 0.5 (PETSc: 0.3): a Newton iteration costs 10 or more Krylov iterations here (a
// linearisation, a line search, an operator update or assembly), and from the predictor the first
// Newton step takes ‖g‖ down by only 1e-1 to 1e-2 even when solved exactly; starting at 0.5 doubled
// the Newton iterations of the implicit MPM drops and cost more time than it saved
// (docs/methods/implicit-mpm.md). The floor 1e-4 is the fixed forcing's tolerance: no linear solve
// costs more than with fixed forcing, and at tight Newton tolerances (1e-10 and below) CG is not
// asked for 1e-8 it may only reach at round-off; Newton still gains four digits per iteration there.
struct EisenstatWalker {
  static constexpr Real kGamma = 0.9, kAlpha = 1.6180339887498949, kThreshold = 0.1;
  static constexpr Real kFirst = 0.03, kLargest = 0.9, kSmallest = 1e-4;
  Real eta = 0, last_residual = 0;

  // η for the linear solve at the iterate of gradient norm `residual`; `stop`: rtol ‖g_0‖.
  Real next(Real residual, Real stop) {
    Real next = kFirst;
    if (last_residual > 0 && residual >= last_residual) {
      next = eta;
    } else if (last_residual > 0) {
      next = kGamma * std::pow(residual / last_residual, kAlpha);
      const Real kept = kGamma * std::pow(eta, kAlpha);
      if (kept > kThreshold) next = std::max(next, kept);
    }
    next = std::max(next, 0.5 * stop / residual);
    eta = std::min(std::max(next, kSmallest), kLargest), last_residual = residual;
    return eta;
  }
  // The fixed forcing's tolerance, for a solve that is repeated; the next iteration's safeguard
  // starts from it.
  Real tighten() { return eta = kSmallest; }
};

}  // namespace

NewtonSolver::NewtonSolver(MPI_Comm comm, NewtonSettings settings)
    : comm_(comm),
      settings_(std::move(settings)),
      operator_(make_hessian_operator(settings_.operator_type)),
      history_(comm) {
  PetscBool initialized = PETSC_FALSE;
  PetscInitialized(&initialized);
  if (!initialized) throw Error("the implicit solver needs PETSc, which is not initialised");
  if (settings_.solver != "newton" && settings_.solver != "lbfgs")
    throw Error("unknown implicit solver '" + settings_.solver + "' (newton or lbfgs)");
  if (settings_.forcing != "eisenstat_walker" && settings_.forcing != "fixed")
    throw Error("unknown Newton forcing '" + settings_.forcing + "' (eisenstat_walker or fixed)");
  create_ksp(nullptr);
}

// A KSP configured from nendo's defaults and then the options database. Recreated for each new
// layout: KSPReset does not make every PC (GAMG's levels) forget the old sizes.
void NewtonSolver::create_ksp(NewtonProblem* problem) {
  if (ksp_) KSPDestroy(&ksp_);
  petsc_call(KSPCreate(comm_, &ksp_), "KSPCreate");
  petsc_call(KSPSetType(ksp_, KSPCG), "KSPSetType");
  PC pc = nullptr;
  petsc_call(KSPGetPC(ksp_, &pc), "KSPGetPC");
  const bool assembled = settings_.operator_type == "assembled";
  // Multigrid where asked for and the problem has a coarse space (unknown before the first solve:
  // assumed, so that the first description names the PC the solves will use).
  if (!assembled && settings_.multigrid && (!problem || problem->coarse_space()))
    GeometricMultigrid::set_defaults(pc);
  else
    petsc_call(PCSetType(pc, assembled ? PCGAMG : PCJACOBI), "PCSetType");
  petsc_call(KSPSetTolerances(ksp_, 1e-4, 1e-50, PETSC_DEFAULT, PETSC_DEFAULT), "KSPSetTolerances");
  if (settings_.operator_type == "assembled") {
    // Unsmoothed aggregation: more CG iterations but a far cheaper set-up and V-cycle (the fem
    // 1 M-tet beam: 12 s per step against 22 s; the implicit MPM benchmark: 12 s against 15 s).
    petsc_call(PCGAMGSetNSmooths(pc, 0), "PCGAMGSetNSmooths");
    // The near null space changes little between Newton iterations and steps of one layout: GAMG
    // keeps its aggregates and interpolation and redoes only the Galerkin products.
    petsc_call(PCGAMGSetReuseInterpolation(pc, PETSC_TRUE), "PCGAMGSetReuseInterpolation");
  }
  petsc_call(KSPSetFromOptions(ksp_), "KSPSetFromOptions");
  // GAMG (PETSc 3.18) cannot coarsen a BAIJ matrix: it gets AIJ with the block size.
  PCType type = nullptr;
  PCGetType(pc, &type);
  operator_->set_matrix_type(type && std::string(type) == PCGAMG ? MATAIJ : MATBAIJ);
}

NewtonSolver::~NewtonSolver() {
  if (ksp_) KSPDestroy(&ksp_);
}

std::string NewtonSolver::ksp_description() const {
  KSPType ksp_type = nullptr;
  PCType pc_type = nullptr;
  PC pc = nullptr;
  KSPGetType(ksp_, &ksp_type);
  KSPGetPC(ksp_, &pc);
  PCGetType(pc, &pc_type);
  return std::string(ksp_type ? ksp_type : "?") + " + " + (pc_type ? pc_type : "?");
}

NewtonReport NewtonSolver::solve(NewtonProblem& problem, Real* v) {
  const DofMap& dofs = problem.dofs();
  const std::size_t n = static_cast<std::size_t>(dofs.local_size());
  gradient_.assign(n, 0.0), direction_.assign(n, 0.0), trial_.assign(n, 0.0), diagonal_.assign(n, 0.0);
  scratch_.assign(n, 0.0), lbfgs_out_.assign(n, 0.0);
  WrappedVec rhs(comm_, dofs, gradient_.data()), solution(comm_, dofs, direction_.data());
  int rank = 0;
  MPI_Comm_rank(comm_, &rank);
  const bool root = rank == 0;

  NewtonReport report;
  int same_layout = problem.layout() != 0 && problem.layout() == layout_ ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &same_layout, 1, MPI_INT, MPI_MIN, comm_);
  bool operator_ready = same_layout == 1;
  // A -ksp_rtol in the options database is the user's fixed forcing (the KSP read it). The adaptive
  // forcing measures CG's residual unpreconditioned, as Newton measures ‖g‖: in the preconditioned
  // norm, GAMG's first CG iteration met η = 0.1 while the gradient after the step had grown (the FEM
  // beam), and EW's ratio then loosened η to 0.9. A -ksp_norm_type, or another Krylov method, keeps
  // its own norm.
  const char* prefix = nullptr;
  PetscBool user_rtol = PETSC_FALSE, user_norm = PETSC_FALSE;
  petsc_call(KSPGetOptionsPrefix(ksp_, &prefix), "KSPGetOptionsPrefix");
  petsc_call(PetscOptionsHasName(nullptr, prefix, "-ksp_rtol", &user_rtol), "PetscOptionsHasName");
  petsc_call(PetscOptionsHasName(nullptr, prefix, "-ksp_norm_type", &user_norm), "PetscOptionsHasName");
  const bool lbfgs = settings_.solver == "lbfgs";
  const bool adaptive = !lbfgs && settings_.forcing == "eisenstat_walker" && !user_rtol;
  EisenstatWalker forcing;
  Real eta = 0;
  problem.linearize(v, gradient_.data());
  for (;;) {
    report.residual = std::sqrt(dot(comm_, gradient_, gradient_));
    report.scaled_residual = problem.scaled_residual(gradient_.data());
    if (report.iterations == 0) report.residual0 = report.residual;
    if (report.residual <= settings_.rtol * report.residual0 || report.scaled_residual <= settings_.atol ||
        report.residual <= problem.residual_floor()) {
      report.converged = true;
      break;
    }
    if (report.iterations == (lbfgs ? kLbfgsIterations : 1) * settings_.max_iterations) {
      report.failure = "no convergence in " + std::to_string(report.iterations) +
                       (lbfgs ? " L-BFGS iterations" : " Newton iterations");
      break;
    }
    ++report.iterations;

    // The linear solve: (P H P + I − P) d = −g from a zero guess (spec §10.8: CG from zero on an
    // SPD system returns a descent direction).
    if (!operator_ready) {  // a new layout: KSP and PC forget the old sizes
      create_ksp(&problem);
      operator_->setup(problem);
      setup_multigrid(problem);
      operator_ready = true, layout_ = problem.layout();
    }
    // The coarse operator of a solve's first linearisation serves all its Newton iterations: a
    // preconditioner need not follow the tangent, and its assembly and GAMG set-up cost about 60
    // fine products (the 3-D cantilever of docs/performance.md).
    if (multigrid_ && report.iterations == 1) multigrid_->update(*problem.coarse_space());
    // L-BFGS keeps the operator, and so its preconditioner H₀, of the solve's first linearisation.
    if (!lbfgs || report.iterations == 1) {
      operator_->update(problem);
      petsc_call(KSPSetOperators(ksp_, operator_->mat(), operator_->mat()), "KSPSetOperators");
    }
    if (lbfgs && report.iterations == 1) {
      const GalerkinProductAlgorithm galerkin(comm_, ksp_);
      petsc_call(KSPSetUp(ksp_), "KSPSetUp");
      history_.clear();
    }
    if (adaptive) eta = forcing.next(report.residual, settings_.rtol * report.residual0);
    previous_v_.assign(v, v + n), previous_gradient_ = gradient_;
    for (;;) {
      PetscInt ksp_iterations = 0;
      KSPConvergedReason reason = KSP_CONVERGED_ITERATING;
      if (lbfgs) {
        lbfgs_direction(rhs.vec, solution.vec);
        ksp_iterations = 1;  // one application of the preconditioner
      } else {
        solve_linear(rhs.vec, solution.vec, adaptive, user_norm, eta, ksp_iterations, reason);
      }
      report.ksp_iterations += ksp_iterations;

      Real slope = dot(comm_, gradient_, direction_);
      bool gradient_step = false;
      if (!(slope < 0) || reason == KSP_DIVERGED_NANORINF) {  // fallback: the Jacobi-scaled gradient
        problem.diagonal(diagonal_.data());
        for (std::size_t i = 0; i < n; ++i) direction_[i] = -gradient_[i] / diagonal_[i];
        slope = dot(comm_, gradient_, direction_);
        gradient_step = true, ++report.gradient_steps;
      }

      // Backtracking line search (spec §10.8): Armijo on E while the decrease a step predicts
      // (−α g·d) stands above the round-off of E; below it (near the solution, or after many
      // halvings) E cannot tell a decrease from noise and would accept any step, so the step is
      // judged by the norm of the gradient instead.
      const Real noise = problem.energy_noise();
      Real alpha = 1, change = 0;
      int halvings = 0;
      bool accepted = false, by_gradient = false;
      for (; - alpha * slope > noise; ++halvings, alpha *= 0.5) {
        for (std::size_t i = 0; i < n; ++i) trial_[i] = alpha * direction_[i];
        change = problem.energy_change(trial_.data());
        accepted = change <= 1e-4 * alpha * slope;
        if (accepted || halvings == settings_.max_halvings) break;
      }
      if (accepted) {
        for (std::size_t i = 0; i < n; ++i) v[i] += trial_[i];
        problem.linearize(v, gradient_.data());
      } else {
        int more = 0;
        by_gradient = true, alpha = 1;
        accepted = gradient_search(problem, v, report.residual, alpha, more);
        halvings += more;
      }
      report.line_search_halvings += halvings;
      if (settings_.monitor && root)
        PetscPrintf(
            PETSC_COMM_SELF,
            "  newton %2d: |P grad E| %.3e (rel %.3e, %.3e cells)  eta %.1e ksp %4d %s  %s alpha %g  %s "
            "%.6e\n",
            report.iterations, report.residual, report.residual / report.residual0, report.scaled_residual,
            eta, static_cast<int>(ksp_iterations), KSPConvergedReasons[reason],
            gradient_step ? "gradient" : "newton", alpha, by_gradient ? "|g| search, dE" : "dE", change);
      if (accepted) {
        if (lbfgs) remember_step(v);
        break;
      }
      if (lbfgs && !history_.empty()) {  // the quasi-Newton direction failed: from H₀ alone
        history_.clear();
        continue;
      }
      // An inexact direction the line search could not use: near round-off the step is judged by
      // ‖g‖, which a loose CG solve need not reduce (CG's residual is not monotone). Solved again
      // at the fixed forcing's tolerance before giving up; v and the linearisation are unchanged.
      if (adaptive && eta > EisenstatWalker::kSmallest) {
        eta = forcing.tighten();
        continue;
      }
      report.failure = "the line search found no decrease of the energy or its gradient (iteration " +
                       std::to_string(report.iterations) + ", KSP " + KSPConvergedReasons[reason] + ")";
      break;
    }
    if (!report.failure.empty()) break;
  }
  return report;
}

// (P H P + I − P) solution = −rhs by the KSP from a zero guess, to relative tolerance η (the
// adaptive forcing) or the KSP's own.
void NewtonSolver::solve_linear(Vec rhs, Vec solution, bool adaptive, bool user_norm, Real& eta,
                                PetscInt& iterations, KSPConvergedReason& reason) {
  PetscReal rtol = 0, abstol = 0, dtol = 0;
  PetscInt max_its = 0;
  petsc_call(KSPGetTolerances(ksp_, &rtol, &abstol, &dtol, &max_its), "KSPGetTolerances");
  if (adaptive) {
    petsc_call(KSPSetTolerances(ksp_, eta, abstol, dtol, max_its), "KSPSetTolerances");
    PetscBool cg = PETSC_FALSE;
    petsc_call(PetscObjectTypeCompare(reinterpret_cast<PetscObject>(ksp_), KSPCG, &cg),
               "PetscObjectTypeCompare");
    if (cg && !user_norm) petsc_call(KSPSetNormType(ksp_, KSP_NORM_UNPRECONDITIONED), "KSPSetNormType");
  } else {
    eta = rtol;
  }
  petsc_call(VecScale(rhs, -1.0), "VecScale");
  petsc_call(VecSet(solution, 0.0), "VecSet");
  PetscErrorCode solved = 0;
  {
    const GalerkinProductAlgorithm galerkin(comm_, ksp_);
    solved = KSPSolve(ksp_, rhs, solution);
  }
  petsc_call(VecScale(rhs, -1.0), "VecScale");
  if (solved != 0) petsc_call(solved, "KSPSolve");
  KSPGetIterationNumber(ksp_, &iterations);
  KSPGetConvergedReason(ksp_, &reason);
}

// direction = −H gradient, H the L-BFGS inverse Hessian over the KSP's preconditioner (one
// application, e.g. a multigrid V-cycle, per iteration).
void NewtonSolver::lbfgs_direction(Vec gradient, Vec direction) {
  PC pc = nullptr;
  petsc_call(KSPGetPC(ksp_, &pc), "KSPGetPC");
  history_.direction(
      gradient_,
      [&](const std::vector<Real>& in, std::vector<Real>& out) {
        // in and out are gradient_'s and direction_'s shapes; the PC reads and writes
        // through the wrapped vectors.
        std::copy(in.begin(), in.end(), scratch_.begin());
        petsc_call(VecPlaceArray(gradient, scratch_.data()), "VecPlaceArray");
        petsc_call(PCApply(pc, gradient, direction), "PCApply");
        petsc_call(VecResetArray(gradient), "VecResetArray");
        out = direction_;
      },
      lbfgs_out_);
  direction_ = lbfgs_out_;
}

// The accepted step's pair (s, y) for the next L-BFGS directions.
void NewtonSolver::remember_step(const Real* v) {
  std::vector<Real> s(previous_v_.size()), y(previous_v_.size());
  for (std::size_t i = 0; i < s.size(); ++i)
    s[i] = v[i] - previous_v_[i], y[i] = gradient_[i] - previous_gradient_[i];
  history_.push(std::move(s), std::move(y));
}

// The PC is PCMG (nendo's default or the options'): its coarse level for this layout.
void NewtonSolver::setup_multigrid(NewtonProblem& problem) {
  multigrid_.reset();
  PC pc = nullptr;
  PetscBool is_mg = PETSC_FALSE;
  petsc_call(KSPGetPC(ksp_, &pc), "KSPGetPC");
  petsc_call(PetscObjectTypeCompare(reinterpret_cast<PetscObject>(pc), PCMG, &is_mg),
             "PetscObjectTypeCompare");
  if (!is_mg) return;
  CoarseSpace* coarse = problem.coarse_space();
  if (!coarse)
    throw Error("-pc_type mg: this implicit problem has no coarse space to build multigrid levels on");
  multigrid_ = std::make_unique<GeometricMultigrid>();
  multigrid_->setup(pc, problem.dofs(), *coarse, operator_->mat());
}

// The line search near round-off: the longest step v + α d (α = 1, 1/2, ...) whose projected
// gradient is smaller than before (norm `before`). On success v and the linearisation move there;
// otherwise both stay at v.
bool NewtonSolver::gradient_search(NewtonProblem& problem, Real* v, Real before, Real& alpha, int& halvings) {
  const std::size_t n = gradient_.size();
  for (;; ++halvings, alpha *= 0.5) {
    for (std::size_t i = 0; i < n; ++i) trial_[i] = v[i] + alpha * direction_[i];
    bool admissible = true;
    try {
      problem.linearize(trial_.data(), gradient_.data());
    } catch (const NewtonFailure&) {
      admissible = false;  // an inverted particle: shorter
    }
    if (admissible && std::sqrt(dot(comm_, gradient_, gradient_)) < before) {
      std::copy(trial_.begin(), trial_.end(), v);
      return true;
    }
    if (halvings == kGradientHalvings) break;
  }
  problem.linearize(v, gradient_.data());
  return false;
}

}  // namespace nendo
