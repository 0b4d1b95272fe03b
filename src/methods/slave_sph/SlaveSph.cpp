#include "methods/slave_sph/SlaveSph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/Mpi.hpp"
#include "core/ReproducibleSum.hpp"
#include "solvers/ShellKsp.hpp"

namespace nendo {
namespace {

using RowMat3 = Eigen::Matrix<Real, 3, 3, Eigen::RowMajor>;

Real distance2(const Real* a, const Real* b) {
  const Real dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
  return dx * dx + dy * dy + dz * dz;
}

enum Stage { kNeighbours, kTransfer, kStress, kSolve, kMasters, kSlaves, kTopology };

}  // namespace

SlaveSph::SlaveSph(const Scene& scene)
    : settings_(scene.sections.get<SlaveSphSettings>()),
      gravity_(scene.gravity),
      d_(scene.grid.dx / scene.bodies.front().particles_per_cell),
      kernel_(d_),  // h = d (spec §3.14)
      skin_(0.3 * kernel_.h()),
      max_move_(0.5 * (scene.grid.block * scene.grid.dx - kernel_.support() - skin_)),
      colliders_(scene.colliders, 3),
      clock_({"neighbours", "transfer", "stress", "solve", "masters", "slaves", "topology"}) {
  Real lightest = std::numeric_limits<Real>::infinity();
  plastic_ = false;
  for (const auto& [name, settings] : scene.materials) {
    materials_.push_back(make_mpm_material(settings));
    densities_.push_back(settings.params.at("density"));
    plastic_ = plastic_ || std::visit([](const auto& m) { return m.kPlastic; }, materials_.back());
    lightest = std::min(lightest, settings.params.at("density") * d_ * d_ * d_);
  }
  orphan_mass_ = 1e-12 * lightest;
}

SlaveSph::~SlaveSph() = default;

void SlaveSph::register_fields(ParticleSet& particles) const {
  particles.add_field("mass", FieldType::Real, 1);
  particles.add_field("material", FieldType::Int32, 1);
  particles.add_field("body", FieldType::Int32, 1);
  particles.add_field("kind", FieldType::Int32, 1);  // 0 master, 1 slave
  particles.add_field("F", FieldType::Real, 9);      // F_E, row-major
  if (plastic_) {
    particles.add_field("Fp", FieldType::Real, 9);  // F_P
    particles.add_field("Jp", FieldType::Real, 1);  // det F_P (hardening, spec S3)
  }
  // Ids of the masters adjacent at the start (§3.11), kNone in free slots.
  particles.add_field("adjacent", FieldType::UInt64, kMaxAdjacent);
  // Per slave: u − v* of its last solve (15R), the next solve's initial guess less v*.
  particles.add_field("solve_correction", FieldType::Real, 3);
}

StateRecord SlaveSph::save_state() const {
  StateRecord state;
  state.reals["slave_density_max"] = {n_max_};
  return state;
}

void SlaveSph::restore(Space& /*space*/, const StateRecord& state) {
  const auto it = state.reals.find("slave_density_max");
  if (it == state.reals.end() || it->second.size() != 1)
    throw Error("slave_sph: the checkpoint has no slave_density_max (written by another method?)");
  n_max_ = it->second[0];
}

int SlaveSph::material_of(std::size_t c) const { return material_[c]; }
Real SlaveSph::slave_volume(std::size_t c) const { return volume_[c]; }

// ---------------------------------------------------------------------------------------------
// The combined view: owned particles, then the halo copies.

void SlaveSph::gather_local(Space& space) {
  view_.assign(space.particles(), space.halo().particles());
  gather_moving_fields();
  view_.gather("mass", mass_);
  view_.gather("volume", volume_);
  view_.gather("kind", kind_);
  view_.gather("material", material_);
  view_.gather("body", body_);
  if (!plastic_) Jp_.assign(view_.size(), 1.0);
  alive_.assign(view_.size(), 1);
}

// The fields a step changes, those a kept layout sends to the halo copies.
std::vector<std::string> SlaveSph::moving_fields() const {
  std::vector<std::string> fields = {"position", "velocity", "F"};
  if (plastic_) fields.push_back("Jp");
  return fields;
}

void SlaveSph::gather_moving_fields() {
  view_.gather("position", x_);
  view_.gather("velocity", v_);
  view_.gather("F", F_);
  if (plastic_) view_.gather("Jp", Jp_);
}

// The start of a step: a new layout (migration, restart, load balance) gathers everything; a kept
// one refreshes the halo copies' fields that change in a step and gathers those.
void SlaveSph::refresh_local(Space& space) {
  if (space.layout_version() != layout_) {
    gather_local(space);
    layout_ = space.layout_version();
    return;
  }
  space.halo().update(space.particles(), moving_fields());
  alive_.assign(view_.size(), 1);
  gather_moving_fields();
}

// ---------------------------------------------------------------------------------------------
// §3.12: of two slaves closer than delete_distance·h the younger (higher id) goes, greedily in id
// order. Decided for owned slaves from the owned and halo slaves, then sent to the halo copies.

void SlaveSph::delete_crowded_slaves(Space& space) {
  const Real reach = settings_.delete_distance * kernel_.h();
  if (reach <= 0) return;
  std::vector<std::uint32_t> slaves;
  for (std::uint32_t c = 0; c < view_.size(); ++c)
    if (kind_[c] == kSlave) slaves.push_back(c);
  CellList fine;
  fine.build(x_.data(), view_.ids().data(), slaves, reach);
  // Pairs closer than reach, each as (older, younger).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> close;
  CellList::Range around[9];
  for (std::size_t cell = 0; cell < fine.cells(); ++cell) {
    fine.around_cell(cell, around);
    for (const std::uint32_t* s = fine.begin(cell); s != fine.end(cell); ++s)
      for (const CellList::Range& r : around)
        for (std::uint32_t k = r.begin; k < r.end; ++k) {
          const std::uint32_t t = *fine.item(k);
          if (view_.id(t) > view_.id(*s) && distance2(&x_[3 * *s], &x_[3 * t]) < reach * reach)
            close.push_back({*s, t});
        }
  }
  std::vector<Real> dead(view_.size(), 0.0);
  if (!close.empty()) {
    std::sort(close.begin(), close.end(), [&](const auto& a, const auto& b) {
      return view_.id(a.first) != view_.id(b.first) ? view_.id(a.first) < view_.id(b.first)
                                                    : view_.id(a.second) < view_.id(b.second);
    });
    for (const auto& [older, younger] : close)
      if (dead[older] == 0) dead[younger] = 1;  // an older slave that is itself deleted deletes nothing
  }
  space.halo().update_values(dead.data(), 1, dead.data() + view_.owned());
  std::uint64_t count = 0;
  for (std::size_t c = 0; c < view_.size(); ++c)
    if (dead[c] != 0) {
      alive_[c] = 0;
      if (c < view_.owned()) dead_owned_[c] = 1, ++count;
    }
  events_.deleted += count;
}

// ---------------------------------------------------------------------------------------------
// S0: the masters' candidate slaves within 2h + skin, at a new layout only. With `slaves: false`
// the masters are their own slaves (spec §4.4).

void SlaveSph::build_candidates() {
  const bool own_slaves = settings_.slaves;
  std::vector<std::uint32_t> masters, slaves;
  for (std::uint32_t c = 0; c < view_.size(); ++c) {
    if (kind_[c] == kMaster) masters.push_back(c);
    if (own_slaves ? kind_[c] == kSlave : kind_[c] == kMaster) slaves.push_back(c);
  }
  candidates_.build(x_.data(), view_.ids().data(), masters, slaves, kernel_.support() + skin_);
  candidate_rows_.resize(candidates_.rows());
  for (std::uint32_t r = 0; r < candidate_rows_.size(); ++r) candidate_rows_[r] = r;
  std::sort(candidate_rows_.begin(), candidate_rows_.end(), [&](std::uint32_t a, std::uint32_t b) {
    return view_.id(candidates_.row(a)) < view_.id(candidates_.row(b));
  });
  ++rebuilds_;
}

// S0: the step's pairs within 2h from the candidates, with W and g = V_s ∇W_sm (Eq. 3''). A halo
// master keeps its owned slaves only (the sums of its own are its owner's).
void SlaveSph::find_neighbours() {
  const bool own_slaves = settings_.slaves;
  slaves_.clear();
  for (std::uint32_t c = 0; c < view_.owned(); ++c)
    if (alive_[c] && (own_slaves ? kind_[c] == kSlave : kind_[c] == kMaster)) slaves_.push_back(c);
  row_master_.clear(), row_offset_.assign(1, 0), pair_slave_.clear(), pair_w_.clear(), pair_g_.clear();
  const Real r2max = kernel_.support_squared();
  auto add = [&](std::uint32_t s, Real r2, Real dx, Real dy, Real dz) {
    const Real g = slave_volume(s) * kernel_.gradient_factor(r2);
    pair_slave_.push_back(s), pair_w_.push_back(static_cast<float>(kernel_.w(r2)));
    pair_g_.insert(pair_g_.end(), {g * dx, g * dy, g * dz});
  };
  for (const std::uint32_t r : candidate_rows_) {
    const std::uint32_t m = candidates_.row(r);
    const bool owned = m < view_.owned();
    const Real* xm = &x_[3 * m];
    bool self = own_slaves || !owned;  // without slaves an owned master is also its own slave
    for (const std::uint32_t* p = candidates_.begin(r); p != candidates_.end(r); ++p) {
      const std::uint32_t s = *p;
      if ((!owned && s >= view_.owned()) || !alive_[s]) continue;
      if (!self && view_.id(s) > view_.id(m)) add(m, 0, 0, 0, 0), self = true;
      const Real* xs = &x_[3 * s];
      const Real dx = xs[0] - xm[0], dy = xs[1] - xm[1], dz = xs[2] - xm[2];
      const Real r2 = dx * dx + dy * dy + dz * dz;
      if (r2 < r2max) add(s, r2, dx, dy, dz);
    }
    if (!self) add(m, 0, 0, 0, 0);
    if (owned || pair_slave_.size() > row_offset_.back()) {
      row_master_.push_back(m);
      row_offset_.push_back(static_cast<std::uint32_t>(pair_slave_.size()));
    }
  }
}

// S0: each owned master's Σ_s W_sm and G_m = Σ_s g_sm, sent to its halo copies; then the zero-sum
// weights g̃_sm = g_sm − W_sm G_m / Σ_s W_sm (Eq. 11R) in place, in every row.
void SlaveSph::exchange_master_sums(Space& space) {
  sums_.assign(4 * view_.size(), 0.0);
  for (std::size_t r = 0; r < row_master_.size(); ++r) {
    if (!owned_row(r)) continue;
    Real* s = &sums_[4 * row_master_[r]];
    for (std::size_t k = row_offset_[r]; k < row_offset_[r + 1]; ++k) {
      s[0] += pair_w_[k];
      for (int a = 0; a < 3; ++a) s[1 + a] += pair_g_[3 * k + a];
    }
  }
  if (settings_.gradient != "zero_sum") return;
  space.halo().update_values(sums_.data(), 4, sums_.data() + 4 * view_.owned());
  for (std::size_t r = 0; r < row_master_.size(); ++r) {
    const Real* s = &sums_[4 * row_master_[r]];
    if (s[0] <= 0) continue;
    const Real shift[3] = {s[1] / s[0], s[2] / s[0], s[3] / s[0]};
    for (std::size_t k = row_offset_[r]; k < row_offset_[r + 1]; ++k)
      for (int a = 0; a < 3; ++a) pair_g_[3 * k + a] -= pair_w_[k] * shift[a];
  }
}

// ---------------------------------------------------------------------------------------------
// S0b: gravity on every master (owned and halo copies alike, the same bits), v^n_m. S1: slave mass
// m_s = V_s Σ m_m W_sm (1R) and velocity v_s = V_s Σ m_m v_m W_sm / m_s (2R).

// Σ_m m_m W_sm into slave_mass_ and Σ_m m_m W_sm v_m into hs_ for every owned slave (combined
// indices), v per combined master; summed over the rows, so in master id order.
void SlaveSph::splat_masses(const std::vector<Real>& v) {
  slave_mass_.assign(view_.size(), 0.0), hs_.assign(3 * view_.size(), 0.0);
  for (std::size_t r = 0; r < row_master_.size(); ++r) {
    const std::uint32_t m = row_master_[r];
    const Real mass = mass_[m];
    const Real* vm = &v[3 * m];
    for (std::size_t k = row_offset_[r]; k < row_offset_[r + 1]; ++k) {
      const std::uint32_t s = pair_slave_[k];
      if (s >= view_.owned()) continue;
      const Real mw = mass * pair_w_[k];
      slave_mass_[s] += mw;
      for (int a = 0; a < 3; ++a) hs_[3 * s + a] += mw * vm[a];
    }
  }
}

// The mass-weighted mean of the splatted velocities at owned slave c, Σ m_m v_m W / Σ m_m W.
void SlaveSph::interpolated(std::size_t c, Real* v) const {
  const Real m = slave_mass_[c];
  for (int a = 0; a < 3; ++a) v[a] = m > 0 ? hs_[3 * c + a] / m : 0.0;
}

void SlaveSph::splat_to_slaves(const Vec3& gravity_dv) {
  vm_.resize(3 * view_.size());
  for (std::size_t c = 0; c < view_.size(); ++c)
    for (int a = 0; a < 3; ++a) vm_[3 * c + a] = kind_[c] == kMaster ? v_[3 * c + a] + gravity_dv[a] : 0.0;
  const std::size_t ns = slaves_.size();
  ms_.assign(ns, 0.0), vn_.assign(3 * ns, 0.0);
  splat_masses(vm_);
  for (std::size_t i = 0; i < ns; ++i) {
    interpolated(slaves_[i], &vn_[3 * i]);
    ms_[i] = slave_volume(slaves_[i]) * slave_mass_[slaves_[i]];
  }
}

// ---------------------------------------------------------------------------------------------
// S3: τ_m = V⁰_m P(F_E) F_Eᵀ (S5) for every master, owned or halo (no exchange needed), and the
// energy Hessian of each row's master for the solve (S8), μ and λ frozen at F_P^n (the halo rows'
// for the preconditioner only).

void SlaveSph::master_stresses() {
  tau_.assign(9 * view_.size(), 0.0);
  for (std::size_t c = 0; c < view_.size(); ++c) {
    if (kind_[c] != kMaster) continue;
    const Mat<3> F = Eigen::Map<const RowMat3>(&F_[9 * c]);
    const Real jp = Jp_[c];
    const Mat<3> tau =
        std::visit([&](const auto& m) { return m.template kirchhoff<3>(F, jp); }, materials_[material_of(c)]);
    Eigen::Map<RowMat3>(tau_.data() + 9 * c) = volume_[c] * tau;
  }
  if (settings_.beta == 0) return;
  hessian_.resize(row_master_.size());
  for (std::size_t r = 0; r < row_master_.size(); ++r) {
    const std::size_t c = row_master_[r];
    const Mat<3> F = Eigen::Map<const RowMat3>(&F_[9 * c]);
    const Real jp = Jp_[c];
    hessian_[r] =
        std::visit([&](const auto& m) { return m.template hessian<3>(F, jp); }, materials_[material_of(c)]);
    if (settings_.project_spd) hessian_[r].project_spd();
  }
}

// (15R): y = m_s u + β Δt² H u, H u by (S7): per owned master Q_m = V⁰ δP(δF_m) F_Eᵀ with
// δF_m = (Σ_s u_s ĝ_smᵀ) F_E, sent to the halo copies, then (H u)_s = Σ_m Q_m ĝ_sm.
// With contacts the operator is P A P + (I − P), P per slave the projection onto its free
// directions (project_free).
void SlaveSph::hessian_product(Space& space, Real beta_dt2, const Real* u, Real* y) {
  const std::size_t ns = slaves_.size();
  for (std::size_t i = 0; i < ns; ++i) {
    Real* to = &vs_[3 * slaves_[i]];
    for (int a = 0; a < 3; ++a) to[a] = u[3 * i + a];
    if (constrained_[i]) project_free(i, to);
  }
  space.halo().update_values(vs_.data(), 3, vs_.data() + 3 * view_.owned());
  // Raw pointers: the compiler cannot tell the scatter's stores from the members' data pointers.
  const std::uint32_t* __restrict slave = pair_slave_.data();
  const Real* __restrict gradient = pair_g_.data();
  const Real* __restrict vs = vs_.data();
  const std::uint32_t own = static_cast<std::uint32_t>(view_.owned());
  for (std::size_t r = 0; r < row_master_.size(); ++r) {
    const std::uint32_t c = row_master_[r];
    if (c >= own) continue;
    Real G[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (std::uint32_t k = row_offset_[r], end = row_offset_[r + 1]; k < end; ++k) {
      const Real* us = vs + 3 * slave[k];
      const Real* g = gradient + 3 * k;
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) G[3 * a + b] += us[a] * g[b];
    }
    const Mat<3> F = Eigen::Map<const RowMat3>(&F_[9 * c]);
    const Mat<3> dP = hessian_[r].apply(Eigen::Map<const RowMat3>(G) * F);
    Eigen::Map<RowMat3>(q_.data() + 9 * c) = volume_[c] * dP * F.transpose();
  }
  space.halo().update_values(q_.data(), 9, q_.data() + 9 * view_.owned());
  if (hs_.size() < 3 * view_.size()) hs_.resize(3 * view_.size());
  std::fill(hs_.begin(), hs_.begin() + 3 * view_.owned(), 0.0);
  Real* __restrict hs = hs_.data();
  const Real* __restrict q = q_.data();
  for (std::size_t r = 0; r < row_master_.size(); ++r) {
    const Real* Q = q + 9 * row_master_[r];
    const Real Q0 = Q[0], Q1 = Q[1], Q2 = Q[2], Q3 = Q[3], Q4 = Q[4], Q5 = Q[5], Q6 = Q[6], Q7 = Q[7],
               Q8 = Q[8];
    for (std::uint32_t k = row_offset_[r], end = row_offset_[r + 1]; k < end; ++k) {
      const std::uint32_t s = slave[k];
      if (s >= own) continue;
      const Real g0 = gradient[3 * k], g1 = gradient[3 * k + 1], g2 = gradient[3 * k + 2];
      Real* h = hs + 3 * s;
      h[0] += Q0 * g0 + Q1 * g1 + Q2 * g2;
      h[1] += Q3 * g0 + Q4 * g1 + Q5 * g2;
      h[2] += Q6 * g0 + Q7 * g1 + Q8 * g2;
    }
  }
  for (std::size_t i = 0; i < ns; ++i) {
    const Real* h = &hs_[3 * slaves_[i]];
    Real* out = &y[3 * i];
    for (int a = 0; a < 3; ++a) out[a] = ms_[i] * u[3 * i + a] + beta_dt2 * h[a];
    if (constrained_[i]) {  // P y + (I − P) u
      Real fixed[3] = {u[3 * i], u[3 * i + 1], u[3 * i + 2]},
           free[3] = {u[3 * i], u[3 * i + 1], u[3 * i + 2]};
      project_free(i, out), project_free(i, free);
      for (int a = 0; a < 3; ++a) out[a] += fixed[a] - free[a];
    }
  }
}

// The preconditioner: the exact 3×3 diagonal blocks of the operator, inverted. A master's part of
// slave s's block is β Δt² V⁰ Σ_bd C_ab,cd g'_b g'_d with C = ∂P/∂F and g' = F_Eᵀ ĝ_sm (the
// product above with u at s alone), i.e. the quadratic form ĝᵀ K^ac ĝ with K^ac = F_E C^ac F_Eᵀ,
// C^ac_bd = C_ab,cd: per row, the 6 blocks a ≤ c of 6 coefficients each; per pair 36 products.
// K^ac of block_preconditioner from the Hessian's structure (ElasticHessian.hpp): with W = F_E V
// and q = Wᵀ ĝ, a master's share of the block is V⁰ U B̃ Uᵀ, B̃_kk = A_kk q_k² + Σ_{l≠k} ½(a + b)_kl q_l²
// and B̃_kl = (A_kl + ½(a − b)_kl) q_k q_l: about 400 operations per master instead of the 9
// products of matrix() and the 6 foldings with F_E.
void SlaveSph::block_forms(const ElasticHessian<3>& H, const Mat<3>& F, Real volume, Real form[6][6]) {
  static constexpr int kB[6] = {0, 1, 2, 0, 0, 1}, kD[6] = {0, 1, 2, 1, 2, 2};
  const Mat<3> W = F * H.V;
  Real half_sum[3][3] = {}, half_difference[3][3] = {};
  for (int p = 0; p < ElasticHessian<3>::kPairs; ++p) {
    const int k = ElasticHessian<3>::kFirst[p], l = ElasticHessian<3>::kSecond[p];
    half_sum[k][l] = half_sum[l][k] = 0.5 * (H.a[p] + H.b[p]);
    half_difference[k][l] = half_difference[l][k] = 0.5 * (H.a[p] - H.b[p]);
  }
  // outer[k][l]: the coefficients of q_k q_l = (w_k·ĝ)(w_l·ĝ) on ĝ_b ĝ_d, b ≤ d (kB, kD).
  Real outer[3][3][6];
  for (int k = 0; k < 3; ++k)
    for (int l = k; l < 3; ++l)
      for (int q = 0; q < 6; ++q) {
        const int b = kB[q], d = kD[q];
        outer[k][l][q] = b == d ? W(b, k) * W(b, l) : W(b, k) * W(d, l) + W(d, k) * W(b, l);
      }
  Real tilde[3][3][6];  // B̃_kl as forms, k ≤ l
  for (int k = 0; k < 3; ++k)
    for (int q = 0; q < 6; ++q) {
      Real t = H.A(k, k) * outer[k][k][q];
      for (int l = 0; l < 3; ++l)
        if (l != k) t += half_sum[k][l] * outer[l][l][q];
      tilde[k][k][q] = t;
      for (int l = k + 1; l < 3; ++l) tilde[k][l][q] = (H.A(k, l) + half_difference[k][l]) * outer[k][l][q];
    }
  const Mat<3>& U = H.U;
  for (int p = 0; p < 6; ++p) {
    const int a = kB[p], c = kD[p];
    for (int q = 0; q < 6; ++q) {
      Real t = 0;
      for (int k = 0; k < 3; ++k) {
        t += U(a, k) * U(c, k) * tilde[k][k][q];
        for (int l = k + 1; l < 3; ++l) t += (U(a, k) * U(c, l) + U(a, l) * U(c, k)) * tilde[k][l][q];
      }
      form[p][q] = volume * t;
    }
  }
}

void SlaveSph::block_preconditioner(Real beta_dt2) {
  static constexpr int kA[6] = {0, 1, 2, 0, 0, 1}, kC[6] = {0, 1, 2, 1, 2, 2};  // symmetric entries
  hs_.assign(6 * view_.size(), 0.0);  // per owned slave, the entries kA/kC of Σ_m ĝᵀ K^ac ĝ
  for (std::size_t r = 0; r < row_master_.size(); ++r) {
    const std::size_t m = row_master_[r];
    Real form[6][6];
    block_forms(hessian_[r], Eigen::Map<const RowMat3>(&F_[9 * m]), volume_[m], form);
    for (std::size_t k = row_offset_[r]; k < row_offset_[r + 1]; ++k) {
      const std::uint32_t s = pair_slave_[k];
      if (s >= view_.owned()) continue;
      const Real* g = &pair_g_[3 * k];  // ĝ_sm
      const Real gg[6] = {g[0] * g[0], g[1] * g[1], g[2] * g[2], g[0] * g[1], g[0] * g[2], g[1] * g[2]};
      Real* b = &hs_[6 * s];
      for (int p = 0; p < 6; ++p)
        b[p] += form[p][0] * gg[0] + form[p][1] * gg[1] + form[p][2] * gg[2] + form[p][3] * gg[3] +
                form[p][4] * gg[4] + form[p][5] * gg[5];
    }
  }
  const std::size_t ns = slaves_.size();
  diag_.assign(3 * ns, 0.0), block_inverse_.assign(9 * ns, 0.0);
  for (std::size_t i = 0; i < ns; ++i) {
    const Real* b = &hs_[6 * slaves_[i]];
    Mat<3> B;
    for (int p = 0; p < 6; ++p) B(kA[p], kC[p]) = B(kC[p], kA[p]) = beta_dt2 * b[p];
    B.diagonal().array() += ms_[i];
    if (constrained_[i]) {  // P B P + (I − P)
      Mat<3> P = Mat<3>::Identity();
      for (int a = 0; a < 3; ++a) project_free(i, P.col(a).data());
      B = P * B * P + (Mat<3>::Identity() - P);
    }
    if (ms_[i] <= orphan_mass_) B.diagonal().array() += orphan_mass_;  // no master near: no mass
    for (int a = 0; a < 3; ++a) diag_[3 * i + a] = B(a, a);
    Eigen::Map<RowMat3> inverse(&block_inverse_[9 * i]);
    inverse = B.inverse();
  }
}

void SlaveSph::apply_block_preconditioner(const Real* r, Real* z) const {
  for (std::size_t i = 0; i < slaves_.size(); ++i) {
    const Real* b = &block_inverse_[9 * i];
    const Real* ri = r + 3 * i;
    for (int a = 0; a < 3; ++a) z[3 * i + a] = b[3 * a] * ri[0] + b[3 * a + 1] * ri[1] + b[3 * a + 2] * ri[2];
  }
}

// Contacts of the owned slaves at the start of the solve: constrained_ 1 holds the normal velocity
// (normal_ of the slave), 2 all of it (sticky); held_ is the velocity of the collider.
void SlaveSph::find_contacts(Real t, Real dt) {
  const std::size_t ns = slaves_.size();
  constrained_.assign(ns, 0), normal_.assign(3 * ns, 0.0), held_.assign(3 * ns, 0.0);
  contact_collider_.assign(ns, -1);
  for (std::size_t i = 0; i < ns; ++i) {
    if (ms_[i] <= 0) continue;
    const Real* x = &x_[3 * slaves_[i]];
    const Real* v = &vn_[3 * i];
    for (std::size_t o = 0; o < colliders_.size() && !constrained_[i]; ++o) {
      const Collider& collider = colliders_[o];
      const Real ahead[3] = {x[0] + dt * v[0], x[1] + dt * v[1], x[2] + dt * v[2]};
      const Real* at = collider.phi<3>(x, t) <= 0 ? x : collider.phi<3>(ahead, t) <= 0 ? ahead : nullptr;
      if (!at) continue;
      Real n[3];
      collider.normal<3>(at, t, n);
      const Vec3& vc = collider.velocity();
      const Real approach = (v[0] - vc[0]) * n[0] + (v[1] - vc[1]) * n[1] + (v[2] - vc[2]) * n[2];
      if (collider.boundary() == Boundary::Separate && approach >= 0) continue;
      constrained_[i] = collider.boundary() == Boundary::Sticky ? 2 : 1;
      contact_collider_[i] = static_cast<std::int32_t>(o);
      std::copy_n(n, 3, &normal_[3 * i]);
      std::copy_n(vc.data(), 3, &held_[3 * i]);
    }
  }
}

// u ← P u: the normal component removed (1), or all of it (2).
void SlaveSph::project_free(std::size_t i, Real* u) const {
  if (constrained_[i] == 2) {
    u[0] = u[1] = u[2] = 0;
    return;
  }
  const Real* n = &normal_[3 * i];
  const Real un = u[0] * n[0] + u[1] * n[1] + u[2] * n[2];
  for (int a = 0; a < 3; ++a) u[a] -= un * n[a];
}

// (I − P) of the collider's velocity: what the solve holds fixed.
void SlaveSph::held_velocity(std::size_t i, Real* u) const {
  u[0] = u[1] = u[2] = 0;
  if (!constrained_[i]) return;
  Real free[3] = {held_[3 * i], held_[3 * i + 1], held_[3 * i + 2]};
  project_free(i, free);
  for (int a = 0; a < 3; ++a) u[a] = held_[3 * i + a] - free[a];
}

// Coulomb friction on the slaves held by a collider (S5 with a solve), as an impulse on the masters.
// The solve's contact impulse J_s = (A u − m_s v*)_s is normal; dv_n = J_s·n / m_s, and the
// slave's tangential velocity relative to the collider shrinks by μ dv_n, to zero at most
// (Collider::friction_scale). That change Δv_s reaches the masters as the impulse m_s Δv_s split
// like the slave's mass (1R): Δv_m = Σ_s V_s W_sm Δv_s, so the body loses exactly the friction
// impulse Σ_s m_s Δv_s whether or not its masters touch the collider (they sit above it on the
// slaves). Applied to the slaves alone, it would be diluted by the blend (8) and undone by the
// next splat: a body kept sliding at its speed.
void SlaveSph::contact_friction(Space& space, Real beta_dt2, const std::vector<Real>& momentum) {
  const std::size_t ns = slaves_.size();
  std::vector<Real> Au(3 * ns, 0.0);
  std::vector<char> mask(ns, 0);
  std::swap(mask, constrained_);
  hessian_product(space, beta_dt2, u_.data(), Au.data());
  std::swap(mask, constrained_);
  friction_dv_.assign(3 * view_.size(), 0.0);
  for (std::size_t i = 0; i < ns; ++i) {
    if (constrained_[i] != 1 || ms_[i] <= 0) continue;
    const Collider& collider = colliders_[contact_collider_[i]];
    if (collider.boundary() != Boundary::Separate || collider.friction() == 0) continue;
    const Real* n = &normal_[3 * i];
    Real j_n = 0, v_t[3], v_t_squared = 0;
    for (int a = 0; a < 3; ++a) j_n += (Au[3 * i + a] - momentum[3 * i + a]) * n[a];
    if (j_n <= 0) continue;  // the collider pushes; it never pulls
    for (int a = 0; a < 3; ++a) v_t[a] = u_[3 * i + a] - held_[3 * i + a];
    project_free(i, v_t);
    for (int a = 0; a < 3; ++a) v_t_squared += v_t[a] * v_t[a];
    const Real scale = collider.friction_scale(std::sqrt(v_t_squared), j_n / ms_[i]);
    for (int a = 0; a < 3; ++a) friction_dv_[3 * slaves_[i] + a] = (scale - 1) * v_t[a];
  }
  space.halo().update_values(friction_dv_.data(), 3, friction_dv_.data() + 3 * view_.owned());
}

// The collision response (S11) of velocity v of the slave or master at x: each collider in scene
// order, detected at x or at x + Δt v (§3.8). Returns whether any collider responded.
bool SlaveSph::collide(const Real* x, Real* v, Real t, Real dt) const {
  bool any = false;
  for (std::size_t o = 0; o < colliders_.size(); ++o) {
    const Collider& collider = colliders_[o];
    const Real ahead[3] = {x[0] + dt * v[0], x[1] + dt * v[1], x[2] + dt * v[2]};
    if (collider.phi<3>(x, t) <= 0)
      any |= collider.project<3>(x, v, t);
    else if (collider.phi<3>(ahead, t) <= 0)
      any |= collider.project<3>(ahead, v, t);
  }
  return any;
}

// The initial guess of the solve: u = v* (the cold start of spec A8) plus the correction the solve
// made to this slave's v* in the last step, kept as a particle field (restarts continue with the
// same bits; 0 for a new slave), its held part removed. Returns whether any slave has one (global).
bool SlaveSph::warm_start(Space& space) {
  const Real* correction = space.particles().real("solve_correction");
  std::uint64_t any = 0;
  for (std::size_t i = 0; i < slaves_.size(); ++i) {
    Real d[3] = {correction[3 * slaves_[i]], correction[3 * slaves_[i] + 1], correction[3 * slaves_[i] + 2]};
    any += d[0] != 0 || d[1] != 0 || d[2] != 0;
  }
  MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_UINT64_T, MPI_SUM, space.comm());
  if (any == 0) return false;
  cold_u_ = u_;
  for (std::size_t i = 0; i < slaves_.size(); ++i) {
    Real d[3] = {correction[3 * slaves_[i]], correction[3 * slaves_[i] + 1], correction[3 * slaves_[i] + 2]};
    if (constrained_[i]) project_free(i, d);
    for (int a = 0; a < 3; ++a) u_[3 * i + a] += d[a];
  }
  return true;
}

// ‖b − A u⁰‖ of the cold start u⁰ (in cold_u_), the residual the stopping test is relative to.
Real SlaveSph::cold_residual(Space& space, Real beta_dt2) {
  std::vector<Real> r(cold_u_.size());
  hessian_product(space, beta_dt2, cold_u_.data(), r.data());
  for (std::size_t k = 0; k < r.size(); ++k) r[k] = rhs_[k] - r[k];
  return std::sqrt(reproducible_dot(space.comm(), r.data(), r.data(), r.size()));
}

// S3-S5: forces f_s = −Σ_m τ_m ĝ_sm (11R), predictor v* = v^n + Δt f/m (14), the solve of (15R)
// from u = v*, then the slaves' collisions (velocity only, §3.8). The new slave velocities end in
// vs_ for owned and halo slaves.
void SlaveSph::solve_slave_velocities(Space& space, Real t, Real dt) {
  const std::size_t ns = slaves_.size();
  rhs_.assign(3 * ns, 0.0), u_.assign(3 * ns, 0.0), vstar_.assign(3 * ns, 0.0);
  friction_dv_.clear();
  hs_.assign(3 * view_.size(), 0.0);  // −Σ_m τ_m ĝ_sm per owned slave, in master id order
  for (std::size_t r = 0; r < row_master_.size(); ++r) {
    const Real* tau = &tau_[9 * row_master_[r]];
    for (std::size_t k = row_offset_[r]; k < row_offset_[r + 1]; ++k) {
      const std::uint32_t s = pair_slave_[k];
      if (s >= view_.owned()) continue;
      const Real* g = &pair_g_[3 * k];  // ĝ_sm
      Real* f = &hs_[3 * s];
      for (int a = 0; a < 3; ++a) f[a] -= tau[3 * a] * g[0] + tau[3 * a + 1] * g[1] + tau[3 * a + 2] * g[2];
    }
  }
  for (std::size_t i = 0; i < ns; ++i) {
    const Real* f = &hs_[3 * slaves_[i]];
    for (int a = 0; a < 3; ++a) {
      vstar_[3 * i + a] = ms_[i] > 0 ? vn_[3 * i + a] + dt * f[a] / ms_[i] : 0.0;
      rhs_[3 * i + a] = ms_[i] * vstar_[3 * i + a];
      u_[3 * i + a] = vstar_[3 * i + a];
    }
  }
  if (probe_) probe_transfers(space, dt);
  vs_.assign(3 * view_.size(), 0.0), q_.assign(9 * view_.size(), 0.0);
  stats_ = SolverStats{};
  stats_.substeps = 1;
  if (settings_.beta > 0) {
    const Real beta_dt2 = settings_.beta * dt * dt;
    // Slaves in contact are constraints of the solve (an extension of spec §3.8, which collides
    // after the solve only: with a stiff material at the paper's step, the contact impulse the
    // solve does not see compresses the contact layer by Δt|v|/d per step and the run blows up).
    // A slave whose velocity v^n_s reaches a collider (detected as in §3.8) has its normal velocity
    // held at the collider's (all of it for sticky); friction is applied after the solve (S5).
    find_contacts(t, dt);
    std::uint64_t fixed = 0;
    for (std::size_t i = 0; i < ns; ++i) fixed += constrained_[i] != 0;
    MPI_Allreduce(MPI_IN_PLACE, &fixed, 1, MPI_UINT64_T, MPI_SUM, space.comm());
    const std::vector<Real> predicted = fixed > 0 ? rhs_ : std::vector<Real>();  // m_s v*
    if (fixed > 0) {  // b ← P (b − A u_c) + u_c, u_c the held velocities, A u_c by the full operator
      std::vector<Real> uc(3 * ns, 0.0), auc(3 * ns, 0.0);
      for (std::size_t i = 0; i < ns; ++i) held_velocity(i, &uc[3 * i]);
      std::vector<char> mask(ns, 0);
      std::swap(mask, constrained_);
      hessian_product(space, beta_dt2, uc.data(), auc.data());
      std::swap(mask, constrained_);
      for (std::size_t i = 0; i < ns; ++i) {
        if (!constrained_[i]) continue;
        Real r[3], u[3];
        for (int a = 0; a < 3; ++a) r[a] = rhs_[3 * i + a] - auc[3 * i + a], u[a] = u_[3 * i + a];
        project_free(i, r), project_free(i, u);
        for (int a = 0; a < 3; ++a)
          rhs_[3 * i + a] = r[a] + uc[3 * i + a], u_[3 * i + a] = u[a] + uc[3 * i + a];
      }
    }
    block_preconditioner(beta_dt2);
    if (!ksp_ || ksp_comm_ != space.comm()) {
      ksp_ = std::make_unique<ShellKsp>(space.comm(), KSPCG, PCSHELL);
      ksp_comm_ = space.comm();
    }
    const ShellKsp::Product product = [&](const Real* u, Real* y) { hessian_product(space, beta_dt2, u, y); };
    const ShellKsp::Preconditioner preconditioner = [&](const Real* r, Real* z) {
      apply_block_preconditioner(r, z);
    };
    // Relative to the residual of u = v* (spec A8), with a floor relative to the momentum ‖m v*‖:
    // a body in free fall starts at a residual of round-off, which no iteration can reduce further.
    const Real momentum = std::sqrt(reproducible_dot(space.comm(), rhs_.data(), rhs_.data(), rhs_.size()));
    const Real floor = 1e-6 * settings_.cg_tol * momentum;
    Real rtol = settings_.cg_tol, atol = floor, cold = 0;
    if (warm_start(space)) {  // the same test, on the residual of v* computed here
      cold = cold_residual(space, beta_dt2);
      rtol = 0, atol = std::max(settings_.cg_tol * cold, floor);
    }
    const KspOutcome outcome = ksp_->solve(3 * ns, product, diag_.data(), rhs_.data(), u_.data(), rtol, atol,
                                           settings_.cg_max, &preconditioner);
    stats_.newton_iterations = 1;
    stats_.ksp_iterations = outcome.iterations;
    if (!outcome.converged && space.rank() == 0)
      fmt::print(stderr,
                 "nendo: warning: slave velocity solve: KSP {} after {} iterations; the step goes on\n",
                 outcome.reason, outcome.iterations);
    if (fixed > 0) contact_friction(space, beta_dt2, predicted);
    // A solve stopped by the absolute floor (a body in free fall) found round-off, not a correction:
    // carried on, the part below the floor would add to the velocities step after step.
    const bool carry = rtol > 0 ? outcome.reason == "CONVERGED_RTOL" : settings_.cg_tol * cold > floor;
    Real* kept = space.particles().real("solve_correction");
    for (std::size_t i = 0; i < ns; ++i)
      for (int a = 0; a < 3; ++a) kept[3 * slaves_[i] + a] = carry ? u_[3 * i + a] - vstar_[3 * i + a] : 0.0;
  }
  // S5. With a solve (β > 0) the contacts were its constraints; colliding the solution again would
  // change velocities the solve balanced, and that feeds back through F: slaves that lag below a
  // floor, hit again after every solve, made the bottom corners of a bouncing stiff cube blow up.
  // Friction acts on the masters, as the impulse of the slaves' friction (contact_friction).
  for (std::size_t i = 0; i < ns; ++i) {
    const std::size_t c = slaves_[i];
    if (settings_.beta == 0) collide(&x_[3 * c], &u_[3 * i], t, dt);
    for (int a = 0; a < 3; ++a) vs_[3 * c + a] = u_[3 * i + a];
  }
  space.halo().update_values(vs_.data(), 3, vs_.data() + 3 * view_.owned());
  if (settings_.blend == "flip") {  // the step's change of the slave velocities, Δv_s = v^{n+1}_s − v^n_s
    dvs_.assign(3 * view_.size(), 0.0);
    for (std::size_t i = 0; i < ns; ++i)
      for (int a = 0; a < 3; ++a) dvs_[3 * slaves_[i] + a] = u_[3 * i + a] - vn_[3 * i + a];
    space.halo().update_values(dvs_.data(), 3, dvs_.data() + 3 * view_.owned());
  }
}

// The invariants of the transfers this step, for tests: Σ_s f_s = 0 (zero-sum weights), and
// Σ_s m_s v_s = Σ_m m_m v_m (Σ_s V_s W_sm), the momentum splat (1R), (2R) moves.
void SlaveSph::probe_transfers(Space& space, Real dt) {
  std::vector<std::vector<Real>> terms(9);
  for (std::size_t i = 0; i < slaves_.size(); ++i)
    for (int a = 0; a < 3; ++a) {
      const Real f = ms_[i] * (u_[3 * i + a] - vn_[3 * i + a]) / dt;
      terms[a].push_back(f);
      terms[3 + a].push_back(ms_[i] * vn_[3 * i + a]);
    }
  for (std::size_t r = 0; r < row_master_.size(); ++r) {
    if (!owned_row(r)) continue;
    const std::uint32_t m = row_master_[r];
    Real coverage = 0;  // Σ_s V_s W_sm
    for (std::size_t k = row_offset_[r]; k < row_offset_[r + 1]; ++k)
      coverage += slave_volume(pair_slave_[k]) * pair_w_[k];
    for (int a = 0; a < 3; ++a) terms[6 + a].push_back(mass_[m] * vm_[3 * m + a] * coverage);
  }
  std::vector<std::vector<Real>> magnitude(1);
  for (Real f : terms[0]) magnitude[0].push_back(std::fabs(f));
  const std::vector<Real> sums = reproducible_sums(space.comm(), terms);
  probe_result_.force_sum = {sums[0], sums[1], sums[2]};
  probe_result_.force_magnitude = reproducible_sums(space.comm(), magnitude)[0];
  probe_result_.slave_momentum = {sums[3], sums[4], sums[5]};
  probe_result_.splat_momentum = {sums[6], sums[7], sums[8]};
}

// ---------------------------------------------------------------------------------------------
// S6-S9 for the owned masters: v̂ (9'), ∇v (7R), the trial F_E (18) and the plastic clamp
// (19)-(21), the velocity blend (8), collisions and the move (10).

void SlaveSph::update_masters(Space& space, Real t, Real dt) {
  ParticleSet& ps = space.particles();
  Real* x = ps.positions();
  Real* v = ps.real("velocity");
  Real* F = ps.real("F");
  Real* Fp = plastic_ ? ps.real("Fp") : nullptr;
  Real* Jp = plastic_ ? ps.real("Jp") : nullptr;
  const bool literal_reference = settings_.reference == "master";
  std::uint64_t runaway = 0;  // masters that moved farther than max_move_
  for (std::size_t r = 0; r < row_master_.size(); ++r) {
    if (!owned_row(r)) continue;
    const std::size_t c = row_master_[r];
    const std::size_t first = row_offset_[r], last = row_offset_[r + 1];
    Real sw = 0, vhat[3] = {0, 0, 0};
    for (std::size_t k = first; k < last; ++k) {
      sw += pair_w_[k];
      for (int a = 0; a < 3; ++a) vhat[a] += pair_w_[k] * vs_[3 * pair_slave_[k] + a];
    }
    for (int a = 0; a < 3; ++a) vhat[a] = sw > 0 ? vhat[a] / sw : vm_[3 * c + a];
    // What the master keeps of its own velocity: v^n_m (Eq. 8), or with blend: flip v^n_m plus the
    // slaves' change Δv interpolated like v̂ (the PIC/FLIP blend of [17]): at rest under gravity
    // the literal form creeps at (1 − α)/α g Δt, since the kept gravity kick is never resisted.
    Real kept[3] = {vm_[3 * c], vm_[3 * c + 1], vm_[3 * c + 2]};
    if (settings_.blend == "flip" && sw > 0) {
      Real dv[3] = {0, 0, 0};
      for (std::size_t k = first; k < last; ++k)
        for (int a = 0; a < 3; ++a) dv[a] += pair_w_[k] * dvs_[3 * pair_slave_[k] + a];
      for (int a = 0; a < 3; ++a) kept[a] = vm_[3 * c + a] + dv[a] / sw;
    }
    const Real* ref = literal_reference ? &vm_[3 * c] : vhat;
    Mat<3> grad = Mat<3>::Zero();
    for (std::size_t k = first; k < last; ++k) {
      const Real* vs = &vs_[3 * pair_slave_[k]];
      const Real* g = &pair_g_[3 * k];  // ĝ_sm
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) grad(a, b) += (vs[a] - ref[a]) * g[b];
    }
    const Mat<3> Fn = Eigen::Map<const RowMat3>(&F_[9 * c]);
    Mat<3> Fe = (Mat<3>::Identity() + dt * grad) * Fn;
    if (plastic_) {
      const Mat<3> trial = Fe;
      Real jp = Jp[c];
      std::visit([&](const auto& m) { m.template project<3>(Fe, jp); }, materials_[material_of(c)]);
      if (jp != Jp[c]) {  // F_P ← F_E⁻¹ F̂_E F_P (21)
        Jp[c] = jp;
        Eigen::Map<RowMat3>(Fp + 9 * c) = (Fe.inverse() * trial) * Eigen::Map<const RowMat3>(Fp + 9 * c);
      }
    }
    Eigen::Map<RowMat3>(F + 9 * c) = Fe;
    Real* vc = v + 3 * c;
    Real* xc = x + 3 * c;
    for (int a = 0; a < 3; ++a) vc[a] = (1 - settings_.alpha) * kept[a] + settings_.alpha * vhat[a];
    if (!friction_dv_.empty())
      for (std::size_t k = first; k < last; ++k) {
        const Real share = slave_volume(pair_slave_[k]) * pair_w_[k];
        for (int a = 0; a < 3; ++a) vc[a] += share * friction_dv_[3 * pair_slave_[k] + a];
      }
    collide(xc, vc, t, dt);  // S8
    for (int a = 0; a < 3; ++a) xc[a] += dt * vc[a];
    runaway += dt * dt * (vc[0] * vc[0] + vc[1] * vc[1] + vc[2] * vc[2]) > max_move_ * max_move_;
    for (std::size_t o = 0; o < colliders_.size(); ++o) {
      const Real phi = colliders_[o].phi<3>(xc, t + dt);
      if (phi >= 0) continue;
      Real n[3];
      colliders_[o].normal<3>(xc, t + dt, n);
      for (int a = 0; a < 3; ++a) xc[a] -= phi * n[a];
    }
    for (int a = 0; a < 3; ++a) vm_[3 * c + a] = vc[a];
  }
  require_bounded_motion(space, runaway, t + dt);
}

// Collective: a master that moved farther than max_move_ in one step means the step is unstable
// (β = 0 beyond the explicit limit, or a blow-up); going on would read neighbourhoods the halo no
// longer holds, and the run would part from the same run on another rank count.
void SlaveSph::require_bounded_motion(Space& space, std::uint64_t runaway, Real t) const {
  MPI_Allreduce(MPI_IN_PLACE, &runaway, 1, MPI_UINT64_T, MPI_SUM, space.comm());
  if (runaway == 0) return;
  throw Error(fmt::format(
      "slave_sph: {} masters moved more than {:.3g} m (half the block edge less the kernel support and "
      "the skin) in "
      "the step to t = {:.6g}: the step is unstable; lower time.dt{}",
      runaway, max_move_, t, settings_.beta == 0 ? " (beta = 0 is explicit) or raise slave_sph.beta" : ""));
}

// S10: slaves move with the masters' new velocities, interpolated with the step's weights (22).
void SlaveSph::advect_slaves(Space& space, Real dt) {
  if (!settings_.slaves) return;
  space.halo().update_values(vm_.data(), 3, vm_.data() + 3 * view_.owned());
  ParticleSet& ps = space.particles();
  Real* x = ps.positions();
  Real* v = ps.real("velocity");
  splat_masses(vm_);
  for (std::size_t i = 0; i < slaves_.size(); ++i) {
    const std::size_t c = slaves_[i];
    interpolated(c, v + 3 * c);
    for (int a = 0; a < 3; ++a) x[3 * c + a] += dt * v[3 * c + a];
  }
}

// ---------------------------------------------------------------------------------------------

void SlaveSph::remove_dead(Space& space) {
  ParticleSet& ps = space.particles();
  if (std::find(dead_owned_.begin(), dead_owned_.end(), 1) == dead_owned_.end()) return;
  std::vector<bool> keep(ps.size(), true);
  for (std::size_t p = 0; p < dead_owned_.size(); ++p) keep[p] = dead_owned_[p] == 0;
  ps.compact(keep);
}

void SlaveSph::advance(Space& space, Real t, Real dt) {
  events_ = SlaveEvents{};
  clock_.time(kNeighbours, [&] {
    const bool new_layout = space.layout_version() != layout_;
    refresh_local(space);
    dead_owned_.assign(view_.owned(), 0);
    if (settings_.slaves && settings_.deletion) delete_crowded_slaves(space);
    if (new_layout) build_candidates();
    find_neighbours();
  });
  clock_.time(kTransfer, [&] {
    exchange_master_sums(space);
    gravity_dv_ = {dt * gravity_[0], dt * gravity_[1], dt * gravity_[2]};
    splat_to_slaves(gravity_dv_);
    // Orphans (no master within 2h, spec A15) leave at the end of the step.
    if (settings_.slaves)
      for (std::size_t i = 0; i < slaves_.size(); ++i)
        if (ms_[i] <= orphan_mass_) dead_owned_[slaves_[i]] = 1, ++events_.orphaned;
  });
  clock_.time(kStress, [&] { master_stresses(); });
  clock_.time(kSolve, [&] { solve_slave_velocities(space, t, dt); });
  clock_.time(kMasters, [&] { update_masters(space, t, dt); });
  clock_.time(kSlaves, [&] { advect_slaves(space, dt); });
  clock_.time(kTopology, [&] {
    if (settings_.slaves && settings_.insertion) insert_slaves(space);
    remove_dead(space);
    std::uint64_t counts[3] = {events_.inserted, events_.deleted, events_.orphaned};
    MPI_Allreduce(MPI_IN_PLACE, counts, 3, MPI_UINT64_T, MPI_SUM, space.comm());
    events_ = {counts[0], counts[1], counts[2]};
    // A new particle set needs a new layout; otherwise the layout, and the candidate lists built
    // for it, are kept while no particle moved more than skin/2 (the same decision on every rank).
    if (counts[0] + counts[1] + counts[2] > 0)
      space.migrate();
    else
      space.migrate_if_moved(0.5 * skin_);
  });
}

GlobalDiagnostics SlaveSph::diagnostics(const Space& space) const {
  const ParticleSet& ps = space.particles();
  const std::int32_t* kind = ps.int32("kind");
  const Real* m = ps.real("mass");
  GlobalDiagnostics out =
      particle_diagnostics(space, [&](std::size_t p) { return kind[p] == kMaster ? m[p] : 0.0; });
  // Elastic energy Σ_m V⁰ Ψ(F_E, F_P) (Eq. 17).
  std::vector<std::vector<Real>> terms(1);
  const Real* F = ps.real("F");
  const Real* V0 = ps.real("volume");
  const std::int32_t* material = ps.int32("material");
  const Real* Jp = plastic_ ? ps.real("Jp") : nullptr;
  for (std::size_t p = 0; p < ps.size(); ++p) {
    if (kind[p] != kMaster) continue;
    const Mat<3> Fe = Eigen::Map<const RowMat3>(F + 9 * p);
    const Real jp = Jp ? Jp[p] : 1.0;
    terms[0].push_back(V0[p] * std::visit([&](const auto& mat) { return mat.template psi<3>(Fe, jp); },
                                          materials_[material[p]]));
  }
  out.elastic_energy = reproducible_sums(space.comm(), terms)[0];
  return out;
}

}  // namespace nendo
