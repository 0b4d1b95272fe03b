#pragma once
// The implicit MPM step as a minimisation (spec 002 §10.5): over the velocities v of the owned
// active grid nodes,
//   E(v) = Σ_i ½ m_i ‖v_i − v*_i‖² + Σ_p V_p⁰ ψ_p(F̂_p(v)),   F̂_p(v) = (I + h Σ_i v_i ∇w_ipᵀ) F_pⁿ,
// with v* = vⁿ + h g (+ h f_ext/m) the predictor and h the step (spec §10.1, §10.2). Its gradient is
// m(v − v*) + h Σ_p V⁰ P(F̂_p) Fⁿᵀ ∇w_ip and its Hessian M + h² K with the product of spec §10.1
// eq. (196)–(197). Sticky and slip colliders are constraints (spec §10.6): per node an orthogonal
// projector P_i, 0 for sticky nodes (v_i = v_co) and I − n nᵀ for slip nodes (v_i·n = v_co·n).
//
// Every product runs on the spine: the unknowns go to the owned grid blocks, the ghost exchange
// gathers them into the particle blocks' windows, the particles contract them (GridKernels), and
// the windows are summed back into the owners' nodes. Ghost DOF numbers for the assembled matrix
// travel the same way. Nothing is gathered globally.
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <memory>
#include <variant>
#include <vector>

#include "colliders/Collider.hpp"
#include "decomposition/Space.hpp"
#include "materials/Materials.hpp"
#include "methods/mpm/GridKernels.hpp"
#include "methods/mpm/ImplicitCoarseGrid.hpp"
#include "methods/mpm/StencilPairs.hpp"
#include "methods/mpm/StickyMirror.hpp"
#include "solvers/NewtonProblem.hpp"
#include "solvers/NewtonSolver.hpp"
#include "solvers/PetscCall.hpp"

namespace nendo {

template <int D, class Kernel>
class MpmImplicitSystem final : public NewtonProblem {
  using Kernels = GridKernels<D, Kernel>;
  using Stencil = typename Kernels::Stencil;
  using Mat = Eigen::Matrix<Real, D, D>;
  using Vec = Eigen::Matrix<Real, D, 1>;
  using RowMat = Eigen::Matrix<Real, D, D, Eigen::RowMajor>;
  using MatMap = Eigen::Map<const RowMat>;
  using VecMap = Eigen::Map<Vec>;
  static constexpr int N = Kernel::kNodes;
  static constexpr int kStencilNodes = D == 3 ? N * N * N : N * N;

 public:
  MpmImplicitSystem(const std::vector<MpmMaterial>& materials, bool project_spd)
      : materials_(materials), project_spd_(project_spd) {}

  // The step's layout: the owned nodes of mass > 0 are the unknowns; grid holds c components per
  // owned node, mass first; target the predictor v* (D of ct components per owned node). Returns
  // in v0 the first iterate: v* with the colliders' constraints applied (spec §10.6). Collective.
  // For the midpoint rule the unknown is the midpoint velocity u and the constraints hold u: they
  // do no work and no node moves into a collider.
  // sticky: the step's reflecting sticky walls (StickyMirror), if any.
  void prepare(Space& space, const std::vector<Real>& grid, int c, const std::vector<Real>& target, int ct,
               const ColliderSet& colliders, Real time, Real h, std::vector<Real>& v0,
               const StickyMirror<D>* sticky = nullptr) {
    space_ = &space;
    ghost_ = &space.ghost();
    h_ = h;
    sticky_ = sticky;
    colliders_ = &colliders, time_ = time;
    coarse_ready_ = false;
    const std::size_t nodes = ghost_->grid_blocks() * ghost_->nodes_per_block();
    std::vector<char> active(nodes);
    for (std::size_t i = 0; i < nodes; ++i) active[i] = grid[c * i] > 0;
    dofs_ = DofMap(space.comm(), active, D);
    const std::size_t n = static_cast<std::size_t>(dofs_.owned_nodes());
    mass_.resize(n), target_.resize(n * D), position_.resize(n * D), v0.resize(n * D);
    constraints_.clear();
    for (std::size_t l = 0; l < n; ++l) {
      const std::size_t i = dofs_.node(static_cast<PetscInt>(l));
      mass_[l] = grid[c * i];
      node_position(i, position_.data() + D * l);
      VecMap(target_.data() + D * l) = Eigen::Map<const Vec>(target.data() + ct * i);
      Vec v = VecMap(target_.data() + D * l);
      Mat P;
      if (constrain(colliders, position_.data() + D * l, time, P, v))
        constraints_.push_back({static_cast<PetscInt>(l), P});
      VecMap(v0.data() + D * l) = v;
    }
    const std::size_t particles = space.particles().size();
    F_hat_.resize(particles * D * D), psi_.resize(particles), hessian_.resize(particles);
    node_info_ready_ = false;
  }

  // The solution into the first D of the ct components per owned node of grid (nodes without
  // mass keep theirs).
  void write_solution(const Real* v, std::vector<Real>& grid, int ct) const {
    for (PetscInt l = 0; l < dofs_.owned_nodes(); ++l)
      for (int a = 0; a < D; ++a) grid[ct * dofs_.node(l) + a] = v[D * l + a];
  }

  // The solution as a grid field: D components per owned node, 0 on nodes without mass.
  void to_grid(const Real* v, std::vector<Real>& grid) const {
    grid.assign(ghost_->grid_blocks() * ghost_->nodes_per_block() * D, 0.0);
    for (PetscInt l = 0; l < dofs_.owned_nodes(); ++l)
      for (int a = 0; a < D; ++a) grid[D * dofs_.node(l) + a] = v[D * l + a];
  }

  std::size_t constrained_nodes() const { return constraints_.size(); }

  // NewtonProblem
  const DofMap& dofs() const override { return dofs_; }

  void linearize(const Real* v, Real* gradient) override {
    const std::size_t n = static_cast<std::size_t>(dofs_.local_size());
    v_.assign(v, v + n);
    gather(v, true, true);
    const Particles f = particles();
    int bad = 0;
    Real elastic = 0;  // Σ |V ψ|, the scale of energy_change's elastic differences
    for_each_particle([&](std::size_t p, const Stencil& s, const Real* in, Real* out) {
      const Mat Fn = MatMap(f.F + D * D * p);
      const Mat F_hat = (Mat::Identity() + h_ * Kernels::gradient(in, D, ex_, ey_, s, 0)) * Fn;
      Eigen::Map<RowMat>(F_hat_.data() + D * D * p) = F_hat;
      const MpmMaterial& material = materials_[f.material(p)];
      const Real Jp = f.Jp(p);
      const Mat P = std::visit([&](const auto& m) { return Mat(m.template P<D>(F_hat, Jp)); }, material);
      psi_[p] = f.V0[p] * std::visit([&](const auto& m) { return m.template psi<D>(F_hat, Jp); }, material);
      hessian_[p] = std::visit([&](const auto& m) { return m.template hessian<D>(F_hat, Jp); }, material);
      if (project_spd_) hessian_[p].project_spd();
      if (!P.allFinite() || !std::isfinite(psi_[p])) bad = 1;
      elastic += std::abs(psi_[p]);
      Kernels::splat_gradient(out, D, ex_, ey_, s, (h_ * f.V0[p]) * P * Fn.transpose(), 0);
    });
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, dofs_.comm());
    if (bad) throw NewtonFailure("an iterate inverted or degenerated a particle (the energy is not finite)");
    scatter(gradient);
    // ‖h f‖², ‖M v‖², ‖M v*‖²: the terms that cancel in ∇E; then the energy's scale: Σ |V ψ| and
    // Σ m |v| (|v| + |v*|), what energy_change's terms are made of.
    Real norms[4] = {0, 0, 0, elastic};
    for (std::size_t l = 0; l < n / D; ++l)
      for (int a = 0; a < D; ++a) {
        const std::size_t i = D * l + a;
        norms[0] += gradient[i] * gradient[i];
        norms[1] += mass_[l] * mass_[l] * v[i] * v[i];
        norms[2] += mass_[l] * mass_[l] * target_[i] * target_[i];
        norms[3] += mass_[l] * std::abs(v[i]) * (std::abs(v[i]) + std::abs(target_[i]));
        gradient[i] += mass_[l] * (v[i] - target_[i]);
      }
    MPI_Allreduce(MPI_IN_PLACE, norms, 4, MPI_DOUBLE, MPI_SUM, dofs_.comm());
    floor_ = 1e-12 * (std::sqrt(norms[0]) + std::sqrt(norms[1]) + std::sqrt(norms[2]));
    energy_noise_ = 64 * std::numeric_limits<Real>::epsilon() * norms[3];
    project(gradient);
  }

  Real energy_change(const Real* d) override {
    const std::size_t n = static_cast<std::size_t>(dofs_.local_size());
    trial_.resize(n);
    Real kinetic = 0;
    for (std::size_t i = 0; i < n; ++i) {
      trial_[i] = v_[i] + d[i];
      kinetic += mass_[i / D] * d[i] * (v_[i] - target_[i] + 0.5 * d[i]);
    }
    gather(trial_.data(), false, true);
    const Particles f = particles();
    Real elastic = 0;
    for_each_particle(
        [&](std::size_t p, const Stencil& s, const Real* in, Real* /*out*/) {
          const Mat Fn = MatMap(f.F + D * D * p);
          const Mat F_hat = (Mat::Identity() + h_ * Kernels::gradient(in, D, ex_, ey_, s, 0)) * Fn;
          const Real Jp = f.Jp(p);
          const Real psi = f.V0[p] * std::visit([&](const auto& m) { return m.template psi<D>(F_hat, Jp); },
                                                materials_[f.material(p)]);
          elastic += psi - psi_[p];
        },
        false);
    Real change = std::isnan(elastic) ? std::numeric_limits<Real>::infinity() : kinetic + elastic, total = 0;
    MPI_Allreduce(&change, &total, 1, MPI_DOUBLE, MPI_SUM, dofs_.comm());
    return std::isnan(total) ? std::numeric_limits<Real>::infinity() : total;
  }

  void apply(const Real* x, Real* y) override {
    const std::size_t n = static_cast<std::size_t>(dofs_.local_size());
    projected_.assign(x, x + n);
    project(projected_.data());
    gather(projected_.data(), true, false);  // an increment: reflected without the wall's velocity
    const Particles f = particles();
    const Real h2 = h_ * h_;
    for_each_particle([&](std::size_t p, const Stencil& s, const Real* in, Real* out) {
      const Mat Fn = MatMap(f.F + D * D * p);
      const Mat dF = Kernels::gradient(in, D, ex_, ey_, s, 0) * Fn;  // spec §10.1: δF_p = Σ_j δu_j ∇w_jpᵀ Fⁿ
      Kernels::splat_gradient(out, D, ex_, ey_, s, (h2 * f.V0[p]) * hessian_[p].apply(dF) * Fn.transpose(),
                              0);
    });
    scatter(y);
    for (std::size_t i = 0; i < n; ++i) y[i] += mass_[i / D] * projected_[i];
    project(y);
    for (std::size_t i = 0; i < n; ++i) y[i] += x[i] - projected_[i];
  }

  void diagonal(Real* d) override {
    node_blocks();
    for (PetscInt l = 0; l < dofs_.owned_nodes(); ++l) {
      Mat block = Eigen::Map<const RowMat>(block_.data() + D * D * l) + mass_[l] * Mat::Identity();
      const Mat P = projector(l);
      block = P * block * P + (Mat::Identity() - P);
      for (int a = 0; a < D; ++a) d[D * l + a] = block(a, a);
    }
  }

  void assemble(::Mat A) override;

  void project(Real* x) override {
    for (const Constraint& c : constraints_) {
      VecMap xl(x + D * c.local);
      xl = c.P * Vec(xl);
    }
  }

  // max_i ‖g_i‖/m_i · h/dx: the velocity error of the worst node as a displacement in cells.
  Real scaled_residual(const Real* g) override {
    Real local = 0, global = 0;
    for (PetscInt l = 0; l < dofs_.owned_nodes(); ++l)
      local = std::max(local, VecMap(const_cast<Real*>(g) + D * l).norm() / mass_[l]);
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_MAX, dofs_.comm());
    return global * h_ / space_->geometry().dx;
  }

  Real residual_floor() const override { return floor_; }
  Real energy_noise() const override { return energy_noise_; }

  bool coordinates(Real* xyz) override {
    std::copy(position_.begin(), position_.end(), xyz);
    return true;
  }

  // The materials' densities, which the coarse level's mass needs (without them: no coarse level).
  void set_densities(const std::vector<Real>& density) { density_ = &density; }

  // The block grid coarsened by 2 (ImplicitCoarseGrid), for this step's layout; none for an odd
  // grid.block.
  CoarseSpace* coarse_space() override {
    if (!space_ || !density_ || !ImplicitCoarseGrid<D, Kernel>::supported(space_->geometry())) return nullptr;
    if (!coarse_) coarse_ = std::make_unique<ImplicitCoarseGrid<D, Kernel>>(dofs_.comm());
    if (!coarse_ready_) {
      auto constraint = [this](const Real* x) {
        Mat P;
        Vec v = Vec::Zero();
        constrain(*colliders_, x, time_, P, v);
        return P;
      };
      coarse_->setup(*space_, {&dofs_, [this](PetscInt l) { return projector(l); }, constraint, density_,
                               &hessian_, h_});
      coarse_ready_ = true;
    }
    return coarse_.get();
  }

  // F̂_p at the last linearisation point (row-major D×D per particle).
  const std::vector<Real>& deformation() const { return F_hat_; }

 private:
  struct Constraint {
    PetscInt local;
    Mat P;
  };
  // What the products read per particle: F (the step's Fⁿ), V⁰, the material index and J_P.
  struct Particles {
    const Real* F;
    const Real* V0;
    const std::int32_t* material_index;
    const Real* plastic_ratio;
    int material(std::size_t p) const { return material_index ? material_index[p] : 0; }
    Real Jp(std::size_t p) const { return plastic_ratio ? plastic_ratio[p] : 1.0; }
  };
  Particles particles() const {
    const ParticleSet& ps = space_->particles();
    return {ps.real("F"), ps.real("volume"), ps.has_field("material") ? ps.int32("material") : nullptr,
            ps.has_field("Jp") ? ps.real("Jp") : nullptr};
  }

  // Spec §10.6 on the node at x with predictor v: P projects onto its free directions and v's
  // constrained directions become the velocity they are held at. Sticky colliders fix every
  // component, slip ones the normal component (P = I − n nᵀ, several normals orthonormalised), and
  // a separate collider whose §11.1 response acts on v (contact, approaching) fixes every component
  // at that response, friction included. Returns whether any constraint applies.
  bool constrain(const ColliderSet& colliders, const Real* x, Real time, Mat& P, Vec& v) const {
    P.setIdentity();
    bool any = false;
    for (std::size_t k = 0; k < colliders.size(); ++k) {
      const Collider& collider = colliders[k];
      if (collider.boundary() == Boundary::Separate || collider.template phi<D>(x, time) > 0) continue;
      const Vec velocity =
          Eigen::Map<const Eigen::Matrix<Real, 3, 1>>(collider.velocity().data()).template head<D>();
      if (collider.boundary() == Boundary::Sticky) {
        P.setZero(), v = velocity;
        return true;
      }
      Vec n;
      collider.template normal<D>(x, time, n.data());
      n = P * n;  // the part not yet constrained
      if (n.norm() < 1e-6) continue;
      n.normalize();
      P -= n * n.transpose();
      v += n * n.dot(velocity - v);
      any = true;
    }
    for (std::size_t k = 0; k < colliders.size(); ++k)
      if (colliders[k].boundary() == Boundary::Separate &&
          colliders[k].template project<D>(x, v.data(), time)) {
        P.setZero();
        return true;
      }
    return any;
  }

  Mat projector(PetscInt l) const {
    // constraints_ is sorted by local index (built in node order): binary search.
    auto it = std::lower_bound(constraints_.begin(), constraints_.end(), l,
                               [](const Constraint& c, PetscInt value) { return c.local < value; });
    return it != constraints_.end() && it->local == l ? it->P : Mat::Identity();
  }

  void node_position(std::size_t i, Real* x) const {
    const BlockGeometry& g = space_->geometry();
    const int npb = ghost_->nodes_per_block(), B = g.block;
    const BlockCoord cb = decode_block_key(ghost_->grid_keys()[i / npb]);
    const int node = static_cast<int>(i % npb);
    const int local[3] = {node % B, (node / B) % B, node / (B * B)};
    for (int a = 0; a < D; ++a)
      x[a] = static_cast<Real>(std::int64_t(cb[a]) * B + local[a]) * g.dx + g.origin[a];
  }

  // Owned unknowns → owned grid nodes → the particle blocks' windows (in_), and zeroed output
  // windows (out_) when `output`. Window nodes behind a sticky wall read their mirrors, reflected:
  // 2 v_wall − v for velocities (`affine`), −δv for increments (StickyMirror).
  void gather(const Real* x, bool output, bool affine) {
    to_grid(x, grid_);
    ghost_->gather(grid_, D, in_);
    ex_ = ghost_->window_extent(0), ey_ = ghost_->window_extent(1);
    if (output) out_.assign(in_.size(), 0.0);
    for_each_mirror(D, in_, [&](Real* behind, Real* mirror, const Vec3& wall) {
      for (int a = 0; a < D; ++a) behind[a] = (affine ? 2 * wall[a] : 0.0) - mirror[a];
    });
  }
  // Output windows → owned nodes (summed in the spine's fixed order) → owned unknowns. What a
  // particle put on a node behind a sticky wall goes to its mirror, reflected (the transpose of
  // gather's reflection).
  void scatter(Real* y) {
    for_each_mirror(D, out_, [&](Real* behind, Real* mirror, const Vec3&) {
      for (int a = 0; a < D; ++a) mirror[a] -= behind[a], behind[a] = 0;
    });
    ghost_->scatter_add(out_, D, grid_);
    for (PetscInt l = 0; l < dofs_.owned_nodes(); ++l)
      for (int a = 0; a < D; ++a) y[D * l + a] = grid_[D * dofs_.node(l) + a];
  }

  // f(node, its mirror, wall velocity) on the c-component window nodes of `windows` behind sticky walls.
  template <class F>
  void for_each_mirror(int c, std::vector<Real>& windows, F&& f) {
    if (!sticky_ || sticky_->empty() || windows.empty()) return;
    const ParticleBlocks& blocks = space_->blocks();
    const std::size_t wn = static_cast<std::size_t>(ghost_->window_nodes()) * c;
    for (std::size_t b = 0; b < blocks.count(); ++b) {
      Real* window = windows.data() + b * wn;
      sticky_->for_each(b, [&](std::size_t node, std::size_t mirror, const Vec3& wall) {
        f(window + c * node, window + c * mirror, wall);
      });
    }
  }

  // f(p, stencil, its block's input window, output window) for every owned particle.
  template <class F>
  void for_each_particle(F&& f, bool output = true) {
    const ParticleSet& ps = space_->particles();
    const ParticleBlocks& blocks = space_->blocks();
    const BlockGeometry& g = space_->geometry();
    const Real* x = ps.positions();
    const std::size_t wn = static_cast<std::size_t>(ghost_->window_nodes()) * D;
    for (std::size_t b = 0; b < blocks.count(); ++b) {
      const BlockCoord cb = decode_block_key(blocks.keys[b]);
      const Real* in = in_.data() + b * wn;
      Real* out = output ? out_.data() + b * wn : nullptr;
      for (std::size_t p = blocks.begin(b); p < blocks.end(b); ++p)
        f(p, Kernels::stencil(g, cb, x + D * p), in, out);
    }
  }

  // ∇w_ip for the stencil node of weight indices (i, j, k).
  static Vec weight_gradient(const Stencil& s, int i, int j, int k) {
    Vec w;
    if constexpr (D == 3) {
      w << s.dw[0][i] * s.w[1][j] * s.w[2][k], s.w[0][i] * s.dw[1][j] * s.w[2][k],
          s.w[0][i] * s.w[1][j] * s.dw[2][k];
    } else {
      w << s.dw[0][i] * s.w[1][j], s.w[0][i] * s.dw[1][j];
    }
    return w;
  }

  // The node blocks h² Σ_p V⁰ g_ipᵀ C g_ip (D×D per owned node, without the mass), for the
  // diagonal: spec §10.7 "DiagA" with the whole block so that slip projections are exact.
  void node_blocks() {
    const Particles f = particles();
    const std::size_t wn = static_cast<std::size_t>(ghost_->window_nodes()) * D * D;
    block_windows_.assign(space_->blocks().count() * wn, 0.0);
    ex_ = ghost_->window_extent(0), ey_ = ghost_->window_extent(1);
    const Real h2 = h_ * h_;
    const ParticleSet& ps = space_->particles();
    const ParticleBlocks& blocks = space_->blocks();
    for (std::size_t b = 0; b < blocks.count(); ++b) {
      const BlockCoord cb = decode_block_key(blocks.keys[b]);
      Real* window = block_windows_.data() + b * wn;
      for (std::size_t p = blocks.begin(b); p < blocks.end(b); ++p) {
        const Stencil s = Kernels::stencil(space_->geometry(), cb, ps.positions() + D * p);
        const Mat Fn = MatMap(f.F + D * D * p);
        const Eigen::Matrix<Real, D * D, D* D> C = (h2 * f.V0[p]) * hessian_[p].matrix();
        Kernels::for_each_node(ex_, ey_, s, [&](std::size_t node, int i, int j, int k) {
          const Vec g = Fn.transpose() * weight_gradient(s, i, j, k);
          Real* target = window + D * D * node;
          for (int a = 0; a < D; ++a)
            for (int t = 0; t < D; ++t) {
              Real sum = 0;
              for (int be = 0; be < D; ++be)
                for (int si = 0; si < D; ++si) sum += C(a * D + be, t * D + si) * g[be] * g[si];
              target[a * D + t] += sum;
            }
        });
      }
    }
    for_each_mirror(D * D, block_windows_, [&](Real* behind, Real* mirror, const Vec3&) {
      for (int q = 0; q < D * D; ++q) mirror[q] += behind[q], behind[q] = 0;  // R block R, R = −I
    });
    ghost_->scatter_add(block_windows_, D * D, block_grid_);
    block_.resize(static_cast<std::size_t>(dofs_.owned_nodes()) * D * D);
    for (PetscInt l = 0; l < dofs_.owned_nodes(); ++l)
      std::copy_n(block_grid_.data() + D * D * dofs_.node(l), D * D, block_.data() + D * D * l);
  }

  // Per window node: its global number (−1: no unknown in the matrix, i.e. inactive or sticky)
  // and its projector; gathered once per layout through the ghost exchange.
  void node_info() {
    if (node_info_ready_) return;
    const int c = 1 + D * D;
    std::vector<Real> grid(ghost_->grid_blocks() * ghost_->nodes_per_block() * c, 0.0);
    for (std::size_t i = 0; i < grid.size() / c; ++i) grid[c * i] = -1;
    for (PetscInt l = 0; l < dofs_.owned_nodes(); ++l) {
      Real* info = grid.data() + c * dofs_.node(l);
      const Mat P = projector(l);
      info[0] = P.isZero(0) ? -1 : static_cast<Real>(dofs_.first_node() + l);
      Eigen::Map<RowMat>(info + 1) = P;
    }
    ghost_->gather(grid, c, info_windows_);
    // A node behind a sticky wall stands for its mirror with the sign flipped: its rows and columns
    // of the stiffness are the mirror's, times −P of the mirror (Rᵀ K R).
    for_each_mirror(c, info_windows_, [&](Real* behind, Real* mirror, const Vec3&) {
      behind[0] = mirror[0];
      for (int q = 1; q < c; ++q) behind[q] = -mirror[q];
    });
    node_info_ready_ = true;
  }

  const std::vector<MpmMaterial>& materials_;
  bool project_spd_;
  Space* space_ = nullptr;
  GhostExchange* ghost_ = nullptr;
  Real h_ = 0;
  Real floor_ = 0;         // residual_floor() at the linearisation point
  Real energy_noise_ = 0;  // energy_noise() at the linearisation point
  int ex_ = 1, ey_ = 1;
  DofMap dofs_;
  std::vector<Real> mass_, target_, position_;  // per owned unknown node
  std::vector<Constraint> constraints_;         // sorted by local index
  std::vector<Real> v_, trial_, projected_;     // owned unknowns
  std::vector<Real> grid_, in_, out_;           // D per owned node / window node
  std::vector<Real> F_hat_, psi_;               // per particle
  std::vector<ElasticHessian<D>> hessian_;      // per particle, at the linearisation point
  std::vector<Real> block_windows_, block_grid_, block_;
  StencilPairs<D, Kernel::kNodes> pairs_;  // assemble(): a particle block's stiffness per node pair
  std::vector<Real> info_windows_;
  bool node_info_ready_ = false;
  const StickyMirror<D>* sticky_ = nullptr;  // the step's reflections (StickyMirror::update)
  const ColliderSet* colliders_ = nullptr;
  const std::vector<Real>* density_ = nullptr;
  Real time_ = 0;
  std::unique_ptr<ImplicitCoarseGrid<D, Kernel>> coarse_;
  bool coarse_ready_ = false;
};

// Stiffness blocks are summed per particle block into a window-local table of node pairs
// (StencilPairs), then handed to PETSc one block row per window node.
template <int D, class Kernel>
void MpmImplicitSystem<D, Kernel>::assemble(::Mat A) {
  node_info();
  const Particles f = particles();
  const Real h2 = h_ * h_;
  const int c = 1 + D * D;
  const std::size_t wn = static_cast<std::size_t>(ghost_->window_nodes()) * c;
  const ParticleSet& ps = space_->particles();
  const ParticleBlocks& blocks = space_->blocks();
  ex_ = ghost_->window_extent(0), ey_ = ghost_->window_extent(1);
  using Pairs = StencilPairs<D, N>;
  constexpr int S = Pairs::S, O = Pairs::O;
  const std::size_t W = static_cast<std::size_t>(ghost_->window_nodes());
  pairs_.reset(W);
  PetscInt cols[O];
  int used[O];
  Real row_values[D * O * D];
  std::size_t node[S];
  int offset[S];
  Vec g[S];
  for (std::size_t b = 0; b < blocks.count(); ++b) {
    if (blocks.begin(b) == blocks.end(b)) continue;
    const BlockCoord cb = decode_block_key(blocks.keys[b]);
    const Real* info = info_windows_.data() + b * wn;
    for (std::size_t p = blocks.begin(b); p < blocks.end(b); ++p) {
      const Stencil s = Kernels::stencil(space_->geometry(), cb, ps.positions() + D * p);
      const Mat Fn = MatMap(f.F + D * D * p);
      const Eigen::Matrix<Real, D * D, D* D> C = (h2 * f.V0[p]) * hessian_[p].matrix();
      int k = 0;
      Kernels::for_each_node(ex_, ey_, s, [&](std::size_t w, int i, int j, int kk) {
        node[k] = w, offset[k] = Pairs::offset(i, j, kk);
        g[k] = Fn.transpose() * weight_gradient(s, i, j, kk);
        ++k;
      });
      pairs_.add(node, offset, g, C);
    }
    // One block row per window node: P_w K_wq P_q (spec §10.6), columns by global index. The
    // table entries read are zeroed for the next block.
    for (std::size_t w = 0; w < W; ++w) {
      int count = 0;
      for (int o = 0; o < O; ++o)
        if (pairs_.take(w, o)) used[count++] = o;
      const PetscInt row = static_cast<PetscInt>(info[c * w]);
      const Mat Pw = Eigen::Map<const RowMat>(info + c * w + 1);
      for (int n = 0; n < count; ++n) {
        Real* pair = pairs_.block(w, used[n]);
        const std::size_t q = Pairs::neighbour(w, used[n], std::ptrdiff_t(ex_), std::ptrdiff_t(ey_));
        cols[n] = static_cast<PetscInt>(info[c * q]);
        const Mat block =
            Pw * Mat(Eigen::Map<const RowMat>(pair)) * Mat(Eigen::Map<const RowMat>(info + c * q + 1));
        std::fill(pair, pair + D * D, 0.0);
        for (int a = 0; a < D; ++a)
          for (int t = 0; t < D; ++t) row_values[(a * count + n) * D + t] = block(a, t);
      }
      // An inactive or fully constrained node (row −1) gets only its diagonal, below.
      if (count > 0 && row >= 0)
        petsc_call(MatSetValuesBlocked(A, 1, &row, count, cols, row_values, ADD_VALUES),
                   "MatSetValuesBlocked");
    }
  }
  // The mass and the constrained part: m P + (I − P) on each owned node's diagonal block.
  for (PetscInt l = 0; l < dofs_.owned_nodes(); ++l) {
    const Mat Pl = projector(l);
    const RowMat block = mass_[l] * Pl + (Mat::Identity() - Pl);
    const PetscInt row = dofs_.first_node() + l;
    petsc_call(MatSetValuesBlocked(A, 1, &row, 1, &row, block.data(), ADD_VALUES), "MatSetValuesBlocked");
  }
}

// Instantiated once, in ImplicitSystem.cpp, for the dimensions and kernels of the MPM step: the
// step and the tests link it rather than compiling it again.
extern template class MpmImplicitSystem<2, QuadraticSpline>;
extern template class MpmImplicitSystem<3, QuadraticSpline>;
extern template class MpmImplicitSystem<2, CubicSpline>;
extern template class MpmImplicitSystem<3, CubicSpline>;

}  // namespace nendo
