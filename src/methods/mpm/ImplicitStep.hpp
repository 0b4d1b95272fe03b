#pragma once
// The implicit MPM step (spec 002 §10) for dimension D and kernel Kernel: P2G of mass and
// momentum, Newton–Krylov on the incremental potential over the grid velocities
// (ImplicitSystem.hpp, solvers/NewtonSolver), then G2P as in the explicit step; a failed solve is
// retried in half steps.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/StageClock.hpp"
#include "methods/ImplicitNewton.hpp"
#include "methods/mpm/ImplicitSystem.hpp"
#include "methods/mpm/MpmModel.hpp"
#include "methods/mpm/Transfers.hpp"
#include "solvers/NewtonSolver.hpp"

namespace nendo {

template <int D, class Kernel>
class ImplicitStep {
 public:
  ImplicitStep(const MpmModel<D>& model, Transfers<D, Kernel>& transfers)
      : model_(model),
        transfers_(transfers),
        system_(std::make_unique<MpmImplicitSystem<D, Kernel>>(model.materials,
                                                               model.implicit_settings.project_spd)) {
    system_->set_densities(model.density);
    // spec §10.6: every collider constrains the solve; separate ones also act on the solution
    // (§10.6 step 7), for nodes the predictor did not bring into contact.
    for (std::size_t i = 0; i < model.colliders.size(); ++i)
      if (model.colliders[i].boundary() == Boundary::Separate) separate_.add(model.colliders[i]);
  }

  // One step of the run (step: its number, for messages), retried in halves as needed.
  void advance(Space& space, Real t, Real dt, long step, StageClock& clock) {
    step_ = step;
    stats_ = SolverStats{};
    if (!newton_) {
      newton_ = std::make_unique<NewtonSolver>(space.comm(), newton_settings(model_.implicit_settings));
      if (space.rank() == 0)
        std::printf("nendo: implicit %s, %s operator, KSP %s\n", model_.implicit_settings.scheme.c_str(),
                    model_.implicit_settings.operator_type.c_str(), newton_->ksp_description().c_str());
    }
    advance(space, t, dt, 0, clock);
  }

  const SolverStats& stats() const { return stats_; }

 private:
  // One implicit step (spec §10.10): P2G of mass and momentum (and the lagged viscous stress),
  // the predictor v* = vⁿ + Δt g, Newton on E(v) with the colliders as constraints, the separate
  // colliders again on the solution, then G2P as in the explicit step. A solve that fails is retried as
  // two steps of half the size, down to implicit.max_halvings halvings.
  void advance(Space& space, Real t, Real dt, int depth, StageClock& clock) {
    GhostExchange& ghost = space.ghost();
    // The midpoint rule is backward Euler over half the step for the midpoint velocity u:
    // m(u − vⁿ)/(Δt/2) = f(xⁿ + Δt/2 u) + f_ext, then v^{n+1} = 2u − vⁿ and x^{n+1} = xⁿ + Δt u.
    const Real h = model_.midpoint ? dt / 2 : dt;
    transfers_.sticky().update(space, t);  // which sticky walls reflect
    clock.time(kP2G, [&] {
      transfers_.clear_windows(ghost);
      transfers_.particles_to_grid(space, ghost, h, 0, ghost.source_keys().size());
    });
    clock.time(kScatter,
               [&] { ghost.scatter_add(transfers_.windows(), model_.grid_components(), transfers_.grid()); });
    NewtonReport report;
    clock.time(kSolve, [&] {
      transfers_.clear_grid_velocity(ghost);  // then v* (and vⁿ for FLIP and midpoint), no colliders
      transfers_.update_grid(ghost, t, h, false, 0, ghost.grid_blocks());
      system_->prepare(space, transfers_.grid(), model_.grid_components(), transfers_.grid_velocity(),
                       model_.velocity_components(), model_.colliders, t, h, solution_, &transfers_.sticky());
      try {
        report = newton_->solve(*system_, solution_.data());
      } catch (const NewtonFailure& e) {
        report.converged = false, report.failure = e.what();
      }
    });
    record(report);
    if (!report.converged) {
      if (depth >= model_.implicit_settings.max_halvings)
        throw SolverError(step_, t,
                          "the implicit solve failed at the smallest step " + fmt_real(dt) + " s (" +
                              std::to_string(depth) + " halvings): " + report.failure);
      if (space.rank() == 0)
        std::fprintf(stderr, "nendo: step %ld: %s; retrying with dt = %.6g s\n", step_,
                     report.failure.c_str(), dt / 2);
      advance(space, t, dt / 2, depth + 1, clock);
      advance(space, t + dt / 2, dt / 2, depth + 1, clock);
      return;
    }
    clock.time(kGrid, [&] {
      const int cv = model_.velocity_components();
      system_->write_solution(solution_.data(), transfers_.grid_velocity(), cv);
      if (model_.midpoint)
        for (std::size_t i = 0; i < transfers_.grid_velocity().size(); i += cv)
          for (int a = 0; a < D; ++a) {
            const Real u = transfers_.grid_velocity()[i + a];
            transfers_.grid_velocity()[i + 2 * D + a] = u;
            transfers_.grid_velocity()[i + a] = 2 * u - transfers_.grid_velocity()[i + D + a];
          }
      project_separate(ghost, t, 0);
      if (model_.midpoint) project_separate(ghost, t, 2 * D);
    });
    clock.time(kGather, [&] {
      ghost.gather(transfers_.grid_velocity(), model_.velocity_components(), transfers_.windows());
    });
    clock.time(kGrid, [&] { transfers_.reflect_behind_sticky_walls(space); });
    clock.time(kG2P, [&] { transfers_.grid_to_particles(space, dt, step_); });
    clock.time(kMigrate, [&] { space.migrate(); });
  }

  static std::string fmt_real(Real x) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", x);
    return text;
  }

  void record(const NewtonReport& r) {
    ++stats_.substeps;
    stats_.newton_iterations += r.iterations;
    stats_.ksp_iterations += r.ksp_iterations;
    stats_.line_search_halvings += r.line_search_halvings;
    stats_.gradient_steps += r.gradient_steps;
    stats_.residual = r.residual0 > 0 ? r.residual / r.residual0 : 0;
    stats_.scaled_residual = r.scaled_residual;
  }

  void project_separate(const GhostExchange& ghost, Real t, int first) {
    if (separate_.empty()) return;
    const int c = model_.grid_components(), cv = model_.velocity_components(), npb = ghost.nodes_per_block();
    for (std::size_t b = 0; b < ghost.grid_blocks(); ++b) {
      separate_.template project_block<D>(Transfers<D, Kernel>::node_block(ghost, b),
                                          transfers_.grid().data() + b * npb * c, c,
                                          transfers_.grid_velocity().data() + b * npb * cv + first, cv, t);
    }
  }

  const MpmModel<D>& model_;
  Transfers<D, Kernel>& transfers_;
  long step_ = 0;
  ColliderSet separate_;  // the colliders that also act after the solve
  std::unique_ptr<NewtonSolver> newton_;
  std::unique_ptr<MpmImplicitSystem<D, Kernel>> system_;
  std::vector<Real> solution_;
  SolverStats stats_;
};

}  // namespace nendo
