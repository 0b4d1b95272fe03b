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
#include <cstring>
#include <limits>
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

  // P2G into the windows of the source blocks ghost.source_order()[first, last).
  void particles_to_grid(const Space& space, const GhostExchange& ghost, Real dt, std::size_t first,
                         std::size_t last) {
    const ParticleSet& ps = space.particles();
    const ParticleBlocks& blocks = space.blocks();
    const BlockGeometry& g = space.geometry();
    const Real* x = ps.positions();
    const Real* v = ps.real("velocity");
    const Real* B = ps.real("B");
    const typename Model::Fields f = model_.fields(ps);
    // Optional external acceleration per particle (manufactured solutions, tests): b_p adds
    // m_p b_p w_ip to f_i (spec §8 eq. (189) with a body force).
    const Real* body = ps.has_field("body_force") ? ps.real("body_force") : nullptr;
    const Real* F = model_.implicit ? nullptr : ps.real("F");  // implicit: the rate term's stress only
    const Real* rate_tau = ps.has_field("tau_viscous") ? ps.real("tau_viscous") : nullptr;
    const Real* hencky = ps.has_field("hencky_strain") ? ps.real("hencky_strain") : nullptr;
    const int c = model_.grid_components();
    const int ex = ghost.window_extent(0), ey = ghost.window_extent(1);
    const std::size_t wn = static_cast<std::size_t>(ghost.window_nodes()) * c;
    const Real d_inverse = model_.transfer == Transfer::Apic ? Kernel::kInverseD / (g.dx * g.dx) : 0.0;
    const bool flip = model_.split_grid();
    const Vec zero = Vec::Zero();
    for (std::size_t i = first; i < last; ++i) {
      const std::size_t b = ghost.source_order()[i];
      const BlockCoord cb = decode_block_key(blocks.keys[b]);
      Real* window = windows_.data() + b * wn;
      const std::size_t begin = blocks.begin(b);
      const Real* stress = block_stress(f, F, hencky, rate_tau, begin, blocks.end(b));
      for (std::size_t p = begin; p < blocks.end(b); ++p) {
        const Stencil s = K::stencil(g, cb, x + D * p);
        const Real mp = f.mass(p);
        const Vec mv = mp * VecMap(const_cast<Real*>(v) + D * p);
        const Vec fb = body ? Vec(mp * VecMap(const_cast<Real*>(body) + D * p)) : zero;
        const Real* tau_p = stress + D * D * (p - begin);
        if constexpr (D == 3) {
          if (!flip) {  // momentum + Δt force in one set of components, 4 lanes per node
            K::splat_mass_momentum(window, ex, ey, s, mp, mv + dt * fb, B + D * D * p, mp * d_inverse, tau_p,
                                   dt);
            continue;
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
      if (!sticky_.empty()) fold_behind_sticky_walls(b, window);
    }
  }

  void grid_to_particles(Space& space, Real dt, long step) {
    ParticleSet& ps = space.particles();
    const ParticleBlocks& blocks = space.blocks();
    const BlockGeometry& g = space.geometry();
    const GhostExchange& ghost = space.ghost();
    Real* x = ps.positions();
    Real* v = ps.real("velocity");
    Real* B = ps.real("B");
    Real* F = ps.real("F");
    Real* Jp = ps.has_field("Jp") ? ps.real("Jp") : nullptr;
    const typename Model::Fields f = model_.fields(ps);
    const ParticleId* id = ps.ids();
    const int cv = model_.velocity_components();
    const int ex = ghost.window_extent(0), ey = ghost.window_extent(1);
    const std::size_t wn = static_cast<std::size_t>(ghost.window_nodes()) * cv;
    // The scheme, read once: per particle the compiler would reload it after every store.
    const bool flip = model_.transfer == Transfer::Flip, apic = model_.transfer == Transfer::Apic;
    const bool midpoint = model_.midpoint, plastic = model_.plastic;
    const Real flip_ratio = model_.flip_ratio;
    ParticleId bad_id = std::numeric_limits<ParticleId>::max();
    int bad_field = 0;
    Real* rate_tau = ps.has_field("tau_viscous") ? ps.real("tau_viscous") : nullptr;
    Real* hencky = ps.has_field("hencky_strain") ? ps.real("hencky_strain") : nullptr;
    const Vec origin = Eigen::Map<const Eigen::Matrix<Real, 3, 1>>(g.origin.data()).template head<D>();
    const Real reach = Real(kBlockCoordMax) * g.block * g.dx;  // of the block keys, either way
    // An explicit step that moves a particle more than a cell broke the CFL condition (§9.3).
    const Real max_move2 = model_.implicit ? std::numeric_limits<Real>::infinity() : g.dx * g.dx;
    // A particle's new state, written if every value is finite and the move is within the CFL bound
    // (with the Hencky strain its return mapping left, when it carries one).
    // (Inlined: called out of line, G2P took 7 % longer for elastic materials.)
    const auto finish = [&](std::size_t p, const Vec& x_new, const Vec& v_new, const Mat& B_new,
                            const Mat& Fp, Real jp, const Mat& L, Real move2,
                            const Real* hencky_new = nullptr) __attribute__((always_inline)) {
      // A sum is finite only if every term is (one test per particle; which one failed is
      // looked up only for a particle that fails).
      const Real probe = (x_new.sum() + v_new.sum()) + (B_new.sum() + Fp.sum()) + jp;
      const int field = !std::isfinite(probe) ? non_finite_field(x_new, v_new, B_new, Fp, jp)
                        : ((x_new - origin).cwiseAbs().array() > reach).any() ? 6
                        : move2 > max_move2                                   ? 7
                                                                              : 0;
      if (field != 0) {  // keep this particle's last good state; the step fails below
        if (id[p] < bad_id) bad_id = id[p], bad_field = field;
        return;
      }
      VecMap(x + D * p) = x_new;
      VecMap(v + D * p) = v_new;
      MatMap(B + D * D * p) = B_new;
      MatMap(F + D * D * p) = Fp;
      if (Jp) Jp[p] = jp;
      if (rate_tau)
        MatMap(rate_tau + D * D * p) =
            rate_kirchhoff<D>(model_.materials[f.material(p)], L, Fp.determinant());
      if (hencky_new) std::memcpy(hencky + D * D * p, hencky_new, sizeof(Real) * D * D);
    };
    windows_.push_back(0.0);  // the 3D gather reads a node's 3 components 4 at a time
    for (std::size_t b = 0; b < blocks.count(); ++b) {
      const BlockCoord cb = decode_block_key(blocks.keys[b]);
      const Real* window = windows_.data() + b * wn;
      const std::size_t begin = blocks.begin(b), n = blocks.end(b) - begin;
      if (plastic) trial_F_.resize(n * D * D), trial_Jp_.resize(n), trials_.resize(n);
      if (hencky) trial_hencky_.resize(n * D * D);
      for (std::size_t p = begin; p < blocks.end(b); ++p) {
        const Stencil s = K::stencil(g, cb, x + D * p);
        // v_p = Σ w v_i, B_p = Σ w v_i (x_i − x_p)ᵀ, L = ∇v = Σ v_i ∇wᵀ (spec §6.1, §7.2)
        Vec v_pic, v_old = Vec::Zero();
        Mat B_new, L;
        bool gathered = false;
        if constexpr (D == 3)
          if (cv == 3) K::gather_velocity(window, ex, ey, s, v_pic, B_new, L), gathered = true;
        if (!gathered) gather_velocity(window, cv, ex, ey, s, flip, v_pic, v_old, B_new, L);
        Vec v_move = v_pic;
        if (midpoint) {  // the midpoint velocity moves the particles and updates F
          L = K::gradient(window, cv, ex, ey, s, 2 * D);
          v_move = K::interpolate(window, cv, ex, ey, s, 2 * D);
        }
        const Vec v_change = v_pic - v_old;
        const Mat Fp = (Mat::Identity() + dt * L) * Mat(MatMap(F + D * D * p));  // spec §7.2
        Vec v_new = v_pic;
        if (flip)
          v_new = (1 - flip_ratio) * v_pic + flip_ratio * (VecMap(v + D * p) + v_change);  // spec §6.4
        if (!apic) B_new.setZero();
        const Vec x_new = VecMap(x + D * p) + dt * v_move;  // spec §9.2 step 13
        const Real move2 = (dt * v_move).squaredNorm();
        if (!plastic) {
          finish(p, x_new, v_new, B_new, Fp, f.Jp(p), L, move2);
          continue;
        }
        // Plastic: the trial state waits for the block's return mapping, run by material.
        const std::size_t q = p - begin;
        MatMap(trial_F_.data() + D * D * q) = Fp;
        trial_Jp_[q] = f.Jp(p);
        trials_[q] = {x_new, v_new, B_new, L, move2};
      }
      if (!plastic) continue;
      for_each_material_run(f, begin, n, [&](const auto& material, std::size_t run, std::size_t next) {
        project_run<D>(material, trial_F_.data(), trial_Jp_.data(), run, next,
                       hencky ? trial_hencky_.data() : nullptr);  // §3.2
      });
      for (std::size_t q = 0; q < n; ++q) {
        const Trial& t = trials_[q];
        finish(begin + q, t.x, t.v, t.B, Mat(MatMap(trial_F_.data() + D * D * q)), trial_Jp_[q], t.L, t.move2,
               hencky ? trial_hencky_.data() + D * D * q : nullptr);
      }
    }
    check_finite(space, bad_id, bad_field, step);
  }

 private:
  // G2P's new values of a plastic particle but F and J_P, until its block's return mapping has run.
  struct Trial {
    Vec x, v;
    Mat B, L;
    Real move2;
  };

  // fn(material, run, next) for each run [run, next) of the particles begin + [0, n) that share a
  // material, so that a material is chosen once per run and may work on a batch. (Inlined: out of
  // line, as GCC chose once block_stress took the Hencky strain, 2D P2G took 65 ns, not 45.)
  template <class Fn>
  __attribute__((always_inline)) void for_each_material_run(const typename Model::Fields& f,
                                                            std::size_t begin, std::size_t n, Fn&& fn) const {
    for (std::size_t run = 0, next = 0; run < n; run = next) {
      next = f.material_index ? run + 1 : n;
      while (next < n && f.material(begin + next) == f.material(begin + run)) ++next;
      std::visit([&](const auto& material) { fn(material, run, next); },
                 model_.materials[f.material(begin + run)]);
    }
  }

  // τ_p V_p⁰ of particles [begin, end) (one block) into block_stress_, in registers' reach: by
  // runs of consecutive particles of one material, so that the material is chosen once per run
  // and may work on a batch (kirchhoff_batch, Materials.hpp) or on the Hencky strain its return
  // mapping left (hencky). Plus the rate term from the last step (rate_tau, Materials.hpp
  // HasRateTerm); without F, only that (the implicit step's one explicit stress, spec §10.10).
  const Real* block_stress(const typename Model::Fields& f, const Real* F, const Real* hencky,
                           const Real* rate_tau, std::size_t begin, std::size_t end) {
    const std::size_t n = end - begin;
    block_stress_.resize(n * D * D);
    Real* tau = block_stress_.data();
    if (F) {
      if (!f.plastic_ratio && ones_.size() < n) ones_.resize(n, 1.0);
      const Real* Jp = f.plastic_ratio ? f.plastic_ratio + begin : ones_.data();
      for_each_material_run(f, begin, n, [&](const auto& material, std::size_t run, std::size_t next) {
        kirchhoff_run<D>(material, F + D * D * begin, Jp, run, next, tau,
                         hencky ? hencky + D * D * begin : nullptr);
      });
    } else {
      std::fill(block_stress_.begin(), block_stress_.end(), 0.0);
    }
    if (rate_tau)  // from the last step's L
      for (std::size_t q = 0; q < n * D * D; ++q) tau[q] += rate_tau[D * D * begin + q];
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
  // G2P of a plastic scene: one block's trial F and J_P (the return mapping's input), the Hencky
  // strains it leaves (hencky_strain), and the other new values.
  std::vector<Real> trial_F_, trial_Jp_, trial_hencky_;
  std::vector<Trial> trials_;
  std::vector<Real> windows_, grid_, grid_velocity_;
};

}  // namespace nendo
