#include "methods/fem/FemBackwardEuler.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

#include "core/ReproducibleSum.hpp"
#include "methods/ImplicitNewton.hpp"
#include "solvers/PetscCall.hpp"

namespace nendo {
namespace fem {

namespace {
bool owned_free_regular(const ParticleSet& own, std::size_t k) {
  return own.int32("status")[k] == static_cast<std::int32_t>(NodeStatus::Regular) && !own.int32("fixed")[k];
}
}  // namespace

FemBackwardEuler::FemBackwardEuler(HierarchicalFem& fem, Space& space, Real dt)
    : fem_(fem),
      space_(space),
      dt_(dt),
      mass_factor_(1 + fem.scene_.sections.get<FemSettings>().damping * dt) {
  const ParticleSet& own = space.particles();
  const std::size_t n_own = fem_.view_.owned(), n = fem_.view_.size();
  std::vector<char> active(n_own);
  for (std::size_t k = 0; k < n_own; ++k) active[k] = owned_free_regular(own, k);
  dofs_ = DofMap(space.comm(), active, 3);
  std::vector<Real> global(n, -1);  // exchanged as doubles: exact below 2^53
  for (std::size_t k = 0; k < n_own; ++k) global[k] = static_cast<Real>(dofs_.global(k));
  space.halo().update_values(global.data(), 1, global.data() + n_own);
  global_.assign(global.begin(), global.end());
  const Real* mass = own.real("mass");
  const Real* v = own.real("velocity");
  target_.resize(static_cast<std::size_t>(dofs_.local_size()));
  for (PetscInt l = 0; l < dofs_.owned_nodes(); ++l) {
    const std::size_t k = dofs_.node(l);
    for (int c = 0; c < 3; ++c) target_[3 * l + c] = mass[k] * (v[3 * k + c] + dt * fem_.gravity_[c]);
  }
  h_min_ = fem_.stable_dt_;  // 0.4 h_min / c: only the ratio to dt matters below
}

void FemBackwardEuler::spread(const Real* unknowns, std::vector<Real>& out) {
  const std::size_t n_own = fem_.view_.owned();
  out.assign(3 * fem_.view_.size(), 0.0);
  for (PetscInt l = 0; l < dofs_.owned_nodes(); ++l)
    std::copy_n(unknowns + 3 * l, 3, &out[3 * dofs_.node(l)]);
  space_.halo().update_values(out.data(), 3, out.data() + 3 * n_own);
  fem_.interpolate_hanging(out);
}

void FemBackwardEuler::corner_values(std::size_t i, const std::vector<Real>& view, Real (&out)[4][3]) const {
  for (int a = 0; a < 4; ++a)
    std::copy_n(&view[3 * static_cast<std::size_t>(fem_.needed_slots_[4 * i + a])], 3, out[a]);
}

Mat12 FemBackwardEuler::tangent(std::size_t i) const {
  Real x[4][3];
  corner_values(i, x_, x);
  const Index t = fem_.needed_[i];
  return dt_ * dt_ *
         element_hessian(fem_.needed_rest_[i], fem_.model_->constants[t].D, x,
                         fem_.scene_.sections.get<ImplicitSettings>().project_spd);
}

// The tangents of every needed tet at the linearisation point, computed once for the many
// products of a matrix-free solve (an element Hessian costs ~100 products with it).
const std::vector<Mat12>& FemBackwardEuler::tangents() {
  if (tangents_current_) return tangents_;
  tangents_.resize(fem_.needed_.size());
  for (std::size_t i = 0; i < tangents_.size(); ++i) tangents_[i] = tangent(i);
  tangents_current_ = true;
  return tangents_;
}

void FemBackwardEuler::linearize(const Real* v, Real* gradient) {
  tangents_current_ = false;
  spread(v, v_);
  x_.resize(v_.size());
  for (std::size_t j = 0; j < v_.size(); ++j) x_[j] = fem_.x_[j] + dt_ * v_[j];
  fem_.compute_forces(x_, v_);
  const Real* mass = space_.particles().real("mass");
  round_off_.resize(4 * fem_.needed_.size());
  for (std::size_t i = 0; i < fem_.needed_.size(); ++i) {
    Real x[4][3], round_off[4];
    corner_values(i, x_, x);
    const Index t = fem_.needed_[i];
    element_force_round_off(fem_.needed_rest_[i], fem_.model_->constants[t].D, x, round_off);
    std::copy_n(round_off, 4, &round_off_[4 * i]);
  }
  // The scales of what cancels in ∇E (the element forces at a node, M v, M ṽ) and of what
  // energy_change sums (|W_T|, m |v| (|v| + |ṽ|)): below them Newton and its line search see noise.
  // Then the round-off of the element forces themselves (positions in absolute coordinates: at
  // small strain it exceeds 1e-12 of the forces), summed in quadrature over a node's tets.
  Real norms[5] = {0, 0, 0, 0, 0};
  for (Real w : fem_.energies_) norms[3] += std::abs(w);
  for (PetscInt l = 0; l < dofs_.owned_nodes(); ++l) {
    const std::size_t k = dofs_.node(l);
    Real element_forces = 0, round_off = 0;
    for (std::uint32_t e = fem_.incidence_offset_[k]; e < fem_.incidence_offset_[k + 1]; ++e) {
      const Real* f = &fem_.tet_forces_[3 * fem_.incidence_corner_[e]];
      const Real w = fem_.incidence_weight_[e];
      element_forces += w * std::hypot(f[0], f[1], f[2]);
      round_off += w * w * round_off_[fem_.incidence_corner_[e]] * round_off_[fem_.incidence_corner_[e]];
    }
    norms[0] += dt_ * dt_ * element_forces * element_forces;
    norms[4] += dt_ * dt_ * round_off;
    for (int c = 0; c < 3; ++c) {
      const Real momentum = mass_factor_ * mass[k] * v[3 * l + c];
      gradient[3 * l + c] = momentum - target_[3 * l + c] - dt_ * fem_.force_[3 * k + c];
      norms[1] += momentum * momentum;
      norms[2] += target_[3 * l + c] * target_[3 * l + c];
      norms[3] += std::abs(v[3 * l + c]) * (std::abs(momentum) + std::abs(target_[3 * l + c]));
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, norms, 5, MPI_DOUBLE, MPI_SUM, space_.comm());
  floor_ = 1e-12 * (std::sqrt(norms[0]) + std::sqrt(norms[1]) + std::sqrt(norms[2])) + std::sqrt(norms[4]);
  energy_noise_ = 64 * std::numeric_limits<Real>::epsilon() * norms[3];
}

// Each term a difference of small quantities (no cancellation of large totals), summed exactly.
Real FemBackwardEuler::energy_change(const Real* d) {
  spread(d, scratch_);
  const Real* mass = space_.particles().real("mass");
  std::vector<Real> terms;
  terms.reserve(static_cast<std::size_t>(dofs_.owned_nodes()) + fem_.needed_.size());
  for (PetscInt l = 0; l < dofs_.owned_nodes(); ++l) {
    const std::size_t k = dofs_.node(l);
    Real e = 0;
    for (int c = 0; c < 3; ++c) {
      const Real vc = v_[3 * k + c], dc = d[3 * l + c];
      e += mass_factor_ * mass[k] * (vc * dc + 0.5 * dc * dc) - dc * target_[3 * l + c];
    }
    terms.push_back(e);
  }
  Real x[4][3], moved[4][3];
  for (std::size_t i = 0; i < fem_.needed_.size(); ++i) {
    if (static_cast<std::size_t>(fem_.needed_slots_[4 * i]) >= fem_.view_.owned())
      continue;  // counted by its owner
    corner_values(i, x_, x);
    corner_values(i, scratch_, moved);
    for (int a = 0; a < 4; ++a)
      for (int c = 0; c < 3; ++c) moved[a][c] = x[a][c] + dt_ * moved[a][c];
    const Index t = fem_.needed_[i];
    const RestShape& rest = fem_.needed_rest_[i];
    const Stiffness& D = fem_.model_->constants[t].D;
    terms.push_back(strain_energy(rest, D, moved) - strain_energy(rest, D, x));
  }
  return reproducible_sums(space_.comm(), {terms})[0];
}

void FemBackwardEuler::apply(const Real* x, Real* y) {
  spread(x, scratch_);
  const std::vector<Mat12>& K = tangents();
  std::vector<Real>& product = product_;
  product.resize(12 * fem_.needed_.size());
  Real corners[4][3];
  for (std::size_t i = 0; i < fem_.needed_.size(); ++i) {
    corner_values(i, scratch_, corners);
    Eigen::Map<Eigen::Matrix<Real, 12, 1>> out(&product[12 * i]);
    // lazyProduct: unrolled in registers; Eigen sends a 12 x 12 product to its run-time GEMV kernel,
    // which took 45 % of a multigrid solve (perf, the beam of docs/performance.md).
    out.noalias() = K[i].lazyProduct(Eigen::Map<const Eigen::Matrix<Real, 12, 1>>(&corners[0][0]));
  }
  const Real* mass = space_.particles().real("mass");
  for (PetscInt l = 0; l < dofs_.owned_nodes(); ++l) {
    const std::size_t k = dofs_.node(l);
    for (int c = 0; c < 3; ++c) y[3 * l + c] = mass_factor_ * mass[k] * x[3 * l + c];
    for (std::uint32_t e = fem_.incidence_offset_[k]; e < fem_.incidence_offset_[k + 1]; ++e)
      for (int c = 0; c < 3; ++c)
        y[3 * l + c] += fem_.incidence_weight_[e] * product[3 * fem_.incidence_corner_[e] + c];
  }
}

// diag(P_Tᵀ K_T P_T) at node k: Σ over pairs of k's entries of one tet, w_a w_b K_ab (diagonal).
void FemBackwardEuler::diagonal(Real* d) {
  const Real* mass = space_.particles().real("mass");
  for (PetscInt l = 0; l < dofs_.owned_nodes(); ++l) {
    const std::size_t k = dofs_.node(l);
    for (int c = 0; c < 3; ++c) d[3 * l + c] = mass_factor_ * mass[k];
    const std::uint32_t begin = fem_.incidence_offset_[k], end = fem_.incidence_offset_[k + 1];
    for (std::uint32_t e = begin; e < end;) {
      const std::uint32_t tet = fem_.incidence_corner_[e] / 4;
      std::uint32_t stop = e;
      while (stop < end && fem_.incidence_corner_[stop] / 4 == tet) ++stop;
      const Mat12& K = tangents()[tet];
      for (std::uint32_t p = e; p < stop; ++p)
        for (std::uint32_t q = e; q < stop; ++q) {
          const int a = static_cast<int>(fem_.incidence_corner_[p] % 4),
                    b = static_cast<int>(fem_.incidence_corner_[q] % 4);
          for (int c = 0; c < 3; ++c)
            d[3 * l + c] += fem_.incidence_weight_[p] * fem_.incidence_weight_[q] * K(3 * a + c, 3 * b + c);
        }
      e = stop;
    }
  }
}

void FemBackwardEuler::assemble(::Mat A) {
  const TetHierarchy& h = fem_.model_->hierarchy;
  const Real* mass = space_.particles().real("mass");
  Real block[9];
  for (PetscInt l = 0; l < dofs_.owned_nodes(); ++l) {
    const PetscInt g = dofs_.first_node() + l;
    const Real m = mass_factor_ * mass[dofs_.node(l)];
    for (int r = 0; r < 9; ++r) block[r] = r % 4 == 0 ? m : 0;
    petsc_call(MatSetValuesBlocked(A, 1, &g, 1, &g, block, ADD_VALUES), "MatSetValuesBlocked");
  }
  std::vector<Master> masters[4];
  for (std::size_t i = 0; i < fem_.needed_.size(); ++i) {
    if (static_cast<std::size_t>(fem_.needed_slots_[4 * i]) >= fem_.view_.owned())
      continue;  // its owner adds it
    const fem::Corners corners = h.corners(fem_.needed_[i]);
    const Mat12 K = tangent(i);
    bool hanging = false;
    PetscInt corner_dofs[4];  // −1 for a held node: PETSc skips negative indices
    for (int a = 0; a < 4; ++a) {
      const Index c = corners[a];
      hanging = hanging || fem_.status_[c] == NodeStatus::Hanging;
      corner_dofs[a] = static_cast<PetscInt>(global_[static_cast<std::size_t>(fem_.slot_[c])]);
    }
    if (!hanging) {  // the common case: the 12 x 12 block at once (K is symmetric: either order)
      petsc_call(MatSetValuesBlocked(A, 4, corner_dofs, 4, corner_dofs, K.data(), ADD_VALUES),
                 "MatSetValuesBlocked");
      continue;
    }
    for (int a = 0; a < 4; ++a) {
      const Index c = corners[a];
      if (fem_.status_[c] == NodeStatus::Hanging)
        fem_.active_->masters(c, masters[a]);
      else
        masters[a].assign(1, {c, 1.0});
    }
    for (int a = 0; a < 4; ++a)
      for (const Master& ma : masters[a]) {
        const PetscInt ga = static_cast<PetscInt>(global_[static_cast<std::size_t>(fem_.slot_[ma.node])]);
        if (ga < 0) continue;
        for (int b = 0; b < 4; ++b)
          for (const Master& mb : masters[b]) {
            const PetscInt gb = static_cast<PetscInt>(global_[static_cast<std::size_t>(fem_.slot_[mb.node])]);
            if (gb < 0) continue;
            for (int r = 0; r < 3; ++r)
              for (int c = 0; c < 3; ++c) block[3 * r + c] = ma.weight * mb.weight * K(3 * a + r, 3 * b + c);
            petsc_call(MatSetValuesBlocked(A, 1, &ga, 1, &gb, block, ADD_VALUES), "MatSetValuesBlocked");
          }
      }
  }
}

// The largest velocity error |g_k| / ((1 + c_m Δt) m_k) times Δt, in units of 0.4 h_min / c · c:
// a distance per step relative to the finest tets' altitude.
Real FemBackwardEuler::scaled_residual(const Real* gradient) {
  const Real* mass = space_.particles().real("mass");
  Real worst = 0;
  for (PetscInt l = 0; l < dofs_.owned_nodes(); ++l) {
    const Real m = mass_factor_ * mass[dofs_.node(l)];
    const Real g = std::hypot(gradient[3 * l], gradient[3 * l + 1], gradient[3 * l + 2]);
    worst = std::max(worst, g / m * dt_);
  }
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, space_.comm());
  return worst / h_min_;
}

CoarseSpace* FemBackwardEuler::coarse_space() {
  if (!coarse_) coarse_ = std::make_unique<FemCoarseSpace>(fem_, space_, dofs_, global_);
  coarse_->set_operator(mass_factor_, &tangents());
  return coarse_.get();
}

bool FemBackwardEuler::coordinates(Real* xyz) {
  for (PetscInt l = 0; l < dofs_.owned_nodes(); ++l) std::copy_n(&fem_.x_[3 * dofs_.node(l)], 3, xyz + 3 * l);
  return true;
}

void FemBackwardEuler::initial_guess(Real* v) const {
  for (PetscInt l = 0; l < dofs_.owned_nodes(); ++l) std::copy_n(&fem_.v_[3 * dofs_.node(l)], 3, v + 3 * l);
}

void FemBackwardEuler::finish(const Real* v) {
  ParticleSet& own = space_.particles();
  Real* x = own.positions();
  Real* velocity = own.real("velocity");
  for (PetscInt l = 0; l < dofs_.owned_nodes(); ++l) {
    const std::size_t k = dofs_.node(l);
    for (int c = 0; c < 3; ++c) {
      velocity[3 * k + c] = v[3 * l + c];
      x[3 * k + c] = fem_.x_[3 * k + c] + dt_ * v[3 * l + c];
    }
  }
}

}  // namespace fem

// One backward Euler step: Newton on FemBackwardEuler's potential, then the colliders.
void HierarchicalFem::solve_implicit(Space& space, Real t, Real dt) {
  if (!newton_) {
    const NewtonSettings newton =
        newton_settings(scene_.sections.get<ImplicitSettings>(), /*multigrid_by_default=*/true);
    newton_ = std::make_unique<NewtonSolver>(space.comm(), newton);
    if (space.rank() == 0)
      std::printf("nendo: fem backward Euler, %s operator, KSP %s\n", newton.operator_type.c_str(),
                  newton_->ksp_description().c_str());
  }
  fem::FemBackwardEuler problem(*this, space, dt);
  std::vector<Real> v(static_cast<std::size_t>(problem.dofs().local_size()));
  problem.initial_guess(v.data());
  const NewtonReport report = newton_->solve(problem, v.data());
  stats_ = SolverStats{};
  stats_.substeps = 1;
  stats_.newton_iterations = report.iterations;
  stats_.ksp_iterations = report.ksp_iterations;
  stats_.line_search_halvings = report.line_search_halvings;
  stats_.gradient_steps = report.gradient_steps;
  stats_.residual = report.residual0 > 0 ? report.residual / report.residual0 : 0;
  stats_.scaled_residual = report.scaled_residual;
  if (!report.converged)
    throw SolverError(std::lround(t / dt), t,
                      "the fem backward Euler step did not converge: " + report.failure);
  problem.finish(v.data());
  collide(space, t, dt);
}

}  // namespace nendo
