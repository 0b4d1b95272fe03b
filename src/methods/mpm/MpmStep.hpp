#pragma once
// The explicit MPM step of spec 002 §9.2 for dimension D and kernel Kernel (QuadraticSpline or
// CubicSpline). Each stage is one function; each loops over the spine's particle blocks (P2G,
// G2P: the block's window) or grid blocks (grid update), in structure-of-arrays data.
#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <variant>
#include <vector>

#include "colliders/Collider.hpp"
#include "core/Mpi.hpp"
#include "core/ReproducibleSum.hpp"
#include "core/StageClock.hpp"
#include "methods/mpm/GridKernels.hpp"
#include "methods/mpm/ImplicitSystem.hpp"
#include "methods/mpm/Mpm.hpp"
#include "methods/mpm/StickyMirror.hpp"
#include "methods/mpm/materials/Materials.hpp"

namespace nendo {

enum class Transfer { Apic, Pic, Flip };

template <int D, class Kernel>
class MpmStep final : public MpmStepper {
  static constexpr int N = Kernel::kNodes;
  using Mat = Eigen::Matrix<Real, D, D>;
  using Vec = Eigen::Matrix<Real, D, 1>;
  using MatMap = Eigen::Map<Eigen::Matrix<Real, D, D, Eigen::RowMajor>>;
  using VecMap = Eigen::Map<Vec>;
  using K = GridKernels<D, Kernel>;
  using Stencil = typename K::Stencil;

 public:
  explicit MpmStep(const Scene& scene)
      : gravity_(Eigen::Map<const Eigen::Matrix<Real, 3, 1>>(scene.gravity.data()).template head<D>()),
        transfer_(scene.grid.transfer == "pic"    ? Transfer::Pic
                  : scene.grid.transfer == "flip" ? Transfer::Flip
                                                  : Transfer::Apic),
        flip_ratio_(scene.grid.flip_ratio),
        overlap_(scene.grid.overlap),
        cfl_(scene.time.cfl.value_or(0)),
        colliders_(scene.colliders, scene.dimension),
        implicit_(scene.time.integrator == "implicit"),
        midpoint_(implicit_ && scene.implicit.scheme == "midpoint"),
        implicit_settings_(scene.implicit),
        sticky_(colliders_) {
    for (const auto& [name, settings] : scene.materials) {
      materials_.push_back(make_mpm_material(settings));
      density_.push_back(settings.params.at("density"));
      plastic_ = plastic_ || std::visit([](const auto& m) { return m.kPlastic; }, materials_.back());
    }
    if (implicit_) {
      // spec §10.6: every collider constrains the solve; separate ones also act on the solution
      // (§10.6 step 7), for nodes the predictor did not bring into contact.
      for (std::size_t i = 0; i < colliders_.size(); ++i)
        if (colliders_[i].boundary() == Boundary::Separate) separate_.add(colliders_[i]);
      system_ = std::make_unique<MpmImplicitSystem<D, Kernel>>(materials_, implicit_settings_.project_spd);
    }
  }

  NewtonSettings newton_settings() const {
    NewtonSettings newton;
    newton.operator_type = implicit_settings_.operator_type;
    newton.rtol = implicit_settings_.newton_tol;
    newton.atol = implicit_settings_.newton_atol;
    newton.max_iterations = implicit_settings_.max_newton;
    newton.monitor = implicit_settings_.monitor;
    return newton;
  }

  void initialize(Space& space) override {
    ParticleSet& ps = space.particles();
    Real* F = ps.real("F");
    for (std::size_t p = 0; p < ps.size(); ++p) MatMap(F + D * D * p).setIdentity();
    if (ps.has_field("Jp")) std::fill_n(ps.real("Jp"), ps.size(), 1.0);
    if (ps.has_field("tau_viscous")) std::fill_n(ps.real("tau_viscous"), ps.size() * D * D, 0.0);
  }

  // The grid is rebuilt every step and the particle fields hold the rest; only the step counter
  // (for messages) is kept here.
  StateRecord save_state() const override {
    StateRecord state;
    state.integers["step"] = {step_};
    return state;
  }
  void restore(const StateRecord& state) override {
    const auto step = state.integers.find("step");
    if (step != state.integers.end() && step->second.size() == 1) step_ = step->second[0];
  }

  // spec 002 §9.3: Δt_elastic = C h / max_p c_p with the hardened dilatational wave speed (the
  // driver adds the advective bound C h / max_p |v_p|).
  Real stable_dt(const Space& space) const override {
    if (cfl_ <= 0 || implicit_) return std::numeric_limits<Real>::infinity();
    const Real c = max_signal_speed(space, false);
    return c > 0 ? cfl_ * space.geometry().dx / c : std::numeric_limits<Real>::infinity();
  }

  // The explicit step is unstable past h / max_p (c_p + |v_p|) (Courant number 1).
  Real step_limit(const Space& space) const override {
    if (implicit_) return std::numeric_limits<Real>::infinity();
    const Real c = max_signal_speed(space, true);
    return c > 0 ? space.geometry().dx / c : std::numeric_limits<Real>::infinity();
  }

  void advance(Space& space, Real t, Real dt) override {
    ++step_;
    if (implicit_) {
      stats_ = SolverStats{};
      if (!newton_) {
        newton_ = std::make_unique<NewtonSolver>(space.comm(), newton_settings());
        if (space.rank() == 0)
          std::printf("nendo: implicit %s, %s operator, KSP %s\n", implicit_settings_.scheme.c_str(),
                      implicit_settings_.operator_type.c_str(), newton_->ksp_description().c_str());
      }
      try {
        return advance_implicit(space, t, dt, 0);
      } catch (const SolverError& e) {  // a step not taken is not counted: the checkpoint saves step_
        if (!(e.reached() > t)) --step_;
        throw;
      }
    }
    // Each exchange overlaps with work on interior blocks: the blocks other ranks need go first,
    // their slices travel while the rest is computed (the sums keep their order: same bits).
    // Without overlap, the first part is every block.
    const GhostExchange& ghost = space.ghost();
    const std::size_t sources = ghost.source_keys().size(), grids = ghost.grid_blocks();
    const std::size_t source_edge = overlap_ ? ghost.boundary_sources() : sources;
    const std::size_t grid_edge = overlap_ ? ghost.boundary_grid_blocks() : grids;
    const int c = grid_components(), cv = velocity_components();
    sticky_.update(space, t);  // which sticky walls reflect
    clock_.time(kP2G, [&] {    // §9.2 steps 1-3, 6, with the stress of §8 eq. (189) block by block
      clear_windows(ghost);
      particles_to_grid(space, ghost, dt, 0, source_edge);
    });
    clock_.time(kScatter, [&] { ghost.start_scatter(windows_, c); });
    clock_.time(kP2G, [&] { particles_to_grid(space, ghost, dt, source_edge, sources); });
    clock_.time(kScatter, [&] { ghost.finish_scatter(windows_, c, grid_); });
    clock_.time(kGrid, [&] {  // steps 4, 5, 7, 8
      clear_grid_velocity(ghost);
      update_grid(ghost, t, dt, true, 0, grid_edge);
    });
    clock_.time(kGather, [&] { ghost.start_gather(grid_velocity_, cv); });
    clock_.time(kGrid, [&] { update_grid(ghost, t, dt, true, grid_edge, grids); });
    clock_.time(kGather, [&] {
      ghost.finish_gather(grid_velocity_, cv, windows_);
      windows_.push_back(0.0);  // G2P reads a node's 3 components 4 at a time
    });
    clock_.time(kGrid, [&] { reflect_behind_sticky_walls(space); });
    clock_.time(kG2P, [&] { grid_to_particles(space, dt); });  // steps 9-11, 13
    clock_.time(kMigrate, [&] { space.migrate(); });           // step 14
  }

  std::vector<StageTime> stage_times() const override { return clock_.times(); }
  const SolverStats* solver_stats() const override { return implicit_ ? &stats_ : nullptr; }

  void derive_field(const Space& space, const std::string& name, Real* out) const override {
    const ParticleSet& ps = space.particles();
    const Fields f = fields(ps);
    const Real* F = ps.real("F");
    for (std::size_t p = 0; p < ps.size(); ++p) {
      const Mat Fp = MatMap(const_cast<Real*>(F) + D * D * p);
      const Real J = Fp.determinant();
      if (name == "J") {
        out[p] = J * f.Jp(p);
      } else if (name == "Jp") {
        out[p] = f.Jp(p);
      } else if (name == "mass") {
        out[p] = f.mass(p);
      } else {
        const Mat tau = std::visit([&](const auto& m) { return Mat(m.template kirchhoff<D>(Fp, f.Jp(p))); },
                                   materials_[f.material(p)]);
        MatMap(out + D * D * p) = tau / (J * f.Jp(p));  // σ = τ / det F, F = F_E F_P (validation.md §6)
      }
    }
  }

  GlobalDiagnostics diagnostics(const Space& space) const override {
    const ParticleSet& ps = space.particles();
    const Fields f = fields(ps);
    GlobalDiagnostics g = particle_diagnostics(space, [&](std::size_t p) { return f.mass(p); });
    const Real* F = ps.real("F");
    std::vector<std::vector<Real>> energy(1, std::vector<Real>(ps.size()));
    for (std::size_t p = 0; p < ps.size(); ++p) {
      const Mat Fp = MatMap(const_cast<Real*>(F) + D * D * p);
      energy[0][p] = f.V0[p] * std::visit([&](const auto& m) { return m.template psi<D>(Fp, f.Jp(p)); },
                                          materials_[f.material(p)]);
    }
    g.elastic_energy = reproducible_sums(space.comm(), energy)[0];  // bitwise the same on any rank count
    return g;
  }

 private:
  // max_p c_p (the hardened dilatational wave speed), plus |v_p| with `advective`; collective.
  Real max_signal_speed(const Space& space, bool advective) const {
    const ParticleSet& ps = space.particles();
    const Fields f = fields(ps);
    const Real* v = ps.real("velocity");
    Real local = 0, c = 0;
    for (std::size_t p = 0; p < ps.size(); ++p) {
      const int m = f.material(p);
      Real speed =
          std::visit([&](const auto& mat) { return mat.wave_speed(density_[m], f.Jp(p)); }, materials_[m]);
      if (advective) {
        Real v2 = 0;
        for (int a = 0; a < D; ++a) v2 += v[D * p + a] * v[D * p + a];
        speed += std::sqrt(v2);
      }
      local = std::max(local, speed);
    }
    MPI_Allreduce(&local, &c, 1, MPI_DOUBLE, MPI_MAX, space.comm());
    return c;
  }

  // What the stages read per particle besides F, x, v, B. A particle carries J_P only when the
  // scene has a plastic material and its material index only when there are several; its mass is
  // ρ V⁰ (Mpm::register_fields): 208 bytes per particle for an elastic 3D scene.
  struct Fields {
    const std::int32_t* material_index;
    const Real* plastic_ratio;
    const Real* V0;
    const Real* density;
    int material(std::size_t p) const { return material_index ? material_index[p] : 0; }
    Real Jp(std::size_t p) const { return plastic_ratio ? plastic_ratio[p] : 1.0; }
    Real mass(std::size_t p) const { return density[material(p)] * V0[p]; }
  };
  Fields fields(const ParticleSet& ps) const {
    return {ps.has_field("material") ? ps.int32("material") : nullptr,
            ps.has_field("Jp") ? ps.real("Jp") : nullptr, ps.real("volume"), density_.data()};
  }

  // Grid components: mass, momentum (+ Δt force), or mass, momentum, force apart when the step
  // needs vⁿ on the grid (FLIP, the implicit midpoint rule). Velocity components: v^{n+1}, then vⁿ
  // (FLIP, midpoint), then the midpoint velocity that moves the particles (midpoint).
  bool split_grid() const { return transfer_ == Transfer::Flip || midpoint_; }
  int grid_components() const { return split_grid() ? 1 + 2 * D : 1 + D; }
  int velocity_components() const { return midpoint_ ? 3 * D : transfer_ == Transfer::Flip ? 2 * D : D; }

  // τ_p V_p⁰ of particles [begin, end) (one block) into block_stress_, in registers' reach: by
  // runs of consecutive particles of one material, so that the material is chosen once per run
  // and may work on a batch (kirchhoff_batch, Materials.hpp). elastic false: the implicit step's
  // only explicit stress, a viscous fluid's rate term from the last step (spec §10.10).
  const Real* block_stress(const ParticleSet& ps, std::size_t begin, std::size_t end, bool elastic) {
    const Fields f = fields(ps);
    const std::size_t n = end - begin;
    block_stress_.resize(n * D * D);
    Real* tau = block_stress_.data();
    if (elastic) {
      const Real* F = ps.real("F") + D * D * begin;
      if (!f.plastic_ratio && ones_.size() < n) ones_.resize(n, 1.0);
      const Real* Jp = f.plastic_ratio ? f.plastic_ratio + begin : ones_.data();
      for (std::size_t run = 0, next = 0; run < n; run = next) {
        next = f.material_index ? run + 1 : n;
        while (next < n && f.material(begin + next) == f.material(begin + run)) ++next;
        std::visit([&](const auto& m) { kirchhoff_run<D>(m, F, Jp, run, next, tau); },
                   materials_[f.material(begin + run)]);
      }
    } else {
      std::fill(block_stress_.begin(), block_stress_.end(), 0.0);
    }
    if (ps.has_field("tau_viscous")) {  // rate term of viscous fluids, from the last step's L
      const Real* viscous = ps.real("tau_viscous") + D * D * begin;
      for (std::size_t q = 0; q < n * D * D; ++q) tau[q] += viscous[q];
    }
    for (std::size_t q = 0; q < n; ++q) MatMap(tau + D * D * q) *= f.V0[begin + q];
    return tau;
  }

  void clear_windows(const GhostExchange& ghost) {
    windows_.assign(ghost.source_keys().size() * ghost.window_nodes() * grid_components(), 0.0);
  }
  void clear_grid_velocity(const GhostExchange& ghost) {
    grid_velocity_.assign(ghost.grid_blocks() * ghost.nodes_per_block() * velocity_components(), 0.0);
  }

  // P2G into the windows of the source blocks ghost.source_order()[first, last).
  void particles_to_grid(const Space& space, const GhostExchange& ghost, Real dt, std::size_t first,
                         std::size_t last) {
    const ParticleSet& ps = space.particles();
    const ParticleBlocks& blocks = space.blocks();
    const BlockGeometry& g = space.geometry();
    const Real* x = ps.positions();
    const Real* v = ps.real("velocity");
    const Real* B = ps.real("B");
    const Fields f = fields(ps);
    // Optional external acceleration per particle (manufactured solutions, tests): b_p adds
    // m_p b_p w_ip to f_i (spec §8 eq. (189) with a body force).
    const Real* body = ps.has_field("body_force") ? ps.real("body_force") : nullptr;
    const int c = grid_components();
    const int ex = ghost.window_extent(0), ey = ghost.window_extent(1);
    const std::size_t wn = static_cast<std::size_t>(ghost.window_nodes()) * c;
    const Real d_inverse = transfer_ == Transfer::Apic ? Kernel::kInverseD / (g.dx * g.dx) : 0.0;
    const bool flip = split_grid();
    const Vec zero = Vec::Zero();
    for (std::size_t i = first; i < last; ++i) {
      const std::size_t b = ghost.source_order()[i];
      const BlockCoord cb = decode_block_key(blocks.keys[b]);
      Real* window = windows_.data() + b * wn;
      const std::size_t begin = blocks.begin(b);
      const Real* stress = block_stress(ps, begin, blocks.end(b), !implicit_);
      for (std::size_t p = begin; p < blocks.end(b); ++p) {
        const Stencil s = K::stencil(g, cb, x + D * p);
        const Real mp = f.mass(p);
        const Vec mv = mp * VecMap(const_cast<Real*>(v) + D * p);
        const Mat affine = (mp * d_inverse) * Mat(MatMap(const_cast<Real*>(B) + D * D * p));
        const Mat tau = MatMap(const_cast<Real*>(stress) + D * D * (p - begin));
        const Vec fb = body ? Vec(mp * VecMap(const_cast<Real*>(body) + D * p)) : zero;
        Vec e[D][N];
        if (!flip) {  // momentum + Δt force in one set of components
          for (int a = 0; a < D; ++a)
            for (int i = 0; i < N; ++i) e[a][i] = s.wo[a][i] * affine.col(a) - (dt * s.dw[a][i]) * tau.col(a);
          if constexpr (D == 3)
            K::splat_mass_momentum(window, ex, ey, s, mp, mv + dt * fb, e);
          else
            K::splat(window, c, ex, ey, s, mv + dt * fb, e, 1, &mp);
        } else {  // momentum and force apart: FLIP's velocity increment (spec §6.4), the midpoint rule's vⁿ
          Vec force[D][N];  // the momentum keeps APIC's affine part (zero for FLIP and PIC)
          for (int a = 0; a < D; ++a)
            for (int i = 0; i < N; ++i)
              e[a][i] = s.wo[a][i] * affine.col(a), force[a][i] = -s.dw[a][i] * tau.col(a);
          K::splat(window, c, ex, ey, s, mv, e, 1, &mp);
          K::splat(window, c, ex, ey, s, fb, force, 1 + D, nullptr);
        }
      }
      if (!sticky_.empty()) fold_behind_sticky_walls(b, window);
    }
  }

  // One implicit step (spec §10.10): P2G of mass and momentum (and the lagged viscous stress),
  // the predictor v* = vⁿ + Δt g, Newton on E(v) with the colliders as constraints, the separate
  // colliders again on the solution, then G2P as in the explicit step. A solve that fails is retried as
  // two steps of half the size, down to implicit.max_halvings halvings.
  void advance_implicit(Space& space, Real t, Real dt, int depth) {
    GhostExchange& ghost = space.ghost();
    // The midpoint rule is backward Euler over half the step for the midpoint velocity u:
    // m(u − vⁿ)/(Δt/2) = f(xⁿ + Δt/2 u) + f_ext, then v^{n+1} = 2u − vⁿ and x^{n+1} = xⁿ + Δt u.
    const Real h = midpoint_ ? dt / 2 : dt;
    sticky_.update(space, t);  // which sticky walls reflect
    clock_.time(kP2G, [&] {
      clear_windows(ghost);
      particles_to_grid(space, ghost, h, 0, ghost.source_keys().size());
    });
    clock_.time(kScatter, [&] { ghost.scatter_add(windows_, grid_components(), grid_); });
    NewtonReport report;
    clock_.time(kSolve, [&] {
      clear_grid_velocity(ghost);  // then v* (and vⁿ for FLIP and midpoint), no colliders
      update_grid(ghost, t, h, false, 0, ghost.grid_blocks());
      system_->prepare(space, grid_, grid_components(), grid_velocity_, velocity_components(), colliders_, t,
                       h, solution_, &sticky_);
      try {
        report = newton_->solve(*system_, solution_.data());
      } catch (const NewtonFailure& e) {
        report.converged = false, report.failure = e.what();
      }
    });
    record(report);
    if (!report.converged) {
      if (depth >= implicit_settings_.max_halvings)
        throw SolverError(step_, t,
                          "the implicit solve failed at the smallest step " + fmt_real(dt) + " s (" +
                              std::to_string(depth) + " halvings): " + report.failure);
      if (space.rank() == 0)
        std::fprintf(stderr, "nendo: step %ld: %s; retrying with dt = %.6g s\n", step_,
                     report.failure.c_str(), dt / 2);
      advance_implicit(space, t, dt / 2, depth + 1);
      advance_implicit(space, t + dt / 2, dt / 2, depth + 1);
      return;
    }
    clock_.time(kGrid, [&] {
      const int cv = velocity_components();
      system_->write_solution(solution_.data(), grid_velocity_, cv);
      if (midpoint_)
        for (std::size_t i = 0; i < grid_velocity_.size(); i += cv)
          for (int a = 0; a < D; ++a) {
            const Real u = grid_velocity_[i + a];
            grid_velocity_[i + 2 * D + a] = u;
            grid_velocity_[i + a] = 2 * u - grid_velocity_[i + D + a];
          }
      project_separate(ghost, t, 0);
      if (midpoint_) project_separate(ghost, t, 2 * D);
    });
    clock_.time(kGather, [&] {
      ghost.gather(grid_velocity_, velocity_components(), windows_);
      windows_.push_back(0.0);  // G2P reads a node's 3 components 4 at a time
    });
    clock_.time(kGrid, [&] { reflect_behind_sticky_walls(space); });
    clock_.time(kG2P, [&] { grid_to_particles(space, dt); });
    clock_.time(kMigrate, [&] { space.migrate(); });
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

  // P2G's half of the reflection, on one window of c components (mass, momentum + Δt force, or
  // mass, momentum, force).
  void fold_behind_sticky_walls(std::size_t b, Real* window) const {
    const int c = grid_components();
    const bool split = split_grid();
    sticky_.for_each(b, [&](std::size_t node, std::size_t mirror, const Vec3& wall) {
      const Real* behind = window + c * node;
      Real* front = window + c * mirror;
      front[0] += behind[0];
      for (int a = 0; a < D; ++a) front[1 + a] += 2 * wall[a] * behind[0] - behind[1 + a];
      if (split)
        for (int a = 0; a < D; ++a) front[1 + D + a] -= behind[1 + D + a];
    });
  }

  // G2P's half: the window's nodes behind sticky walls read 2 v_wall − v of their mirrors.
  void reflect_behind_sticky_walls(Space& space) {
    if (sticky_.empty()) return;
    const int cv = velocity_components();
    const std::size_t wn = static_cast<std::size_t>(space.ghost().window_nodes()) * cv;
    for (std::size_t b = 0; b < space.blocks().count(); ++b) {
      Real* window = windows_.data() + b * wn;
      sticky_.for_each(b, [&](std::size_t node, std::size_t mirror, const Vec3& wall) {
        for (int q = 0; q < cv; ++q) window[cv * node + q] = 2 * wall[q % D] - window[cv * mirror + q];
      });
    }
  }

  // The nodes of the ghost exchange's grid block b, for the colliders.
  static NodeBlock node_block(const GhostExchange& ghost, std::size_t b) {
    const BlockGeometry& g = ghost.geometry();
    const BlockCoord cb = decode_block_key(ghost.grid_keys()[b]);
    return {g.origin,
            g.dx,
            {std::int64_t(cb[0]) * g.block, std::int64_t(cb[1]) * g.block, std::int64_t(cb[2]) * g.block},
            g.block};
  }

  void project_separate(const GhostExchange& ghost, Real t, int first) {
    if (separate_.empty()) return;
    const int c = grid_components(), cv = velocity_components(), npb = ghost.nodes_per_block();
    for (std::size_t b = 0; b < ghost.grid_blocks(); ++b) {
      separate_.template project_block<D>(node_block(ghost, b), grid_.data() + b * npb * c, c,
                                          grid_velocity_.data() + b * npb * cv + first, cv, t);
    }
  }

  // The grid velocities of the grid blocks ghost.grid_order()[first, last).
  void update_grid(const GhostExchange& ghost, Real t, Real dt, bool collide, std::size_t first,
                   std::size_t last) {
    const int c = grid_components(), cv = velocity_components();
    const int npb = ghost.nodes_per_block();
    const bool flip = split_grid();
    for (std::size_t i = first; i < last; ++i) {
      const std::size_t b = ghost.grid_order()[i];
      const Real* mass = grid_.data() + b * npb * c;
      Real* velocity = grid_velocity_.data() + b * npb * cv;
      for (int node = 0; node < npb; ++node) {
        const Real m = mass[c * node];
        if (m == 0.0) continue;  // spec §6.3: exact comparison
        const Real* mv = mass + c * node + 1;
        Real* out = velocity + cv * node;
        for (int a = 0; a < D; ++a) {
          const Real momentum = flip ? mv[a] + dt * mv[D + a] : mv[a];
          out[a] = momentum / m + dt * gravity_[a];
          if (flip) out[D + a] = mv[a] / m;  // v^n for the FLIP increment and the midpoint rule
        }
      }
      if (collide)
        colliders_.template project_block<D>(node_block(ghost, b), mass, c, velocity, cv, t);  // §9.2 step 8
    }
  }

  // G2P's sums for any window layout (2D, FLIP's vⁿ, the midpoint rule): per row the sums S_w, S_o,
  // S_d of w, w·o and dw times v_i, contracted along x first.
  static void gather_velocity(const Real* window, int cv, int ex, int ey, const Stencil& s, bool flip,
                              Vec& v_pic, Vec& v_old, Mat& B_new, Mat& L) {
    v_pic.setZero(), v_old.setZero(), B_new.setZero(), L.setZero();
    for (int k = 0; k < (D == 3 ? N : 1); ++k)
      for (int j = 0; j < N; ++j) {
        const Real* node = window + cv * K::row_offset(s, ex, ey, j, k);
        Vec Sw = Vec::Zero(), So = Vec::Zero(), Sd = Vec::Zero(), Sold = Vec::Zero();
        for (int i = 0; i < N; ++i, node += cv) {
          const VecMap vi(const_cast<Real*>(node));
          Sw += s.w[0][i] * vi;
          So += s.wo[0][i] * vi;
          Sd += s.dw[0][i] * vi;
          if (flip) Sold += s.w[0][i] * VecMap(const_cast<Real*>(node) + D);
        }
        const Real w2 = D == 3 ? s.w[D - 1][k] : 1;
        const Real wjk = s.w[1][j] * w2;
        v_pic += wjk * Sw;
        B_new.col(0) += wjk * So;
        B_new.col(1) += (s.wo[1][j] * w2) * Sw;
        L.col(0) += wjk * Sd;
        L.col(1) += (s.dw[1][j] * w2) * Sw;
        if constexpr (D == 3) {
          B_new.col(2) += (s.w[1][j] * s.wo[2][k]) * Sw;
          L.col(2) += (s.w[1][j] * s.dw[2][k]) * Sw;
        }
        if (flip) v_old += wjk * Sold;
      }
  }

  void grid_to_particles(Space& space, Real dt) {
    ParticleSet& ps = space.particles();
    const ParticleBlocks& blocks = space.blocks();
    const BlockGeometry& g = space.geometry();
    const GhostExchange& ghost = space.ghost();
    Real* x = ps.positions();
    Real* v = ps.real("velocity");
    Real* B = ps.real("B");
    Real* F = ps.real("F");
    Real* Jp = ps.has_field("Jp") ? ps.real("Jp") : nullptr;
    const Fields f = fields(ps);
    const ParticleId* id = ps.ids();
    const int cv = velocity_components();
    const int ex = ghost.window_extent(0), ey = ghost.window_extent(1);
    const std::size_t wn = static_cast<std::size_t>(ghost.window_nodes()) * cv;
    const bool flip = transfer_ == Transfer::Flip;
    ParticleId bad_id = std::numeric_limits<ParticleId>::max();
    int bad_field = 0;
    Real* viscous = ps.has_field("tau_viscous") ? ps.real("tau_viscous") : nullptr;
    const Vec origin = Eigen::Map<const Eigen::Matrix<Real, 3, 1>>(g.origin.data()).template head<D>();
    const Real reach = Real(kBlockCoordMax) * g.block * g.dx;  // of the block keys, either way
    // An explicit step that moves a particle more than a cell broke the CFL condition (§9.3).
    const Real max_move2 = implicit_ ? std::numeric_limits<Real>::infinity() : g.dx * g.dx;
    for (std::size_t b = 0; b < blocks.count(); ++b) {
      const BlockCoord cb = decode_block_key(blocks.keys[b]);
      const Real* window = windows_.data() + b * wn;
      for (std::size_t p = blocks.begin(b); p < blocks.end(b); ++p) {
        const Stencil s = K::stencil(g, cb, x + D * p);
        // v_p = Σ w v_i, B_p = Σ w v_i (x_i − x_p)ᵀ, L = ∇v = Σ v_i ∇wᵀ (spec §6.1, §7.2)
        Vec v_pic, v_old = Vec::Zero();
        Mat B_new, L;
        bool gathered = false;
        if constexpr (D == 3)
          if (cv == 3) K::gather_velocity(window, ex, ey, s, v_pic, B_new, L), gathered = true;
        if (!gathered) gather_velocity(window, cv, ex, ey, s, flip, v_pic, v_old, B_new, L);
        Vec v_move = v_pic;
        if (midpoint_) {  // the midpoint velocity moves the particles and updates F
          L = K::gradient(window, cv, ex, ey, s, 2 * D);
          v_move = K::interpolate(window, cv, ex, ey, s, 2 * D);
        }
        const Vec v_change = v_pic - v_old;
        Mat Fp = (Mat::Identity() + dt * L) * Mat(MatMap(F + D * D * p));  // spec §7.2
        Real jp = f.Jp(p);
        if (plastic_)
          std::visit([&](const auto& m) { m.template project<D>(Fp, jp); },
                     materials_[f.material(p)]);  // §3.2
        Vec v_new = v_pic;
        if (transfer_ == Transfer::Flip)
          v_new = (1 - flip_ratio_) * v_pic + flip_ratio_ * (VecMap(v + D * p) + v_change);  // spec §6.4
        if (transfer_ != Transfer::Apic) B_new.setZero();
        const Vec x_new = VecMap(x + D * p) + dt * v_move;  // spec §9.2 step 13
        // A sum is finite only if every term is (one test per particle; which one failed is
        // looked up only for a particle that fails).
        const Real probe = x_new.sum() + v_new.sum() + B_new.sum() + Fp.sum() + jp;
        const int field = !std::isfinite(probe) ? non_finite_field(x_new, v_new, B_new, Fp, jp)
                          : ((x_new - origin).cwiseAbs().array() > reach).any() ? 6
                          : (dt * v_move).squaredNorm() > max_move2             ? 7
                                                                                : 0;
        if (field != 0) {  // keep this particle's last good state; the step fails below
          if (id[p] < bad_id) bad_id = id[p], bad_field = field;
          continue;
        }
        VecMap(x + D * p) = x_new;
        VecMap(v + D * p) = v_new;
        MatMap(B + D * D * p) = B_new;
        MatMap(F + D * D * p) = Fp;
        if (Jp) Jp[p] = jp;
        if (viscous)
          MatMap(viscous + D * D * p) = viscous_kirchhoff(materials_[f.material(p)], L, Fp.determinant());
      }
    }
    check_finite(space, bad_id, bad_field);
  }

  // Which of a particle's new values is not finite (check_finite's codes); 1 (the position) for a
  // sum of finite values that overflowed.
  static int non_finite_field(const Vec& x, const Vec& v, const Mat& B, const Mat& F, Real jp) {
    return !x.allFinite()       ? 1
           : !v.allFinite()     ? 2
           : !B.allFinite()     ? 3
           : !F.allFinite()     ? 4
           : !std::isfinite(jp) ? 5
                                : 1;
  }

  // J η (L + Lᵀ), the Kirchhoff stress of a viscous fluid's rate term (Fluid.hpp); zero otherwise.
  static Mat viscous_kirchhoff(const MpmMaterial& material, const Mat& L, Real J) {
    if (const Fluid* fluid = std::get_if<Fluid>(&material)) return J * fluid->template viscous_stress<D>(L);
    return Mat::Zero();
  }

  // Collective: if any rank found a non-finite value, every rank throws the same error naming
  // the lowest such particle id and its field.
  void check_finite(const Space& space, ParticleId bad_id, int bad_field) const {
    ParticleId first = 0;
    MPI_Allreduce(&bad_id, &first, 1, MPI_UINT64_T, MPI_MIN, space.comm());
    if (first == std::numeric_limits<ParticleId>::max()) return;
    int field = bad_id == first ? bad_field : 99, lowest = 0;
    MPI_Allreduce(&field, &lowest, 1, MPI_INT, MPI_MIN, space.comm());
    static const char* what[] = {
        "",
        "non-finite position",
        "non-finite velocity",
        "non-finite B (APIC affine matrix)",
        "non-finite F (deformation gradient)",
        "non-finite Jp (plastic volume ratio)",
        "position outside the addressable domain (±2^20 blocks per axis)",
        ("speed that moves it more than a cell in one step (|v| dt > dx); the step is "
         "too large for that speed: lower time.dt or set time.cfl")};
    throw ParticleStateError(step_, first, what[lowest]);
  }

  Vec gravity_;
  Transfer transfer_;
  Real flip_ratio_;
  bool overlap_;  // grid.overlap
  Real cfl_;
  ColliderSet colliders_;
  std::vector<MpmMaterial> materials_;
  std::vector<Real> density_;
  bool plastic_ = false;  // a material projects F after the update (spec §3.2)
  long step_ = 0;
  bool implicit_;
  bool midpoint_;  // implicit.scheme: midpoint
  ImplicitSettings implicit_settings_;
  ColliderSet separate_;    // implicit: the colliders that also act after the solve
  StickyMirror<D> sticky_;  // the sticky colliders, held as odd reflections
  std::unique_ptr<NewtonSolver> newton_;
  std::unique_ptr<MpmImplicitSystem<D, Kernel>> system_;
  std::vector<Real> solution_;
  SolverStats stats_;
  enum Stage { kStress, kP2G, kScatter, kGrid, kGather, kG2P, kMigrate, kSolve };
  StageClock clock_{{"stress", "P2G", "scatter_add", "grid", "gather", "G2P", "migrate", "solve"}};
  std::vector<Real> ones_;          // J_P of particles that carry none
  std::vector<Real> block_stress_;  // τ V⁰ of one block's particles
  std::vector<Real> windows_, grid_, grid_velocity_;
};

}  // namespace nendo
