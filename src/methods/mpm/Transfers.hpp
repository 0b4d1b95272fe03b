#pragma once
// The particle–grid transfers of MPM (spec 002 §6-§9) for dimension D and kernel Kernel, on the
// spine's blocks, windows and ghost exchange: P2G with each block's stress computed in reach of
// the registers, the grid update with the colliders, G2P with the deformation update and the
// finite-state check, and the sticky walls' reflection. The explicit step (ExplicitStep.hpp) and
// the implicit step (ImplicitStep.hpp) are made of these; each loops over the particle blocks
// (P2G, G2P: the block's window) or grid blocks (grid update), in structure-of-arrays data.
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <variant>
#include <vector>

#include "core/Error.hpp"
#include "decomposition/Space.hpp"
#include "methods/Method.hpp"
#include "methods/mpm/GridKernels.hpp"
#include "methods/mpm/MpmModel.hpp"
#include "methods/mpm/StickyMirror.hpp"

namespace nendo {

template <int D, class Kernel>
class Transfers {
  using K = GridKernels<D, Kernel>;  // the stencil, scatter and gather pieces, and their types
  static constexpr int N = K::N;
  using Mat = typename K::Mat;
  using Vec = typename K::Vec;
  using MatMap = typename K::MatMap;
  using VecMap = typename K::VecMap;
  using Stencil = typename K::Stencil;
  using Model = MpmModel<D>;

 public:
  explicit Transfers(const Model& model) : model_(model), sticky_(model.colliders) {}

  // The windows (P2G: grid components per node; after the gather, velocity components), the
  // owned grid blocks' mass and momentum, and their velocities.
  std::vector<Real>& windows() { return windows_; }
  std::vector<Real>& grid() { return grid_; }
  std::vector<Real>& grid_velocity() { return grid_velocity_; }
  StickyMirror<D>& sticky() { return sticky_; }

  void clear_windows(const GhostExchange& ghost) {
    windows_.assign(ghost.source_keys().size() * ghost.window_nodes() * model_.grid_components(), 0.0);
  }
  void clear_grid_velocity(const GhostExchange& ghost) {
    grid_velocity_.assign(ghost.grid_blocks() * ghost.nodes_per_block() * model_.velocity_components(), 0.0);
  }

  // The grid velocities of the grid blocks ghost.grid_order()[first, last).
  void update_grid(const GhostExchange& ghost, Real t, Real dt, bool collide, std::size_t first,
                   std::size_t last) {
    const int c = model_.grid_components(), cv = model_.velocity_components();
    const int npb = ghost.nodes_per_block();
    const bool flip = model_.split_grid();
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
          out[a] = momentum / m + dt * model_.gravity[a];
          if (flip) out[D + a] = mv[a] / m;  // v^n for the FLIP increment and the midpoint rule
        }
      }
      if (collide)
        model_.colliders.template project_block<D>(node_block(ghost, b), mass, c, velocity, cv,
                                                   t);  // §9.2 step 8
    }
  }

  // G2P's half: the window's nodes behind sticky walls read 2 v_wall − v of their mirrors.
  void reflect_behind_sticky_walls(Space& space) {
    if (sticky_.empty()) return;
    const int cv = model_.velocity_components();
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

  // P2G into the windows of the source blocks ghost.source_order()[first, last). Each block sums
  // the particles that stayed in it at the last migration, then those that arrived there
  // (changed_block): the order of the fused sweep, which scatters the stayers before the migration
  // and the arrivals after it (so a restart, or a step that cannot use the sweep's P2G, gives the
  // same bits).
  void particles_to_grid(const Space& space, const GhostExchange& ghost, Real dt, std::size_t first,
                         std::size_t last) {
    const ParticleBlocks& blocks = space.blocks();
    const ParticleScatter scatter(model_, space.particles(), space.geometry(), ghost, dt);
    for (std::size_t i = first; i < last; ++i) {
      const std::size_t b = ghost.source_order()[i];
      const std::size_t begin = blocks.begin(b), end = blocks.end(b);
      Real* window = windows_.data() + b * scatter.window_reals;
      const Real* stress = block_stress(scatter.f, scatter.F, scatter.viscous, begin, end);
      scatter.block(window, blocks.keys[b], begin, end, stress, 0);
      if (scatter.changed_block) scatter.block(window, blocks.keys[b], begin, end, stress, 1);
      if (!sticky_.empty()) fold_behind_sticky_walls(b, window);
    }
  }

  // Whether this step's G2P can prepare the next step's P2G (MpmModel::fused_sweep; not while a
  // body force per particle is set, which may change between steps).
  bool can_fuse(const Space& space) const {
    return model_.fused_sweep() && space.particles().has_field(kChangedBlock) &&
           !space.particles().has_field("body_force");
  }

  // The fused sweep's P2G for the next step (explicit_step): whether the windows prepared by the
  // last grid_to_particles(..., prepare = true) and scatter_arrivals() hold what
  // particles_to_grid(..., dt) would give now, with nothing changed since (same particles in the
  // same order, same step).
  bool prepared_for(Space& space, Real dt) const {
    return prepared_layout_ && *prepared_layout_ == space.particles().layout() && prepared_dt_ == dt &&
           prepared_windows_.size() == windows_size(space.ghost());
  }
  // Takes the prepared windows as this step's P2G (and folds them behind the sticky walls of this
  // step, which the sweep could not know yet).
  void use_prepared(const GhostExchange& ghost) {
    windows_.swap(prepared_windows_);
    prepared_layout_.reset();
    if (sticky_.empty()) return;
    const std::size_t wn = static_cast<std::size_t>(ghost.window_nodes()) * model_.grid_components();
    for (std::size_t b = 0; b < ghost.source_keys().size(); ++b)
      fold_behind_sticky_walls(b, windows_.data() + b * wn);
  }

  // After the migration that follows a preparing sweep: moves the prepared windows to the new
  // block slots and adds the particles that arrived in each block (their P2G could not run in the
  // sweep: they left the window it was filling).
  void scatter_arrivals(Space& space, Real dt) {
    const GhostExchange& ghost = space.ghost();
    const ParticleBlocks& blocks = space.blocks();
    move_prepared_windows(ghost);
    const ParticleScatter scatter(model_, space.particles(), space.geometry(), ghost, dt);
    for (std::size_t b = 0; b < blocks.count(); ++b) {
      arrivals_.clear();
      for (std::size_t p = blocks.begin(b); p < blocks.end(b); ++p)
        if (scatter.changed_block[p]) arrivals_.push_back(p);
      if (arrivals_.empty()) continue;
      const Real* stress = listed_stress(scatter, arrivals_);
      Real* window = prepared_windows_.data() + b * scatter.window_reals;
      for (std::size_t q = 0; q < arrivals_.size(); ++q)
        scatter.particle(window, decode_block_key(blocks.keys[b]), arrivals_[q], stress + D * D * q);
    }
    prepared_layout_ = space.particles().layout();
    prepared_dt_ = dt;
  }

  // G2P (spec §9.2 steps 9-11, 13) for every particle, block by block; each particle's
  // changed_block says whether it left its block. With `prepare` the sweep is fused (issue 29):
  // right after a block's G2P, its particles' stress and the P2G of the next step (at the same
  // dt) of those that stayed in the block go into the prepared windows, while the block's data is
  // in cache; scatter_arrivals() adds the others after the migration.
  void grid_to_particles(Space& space, Real dt, long step, bool prepare = false) {
    ParticleSet& ps = space.particles();
    const ParticleBlocks& blocks = space.blocks();
    const GhostExchange& ghost = space.ghost();
    const ParticleUpdate update(model_, ps, space.geometry(), ghost, dt);
    const ParticleScatter scatter(model_, ps, space.geometry(), ghost, dt);
    if (prepare) {
      prepared_windows_.assign(windows_size(ghost), 0.0);
      prepared_keys_ = blocks.keys;
    }
    prepared_layout_.reset();
    windows_.push_back(0.0);  // the 3D gather reads a node's 3 components 4 at a time
    ParticleId bad_id = std::numeric_limits<ParticleId>::max();
    int bad_field = 0;
    for (std::size_t b = 0; b < blocks.count(); ++b) {
      const BlockCoord cb = decode_block_key(blocks.keys[b]);
      const std::size_t begin = blocks.begin(b), end = blocks.end(b);
      const Real* window = windows_.data() + b * update.window_reals;
      const auto report = [&](std::size_t p, int field) {
        if (field != 0 && update.id[p] < bad_id) bad_id = update.id[p], bad_field = field;
      };
      if (model_.plastic) {
        plastic_block(update, window, cb, begin, end, report);
      } else {
        for (std::size_t p = begin; p < end; ++p) report(p, update.particle(window, cb, p));
      }
      if (!prepare) continue;
      const Real* stress = block_stress(scatter.f, scatter.F, scatter.viscous, begin, end);
      scatter.block(prepared_windows_.data() + b * scatter.window_reals, blocks.keys[b], begin, end, stress,
                    0);
    }
    check_finite(space, bad_id, bad_field, step);
  }

 private:
  // P2G of one particle (spec §6.1, §8 eq. (189)), with the fields and settings it reads resolved
  // once per sweep.
  struct ParticleScatter {
    ParticleScatter(const Model& model, const ParticleSet& ps, const BlockGeometry& geometry,
                    const GhostExchange& ghost, Real step)
        : g(geometry),
          x(ps.positions()),
          v(ps.real("velocity")),
          B(ps.real("B")),
          f(model.fields(ps)),
          // Optional external acceleration per particle (manufactured solutions, tests): b_p adds
          // m_p b_p w_ip to f_i (spec §8 eq. (189) with a body force).
          body(ps.has_field("body_force") ? ps.real("body_force") : nullptr),
          F(model.implicit ? nullptr : ps.real("F")),  // the implicit step's stress is viscous only
          viscous(ps.has_field("tau_viscous") ? ps.real("tau_viscous") : nullptr),
          changed_block(ps.has_field(kChangedBlock) ? ps.int32(kChangedBlock) : nullptr),
          c(model.grid_components()),
          ex(ghost.window_extent(0)),
          ey(ghost.window_extent(1)),
          window_reals(static_cast<std::size_t>(ghost.window_nodes()) * c),
          d_inverse(model.transfer == Transfer::Apic ? Kernel::kInverseD / (g.dx * g.dx) : 0.0),
          flip(model.split_grid()),
          dt(step) {}

    // The particles of [begin, end) (block `key`, stress: theirs from begin) whose changed_block is
    // `arrived` (all of them for particles that carry none).
    void block(Real* window, BlockKey key, std::size_t begin, std::size_t end, const Real* stress,
               int arrived) const {
      const BlockCoord cb = decode_block_key(key);
      for (std::size_t p = begin; p < end; ++p)
        if (!changed_block || changed_block[p] == arrived)
          particle(window, cb, p, stress + D * D * (p - begin));
    }

    void particle(Real* window, const BlockCoord& cb, std::size_t p, const Real* tau_p) const {
      const Stencil s = K::stencil(g, cb, x + D * p);
      const Real mp = f.mass(p);
      const Vec mv = mp * VecMap(const_cast<Real*>(v) + D * p);
      const Vec fb = body ? Vec(mp * VecMap(const_cast<Real*>(body) + D * p)) : Vec::Zero();
      if constexpr (D == 3) {
        if (!flip) {  // momentum + Δt force in one set of components, 4 lanes per node
          K::splat_mass_momentum(window, ex, ey, s, mp, mv + dt * fb, B + D * D * p, mp * d_inverse, tau_p,
                                 dt);
          return;
        }
      }
      const Mat affine = (mp * d_inverse) * Mat(MatMap(const_cast<Real*>(B) + D * D * p));
      const Mat tau = MatMap(const_cast<Real*>(tau_p));
      Vec e[D][N];
      if (!flip) {  // momentum + Δt force in one set of components
        for (int a = 0; a < D; ++a)
          for (int i = 0; i < N; ++i) e[a][i] = s.wo[a][i] * affine.col(a) - (dt * s.dw[a][i]) * tau.col(a);
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

    const BlockGeometry& g;
    const Real *x, *v, *B;
    typename Model::Fields f;
    const Real *body, *F, *viscous;
    const std::int32_t* changed_block;
    int c, ex, ey;
    std::size_t window_reals;
    Real d_inverse;
    bool flip;
    Real dt;
  };

  // G2P of one particle (spec §6.1, §7.2, §9.2 steps 9-11, 13): its new x, v, B, F (and J_P, the
  // viscous stress, whether it left its block), or, for a value that is not finite or a move
  // the step cannot take, the code check_finite reports, with the particle left as it was.
  struct ParticleUpdate {
    ParticleUpdate(const Model& model, ParticleSet& ps, const BlockGeometry& geometry,
                   const GhostExchange& ghost, Real step)
        : model(model),
          g(geometry),
          x(ps.positions()),
          v(ps.real("velocity")),
          B(ps.real("B")),
          F(ps.real("F")),
          Jp(ps.has_field("Jp") ? ps.real("Jp") : nullptr),
          viscous(ps.has_field("tau_viscous") ? ps.real("tau_viscous") : nullptr),
          changed_block(ps.has_field(kChangedBlock) ? ps.int32(kChangedBlock) : nullptr),
          id(ps.ids()),
          f(model.fields(ps)),
          cv(model.velocity_components()),
          ex(ghost.window_extent(0)),
          ey(ghost.window_extent(1)),
          window_reals(static_cast<std::size_t>(ghost.window_nodes()) * cv),
          // The scheme, read once: per particle the compiler would reload it after every store.
          flip(model.transfer == Transfer::Flip),
          apic(model.transfer == Transfer::Apic),
          midpoint(model.midpoint),
          plastic(model.plastic),
          flip_ratio(model.flip_ratio),
          origin(Eigen::Map<const Eigen::Matrix<Real, 3, 1>>(g.origin.data()).template head<D>()),
          reach(Real(kBlockCoordMax) * g.block * g.dx),  // of the block keys, either way
          // An explicit step that moves a particle more than a cell broke the CFL condition (§9.3).
          max_move2(model.implicit ? std::numeric_limits<Real>::infinity() : g.dx * g.dx),
          inv_dx(1 / g.dx),
          dt(step) {}

    // G2P's new values of a particle, F and J_P before the return mapping.
    struct Trial {
      Vec x, v;
      Mat B, L, F;
      Real Jp, move2;
    };

    // An elastic material's particle (no return mapping).
    // (Flattened: with the contractions, the stores and the block test out of line, G2P took 20 %
    // longer.)
    [[gnu::flatten]] int particle(const Real* window, const BlockCoord& cb, std::size_t p) const {
      return finish(cb, p, trial(window, cb, p));
    }

    // The sums of spec §6.1, §7.2, the new x, v, B and the trial F̂ = (I + Δt L) F.
    [[gnu::always_inline]] Trial trial(const Real* window, const BlockCoord& cb, std::size_t p) const {
      const Stencil s = K::stencil(g, cb, x + D * p);
      // v_p = Σ w v_i, B_p = Σ w v_i (x_i − x_p)ᵀ, L = ∇v = Σ v_i ∇wᵀ (spec §6.1, §7.2)
      Vec v_pic, v_old = Vec::Zero();
      Trial t;
      bool gathered = false;
      if constexpr (D == 3)
        if (cv == 3) K::gather_velocity(window, ex, ey, s, v_pic, t.B, t.L), gathered = true;
      if (!gathered) gather_velocity(window, cv, ex, ey, s, flip, v_pic, v_old, t.B, t.L);
      Vec v_move = v_pic;
      if (midpoint) {  // the midpoint velocity moves the particles and updates F
        t.L = K::gradient(window, cv, ex, ey, s, 2 * D);
        v_move = K::interpolate(window, cv, ex, ey, s, 2 * D);
      }
      t.F = (Mat::Identity() + dt * t.L) * Mat(MatMap(F + D * D * p));  // spec §7.2
      t.Jp = f.Jp(p);
      t.v = v_pic;
      if (flip)
        t.v = (1 - flip_ratio) * v_pic + flip_ratio * (VecMap(v + D * p) + v_pic - v_old);  // spec §6.4
      if (!apic) t.B.setZero();
      t.x = VecMap(x + D * p) + dt * v_move;  // spec §9.2 step 13
      t.move2 = (dt * v_move).squaredNorm();
      return t;
    }

    // Writes the particle's new state (F and J_P after the return mapping), or returns the code
    // check_finite reports and leaves the particle as it was.
    [[gnu::always_inline]] int finish(const BlockCoord& cb, std::size_t p, const Trial& t) const {
      const Mat& Fp = t.F;
      const Real jp = t.Jp;
      // A sum is finite only if every term is (one test per particle; which one failed is
      // looked up only for a particle that fails).
      const Real probe = (t.x.sum() + t.v.sum()) + (t.B.sum() + Fp.sum()) + jp;
      const int field = !std::isfinite(probe) ? non_finite_field(t.x, t.v, t.B, Fp, jp)
                        : ((t.x - origin).cwiseAbs().array() > reach).any() ? 6
                        : t.move2 > max_move2                               ? 7
                                                                            : 0;
      if (field != 0) return field;  // keep this particle's last good state; the step fails
      VecMap(x + D * p) = t.x;
      VecMap(v + D * p) = t.v;
      MatMap(B + D * D * p) = t.B;
      MatMap(F + D * D * p) = Fp;
      if (Jp) Jp[p] = jp;
      if (viscous)
        MatMap(viscous + D * D * p) =
            viscous_kirchhoff(model.materials[f.material(p)], t.L, Fp.determinant());
      if (changed_block) changed_block[p] = left_block(cb, x + D * p);
      return 0;
    }

    // Whether a new position left block cb, as the migration decides it (BlockGeometry::holds: a
    // division per axis), which only a position within round-off of a face can need: elsewhere a
    // multiplication by 1/Δx cannot round across a cell boundary (a margin of 1e-6 cells).
    [[gnu::always_inline]] bool left_block(const BlockCoord& cb, const Real* xp) const {
      constexpr Real kMargin = 1e-6;
      for (int a = 0; a < D; ++a) {
        const Real u = (xp[a] - g.origin[a]) * inv_dx, first = Real(cb[a]) * g.block;
        if (!(u > first + kMargin && u < first + g.block - kMargin)) return !g.holds(cb, xp);
      }
      return false;
    }

    const Model& model;
    const BlockGeometry& g;
    Real *x, *v, *B, *F, *Jp, *viscous;
    std::int32_t* changed_block;
    const ParticleId* id;
    typename Model::Fields f;
    int cv, ex, ey;
    std::size_t window_reals;
    bool flip, apic, midpoint, plastic;
    Real flip_ratio;
    Vec origin;
    Real reach, max_move2, inv_dx, dt;
  };

  // G2P of the particles [begin, end) of block cb with a plastic material: the trial states first,
  // then the return mapping (§3.2) by runs of one material (project_run: snow's and
  // Drucker–Prager's batched SVD), then the checks and writes; report(p, code) per particle.
  template <class Report>
  void plastic_block(const ParticleUpdate& update, const Real* window, const BlockCoord& cb,
                     std::size_t begin, std::size_t end, Report&& report) {
    const std::size_t n = end - begin;
    const typename Model::Fields& f = update.f;
    trials_.resize(n), trial_F_.resize(n * D * D), trial_Jp_.resize(n);
    for (std::size_t q = 0; q < n; ++q) {
      trials_[q] = update.trial(window, cb, begin + q);
      MatMap{trial_F_.data() + D* D* q} = trials_[q].F;
      trial_Jp_[q] = trials_[q].Jp;
    }
    for (std::size_t run = 0, next = 0; run < n; run = next) {
      next = f.material_index ? run + 1 : n;
      while (next < n && f.material(begin + next) == f.material(begin + run)) ++next;
      std::visit([&](const auto& m) { project_run<D>(m, trial_F_.data(), trial_Jp_.data(), run, next); },
                 model_.materials[f.material(begin + run)]);
    }
    for (std::size_t q = 0; q < n; ++q) {
      trials_[q].F = MatMap(trial_F_.data() + D * D * q), trials_[q].Jp = trial_Jp_[q];
      report(begin + q, update.finish(cb, begin + q, trials_[q]));
    }
  }

  std::size_t windows_size(const GhostExchange& ghost) const {
    return ghost.source_keys().size() * ghost.window_nodes() * model_.grid_components();
  }

  // The prepared windows, from the block slots of the sweep (prepared_keys_) to those of the
  // migrated blocks (both sorted, so a slot's window moves down or up in one monotone pass each);
  // a block that appeared starts empty. (A block that vanished had no stayers: its window is 0.)
  void move_prepared_windows(const GhostExchange& ghost) {
    const std::vector<BlockKey>& keys = ghost.source_keys();
    if (keys == prepared_keys_) return;
    const std::size_t wn = static_cast<std::size_t>(ghost.window_nodes()) * model_.grid_components();
    std::vector<long> from(keys.size(), -1);
    for (std::size_t s = 0; s < keys.size(); ++s) {
      const auto it = std::lower_bound(prepared_keys_.begin(), prepared_keys_.end(), keys[s]);
      if (it != prepared_keys_.end() && *it == keys[s]) from[s] = it - prepared_keys_.begin();
    }
    prepared_windows_.resize(std::max(keys.size(), prepared_keys_.size()) * wn);
    Real* w = prepared_windows_.data();
    const auto move = [&](std::size_t s) { std::copy_n(w + from[s] * wn, wn, w + s * wn); };
    for (std::size_t s = 0; s < keys.size(); ++s)
      if (from[s] > long(s)) move(s);
    for (std::size_t s = keys.size(); s-- > 0;)
      if (from[s] >= 0 && from[s] < long(s)) move(s);
    for (std::size_t s = 0; s < keys.size(); ++s)
      if (from[s] < 0) std::fill_n(w + s * wn, wn, 0.0);
    prepared_windows_.resize(keys.size() * wn);
    prepared_keys_ = keys;
  }

  // block_stress of the listed particles (not one range: the arrivals of a block).
  const Real* listed_stress(const ParticleScatter& s, const std::vector<std::size_t>& list) {
    const std::size_t n = list.size(), dd = D * D;
    listed_F_.resize(n * dd), listed_V0_.resize(n);
    listed_Jp_.resize(s.f.plastic_ratio ? n : 0), listed_material_.resize(s.f.material_index ? n : 0);
    listed_viscous_.resize(s.viscous ? n * dd : 0);
    for (std::size_t q = 0; q < n; ++q) {
      const std::size_t p = list[q];
      std::copy_n(s.F + dd * p, dd, listed_F_.data() + dd * q);
      listed_V0_[q] = s.f.V0[p];
      if (s.f.plastic_ratio) listed_Jp_[q] = s.f.plastic_ratio[p];
      if (s.f.material_index) listed_material_[q] = s.f.material_index[p];
      if (s.viscous) std::copy_n(s.viscous + dd * p, dd, listed_viscous_.data() + dd * q);
    }
    const typename Model::Fields f{s.f.material_index ? listed_material_.data() : nullptr,
                                   s.f.plastic_ratio ? listed_Jp_.data() : nullptr, listed_V0_.data(),
                                   s.f.density};
    return block_stress(f, listed_F_.data(), s.viscous ? listed_viscous_.data() : nullptr, 0, n);
  }

  // τ_p V_p⁰ of particles [begin, end) (one block) into block_stress_, in registers' reach: by
  // runs of consecutive particles of one material, so that the material is chosen once per run
  // and may work on a batch (kirchhoff_batch, Materials.hpp). Without F, only a viscous fluid's
  // rate term from the last step (the implicit step's one explicit stress, spec §10.10).
  const Real* block_stress(const typename Model::Fields& f, const Real* F, const Real* viscous,
                           std::size_t begin, std::size_t end) {
    const std::size_t n = end - begin;
    block_stress_.resize(n * D * D);
    Real* tau = block_stress_.data();
    if (F) {
      if (!f.plastic_ratio && ones_.size() < n) ones_.resize(n, 1.0);
      const Real* Jp = f.plastic_ratio ? f.plastic_ratio + begin : ones_.data();
      for (std::size_t run = 0, next = 0; run < n; run = next) {
        next = f.material_index ? run + 1 : n;
        while (next < n && f.material(begin + next) == f.material(begin + run)) ++next;
        std::visit([&](const auto& m) { kirchhoff_run<D>(m, F + D * D * begin, Jp, run, next, tau); },
                   model_.materials[f.material(begin + run)]);
      }
    } else {
      std::fill(block_stress_.begin(), block_stress_.end(), 0.0);
    }
    if (viscous)  // rate term of viscous fluids, from the last step's L
      for (std::size_t q = 0; q < n * D * D; ++q) tau[q] += viscous[D * D * begin + q];
    for (std::size_t q = 0; q < n; ++q) MatMap(tau + D * D * q) *= f.V0[begin + q];
    return tau;
  }

  // P2G's half of the reflection, on one window of c components (mass, momentum + Δt force, or
  // mass, momentum, force).
  void fold_behind_sticky_walls(std::size_t b, Real* window) const {
    const int c = model_.grid_components();
    const bool split = model_.split_grid();
    sticky_.for_each(b, [&](std::size_t node, std::size_t mirror, const Vec3& wall) {
      const Real* behind = window + c * node;
      Real* front = window + c * mirror;
      front[0] += behind[0];
      for (int a = 0; a < D; ++a) front[1 + a] += 2 * wall[a] * behind[0] - behind[1 + a];
      if (split)
        for (int a = 0; a < D; ++a) front[1 + D + a] -= behind[1 + D + a];
    });
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
  static void check_finite(const Space& space, ParticleId bad_id, int bad_field, long step) {
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
    throw ParticleStateError(step, first, what[lowest]);
  }

  const Model& model_;
  StickyMirror<D> sticky_;          // the sticky colliders, held as odd reflections
  std::vector<Real> ones_;          // J_P of particles that carry none
  std::vector<Real> block_stress_;  // τ V⁰ of one block's particles
  std::vector<Real> windows_, grid_, grid_velocity_;
  // The fused sweep's P2G of the next step: its windows, the block keys of their slots, the
  // particle layout (after the migration) and the step they were made for (prepared_for).
  std::vector<Real> prepared_windows_;
  std::vector<BlockKey> prepared_keys_;
  std::optional<std::uint64_t> prepared_layout_;
  Real prepared_dt_ = 0;
  std::vector<std::size_t> arrivals_;  // of one block
  // G2P of a plastic material: one block's trial states until its return mapping has run.
  std::vector<typename ParticleUpdate::Trial> trials_;
  std::vector<Real> trial_F_, trial_Jp_;
  std::vector<Real> listed_F_, listed_V0_, listed_Jp_, listed_viscous_;
  std::vector<std::int32_t> listed_material_;
};

}  // namespace nendo
