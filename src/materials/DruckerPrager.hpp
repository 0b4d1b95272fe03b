#pragma once
// Drucker–Prager elastoplasticity for sand (Klar et al. 2016, "Drucker-Prager elastoplasticity
// for sand animation"). Elasticity: St. Venant–Kirchhoff in the Hencky strain ε = log Σ of the
// polar SVD F = U Σ V^T,
//   ψ = μ tr(ε²) + (λ/2) tr(ε)²,   P = U (2μ Σ^{-1} ε + λ tr(ε) Σ^{-1}) V^T,
//   τ = P F^T = U (2μ ε + λ tr(ε) I) U^T.
// Yield, on the Kirchhoff stress: y(τ) = ‖dev τ‖ + α tr τ − k ≤ 0, α = √(2/3) · 2 sin φ / (3 − sin φ)
// (Klar's α: Mohr–Coulomb matched on the compression meridian) and the cohesion term
// k = √(2/3) · 6 c cos φ / (3 − sin φ) of the same match. k shifts the cone's apex from τ = 0 to
// tr τ = k/α = 3 c cot φ, i.e. a mean tensile strength c cot φ (Mohr–Coulomb's); c = 0 is
// Klar's dry sand. φ = 0 gives a von Mises cylinder of radius k. The same α and k are used in 2D.
// Return mapping (project), in principal Hencky strains, closest point in the energy norm:
//   inside (y ≤ 0): unchanged; beyond the apex: ε = apex (stress-free without cohesion, F → R);
//   otherwise: ε −= (y / 2μ) ε̂/‖ε̂‖ (deviatoric part shrunk onto the cone, volume kept).
// Per-particle state Jp = J_P = det F / det F_E, the plastic volume ratio (≥ 1: only the apex
// projection changes volume, and it expands). It is Tampubolon et al. 2017's volume correction:
// project() adds log(J_P)/d to each trial ε, so sand that separated (projected to the apex) must
// first be compressed back by what it gained before it bears stress again, instead of
// compacting a little more at every separation. det F = det F_E · J_P holds as for snow. Jp does
// not enter ψ or P. ψ, P need σ > 0: for σ_d ≤ 0 (inverted F) ψ = +∞ and P is NaN; project()
// un-inverts a trial by using |σ_d| (at least 1e-6), so F_E stays invertible.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "core/Svd.hpp"
#include "materials/ElasticHessian.hpp"
#include "materials/ElasticParameters.hpp"
#include "scene/MaterialSchema.hpp"

namespace nendo {

struct DruckerPrager {
  static constexpr const char* kName = "drucker_prager";
  static constexpr bool kPlastic = true;
  static constexpr Real kMinStretch = 1e-6;  // smallest |σ| project() takes the logarithm of

  static MaterialModelSchema schema() {
    MaterialModelSchema model{kName, "Drucker-Prager elastoplasticity for sand (MPM)", elastic_solid_keys()};
    model.parameters.push_back(KeySchema::real("friction_angle", "internal friction angle")
                                   .measured_in("degree")
                                   .defaults_to("30")
                                   .at_least(0)
                                   .below(90));
    model.parameters.push_back(KeySchema::real("cohesion", "cohesion; 0 is dry sand")
                                   .measured_in("Pa")
                                   .defaults_to("0")
                                   .at_least(0));
    return model;
  }

  explicit DruckerPrager(const MaterialSettings& settings)
      : DruckerPrager(lame_parameters(settings), material_parameter(settings, "friction_angle"),
                      material_parameter(settings, "cohesion")) {}
  DruckerPrager(const Lame& lame, Real friction_angle_degrees, Real cohesion_)
      : mu(lame.mu), lambda(lame.lambda), cohesion(cohesion_) {
    const Real phi = friction_angle_degrees * M_PI / 180;
    const Real denominator = 3 - std::sin(phi);
    alpha = std::sqrt(2.0 / 3.0) * 2 * std::sin(phi) / denominator;
    yield_shift = std::sqrt(2.0 / 3.0) * 6 * cohesion * std::cos(phi) / denominator;
  }

  template <int D>
  Real psi(const Mat<D>& F, Real /*Jp*/) const {
    const PolarSvd<D> svd = polar_svd<D>(F);
    if (!(svd.sigma(D - 1) > 0)) return std::numeric_limits<Real>::infinity();
    const Eigen::Matrix<Real, D, 1> e = svd.sigma.array().log();
    const Real tr = e.sum();
    return mu * e.squaredNorm() + 0.5 * lambda * tr * tr;
  }

  template <int D>
  Mat<D> P(const Mat<D>& F, Real /*Jp*/) const {
    const PolarSvd<D> svd = polar_svd<D>(F);
    if (!(svd.sigma(D - 1) > 0)) return Mat<D>::Constant(std::numeric_limits<Real>::quiet_NaN());
    const Eigen::Matrix<Real, D, 1> e = svd.sigma.array().log();
    const Eigen::Matrix<Real, D, 1> p = (2 * mu * e.array() + lambda * e.sum()) / svd.sigma.array();
    return svd.U * p.asDiagonal() * svd.V.transpose();
  }

  // ∂P/∂F of the Hencky energy in the SVD's diagonal space (spec 002 §2.5), with e_k = log σ_k and
  // τ_k = 2μ e_k + λ tr e (so ψ̂_{,k} = τ_k/σ_k):
  //   ψ̂_{,kk} = (2μ + λ − τ_k)/σ_k²,  ψ̂_{,kl} = λ/(σ_kσ_l),  b_kl = (ψ̂_{,k} + ψ̂_{,l})/(σ_k + σ_l),
  //   a_kl = (ψ̂_{,k} − ψ̂_{,l})/(σ_k − σ_l) = [2μ (log1p(x)/x − e_l) − λ tr e]/(σ_kσ_l),
  //   x = σ_k/σ_l − 1: a closed form with no 0/0 (log1p(x)/x → 1 at σ_k = σ_l). σ_d ≤ 0: NaN, as P.
  template <int D>
  ElasticHessian<D> hessian(const Mat<D>& F, Real /*Jp*/) const {
    using H = ElasticHessian<D>;
    using Vec = Eigen::Matrix<Real, D, 1>;
    const PolarSvd<D> svd = polar_svd<D>(F);
    if (!(svd.sigma(D - 1) > 0)) return H::nan();
    const Vec& s = svd.sigma;
    const Vec e = s.array().log();
    const Real tr = e.sum();
    const Vec tau = 2 * mu * e.array() + lambda * tr;
    const Vec inv = s.cwiseInverse();
    H h;
    h.U = svd.U;
    h.V = svd.V;
    h.A = lambda * inv * inv.transpose();
    h.A.diagonal().array() += (2 * mu - tau.array()) * inv.array().square();
    for (int p = 0; p < H::kPairs; ++p) {
      const int k = H::kFirst[p], l = H::kSecond[p];
      const Real x = (s(k) - s(l)) / s(l);
      const Real log_ratio = x == 0 ? 1 : std::log1p(x) / x;  // (e_k − e_l)/(σ_k − σ_l) · σ_l
      h.a[p] = (2 * mu * (log_ratio - e(l)) - lambda * tr) * inv(k) * inv(l);
      h.b[p] = (tau(k) * inv(k) + tau(l) * inv(l)) / (s(k) + s(l));
    }
    return h;
  }

  template <int D>
  Mat<D> kirchhoff(const Mat<D>& F, Real /*Jp*/) const {
    return kirchhoff_svd<D>(polar_svd<D>(F));
  }
  // kirchhoff<D> of count particles (F row-major, d×d each), their SVDs batched.
  template <int D>
  void kirchhoff_batch(const Real* F, const Real* /*Jp*/, std::size_t count, Real* tau) const {
    for_each_polar_svd<D>(F, count, [&](std::size_t p, const PolarSvd<D>& svd) {
      Eigen::Map<Eigen::Matrix<Real, D, D, Eigen::RowMajor>>(tau + D * D * p) = kirchhoff_svd<D>(svd);
    });
  }
  // kirchhoff<D> given the SVD of F.
  template <int D>
  Mat<D> kirchhoff_svd(const PolarSvd<D>& svd) const {
    if (!(svd.sigma(D - 1) > 0)) return Mat<D>::Constant(std::numeric_limits<Real>::quiet_NaN());
    const Eigen::Matrix<Real, D, 1> e = svd.sigma.array().log();
    const Eigen::Matrix<Real, D, 1> tau = 2 * mu * e.array() + lambda * e.sum();
    return svd.U * tau.asDiagonal() * svd.U.transpose();
  }

  // y(τ(F)) in Pa: ≤ 0 inside the cone, 0 on it.
  template <int D>
  Real yield_function(const Mat<D>& F) const {
    const PolarSvd<D> svd = polar_svd<D>(F);
    return yield_of_strain<D>(svd.sigma.array().abs().log().matrix());
  }

  template <int D>
  void project(Mat<D>& F, Real& Jp) const {
    project_svd<D>(polar_svd<D>(F), F, Jp);
  }
  // project<D> of count particles in place (F row-major, d×d each), their SVDs batched, and the
  // logarithms and exponentials of a batch at once (vectorised; element by element, so a lane's
  // values do not depend on its neighbours). With hencky, also each particle's new elastic Hencky
  // strain ε = log V_E = U diag(log σ) Uᵀ (d×d row-major), from the SVD the return mapping has
  // anyway: τ is linear in it (kirchhoff_of_hencky), so that the next P2G needs no second SVD.
  template <int D>
  void project_batch(Real* F, Real* Jp, std::size_t count, Real* hencky = nullptr) const {
    using Vec = Eigen::Matrix<Real, D, 1>;
    using Lanes = Eigen::Array<Real, D * kPolarBatch, 1>;  // lane l's d values at d l
    for_each_polar_svd_batch<D>(
        F, count,
        [&](const std::size_t* index, int n, const PolarSvd<D>* svd) {
          Lanes sigma = Lanes::Ones(), projected = Lanes::Zero();
          Eigen::Array<Real, kPolarBatch, 1> volume = Eigen::Array<Real, kPolarBatch, 1>::Zero();
          for (int l = 0; l < n; ++l) sigma.template segment<D>(D * l) = svd[l].sigma;
          const Lanes trial = by_fours(sigma, [](const auto& x) { return x.abs().max(kMinStretch).log(); });
          bool changed[kPolarBatch], yielded[kPolarBatch];
          for (int l = 0; l < n; ++l) {
            Vec strain;
            const Vec t = trial.template segment<D>(D * l);
            changed[l] = return_strain<D>(t, Jp[index[l]], !(svd[l].sigma(D - 1) > 0), strain, yielded[l]);
            projected.template segment<D>(D * l) = changed[l] ? strain : untouched_strain<D>(svd[l], t);
            volume[l] = t.sum() - strain.sum();
          }
          const auto exp = [](const auto& x) { return x.exp(); };
          const Lanes stretch = by_fours(projected, exp);
          const Eigen::Array<Real, kPolarBatch, 1> growth = by_fours(volume, exp);
          for (int l = 0; l < n; ++l) {
            const std::size_t p = index[l];
            if (changed[l]) {
              Jp[p] = yielded[l] ? Jp[p] * growth[l] : 1;
              Eigen::Map<Eigen::Matrix<Real, D, D, Eigen::RowMajor>>(F + D * D * p) =
                  svd[l].U * stretch.template segment<D>(D * l).matrix().asDiagonal() * svd[l].V.transpose();
            }
            if (hencky)
              symmetric_product<D>(svd[l].U, projected.template segment<D>(D * l), hencky + D * D * p);
          }
        },
        [](std::size_t) { return true; });
  }
  // τ = 2μ ε + λ tr ε I of count particles (ε: the elastic Hencky strain of project_batch; τ as
  // kirchhoff<D>, row-major d×d each).
  template <int D>
  void kirchhoff_of_hencky(const Real* hencky, std::size_t count, Real* tau) const {
    for (std::size_t p = 0; p < count; ++p) {
      const Real* e = hencky + D * D * p;
      Real trace = 0;
      for (int a = 0; a < D; ++a) trace += e[(D + 1) * a];
      for (int k = 0; k < D * D; ++k)
        tau[D * D * p + k] = 2 * mu * e[k] + (k % (D + 1) == 0 ? lambda * trace : 0.0);
    }
  }
  // project<D> given the SVD of F.
  template <int D, class Matrix>
  void project_svd(const PolarSvd<D>& svd, Matrix& F, Real& Jp) const {
    using Vec = Eigen::Matrix<Real, D, 1>;
    const Vec trial = svd.sigma.array().abs().max(kMinStretch).log();
    Vec projected;
    bool yielded;
    if (!return_strain<D>(trial, Jp, !(svd.sigma(D - 1) > 0), projected, yielded)) return;
    Jp = yielded ? Jp * std::exp(trial.sum() - projected.sum()) : 1;
    F = svd.U * projected.array().exp().matrix().asDiagonal() * svd.V.transpose();
  }

  // The return mapping on the principal log-stretches trial (spec 002 §3.2): the new ones in
  // projected, yielded where the trial state is outside the cone (J_P then takes the volume
  // change, else it resets to 1); false where F and J_P stay as they are (inside the cone with
  // J_P = 1, not inverted).
  template <int D>
  bool return_strain(const Eigen::Matrix<Real, D, 1>& trial, Real Jp, bool inverted,
                     Eigen::Matrix<Real, D, 1>& projected, bool& yielded) const {
    using Vec = Eigen::Matrix<Real, D, 1>;
    const Vec e = trial.array() + (Jp == 1 ? 0.0 : std::log(Jp)) / D;  // volume correction
    const Real y = yield_of_strain<D>(e);
    yielded = y > 0;
    if (y <= 0) {
      projected = e;
      return !(Jp == 1 && !inverted);  // inside the cone the correction is used up: J_P = 1
    }
    if (alpha > 0 && alpha * (D * lambda + 2 * mu) * e.sum() >= yield_shift) {
      projected = Vec::Constant(yield_shift / (alpha * (D * lambda + 2 * mu)) / D);  // apex
    } else {
      const Vec deviatoric = e.array() - e.sum() / D;
      projected = e - (y / (2 * mu)) * deviatoric / deviatoric.norm();
    }
    return true;
  }

  // log σ of an F the return mapping leaves as it is (σ > 0): trial, unless σ is below its clamp.
  template <int D>
  static Eigen::Matrix<Real, D, 1> untouched_strain(const PolarSvd<D>& svd,
                                                    const Eigen::Matrix<Real, D, 1>& trial) {
    return svd.sigma(D - 1) >= kMinStretch ? trial : Eigen::Matrix<Real, D, 1>(svd.sigma.array().log());
  }

  // fn of x, 4 entries at a time: Eigen's 4-wide packets (AVX, AVX-512), not its 8-wide ones,
  // whose log and exp GCC 12 warns about (-Wuninitialized inside its own AVX-512 intrinsics).
  template <int N, class Fn>
  static Eigen::Array<Real, N, 1> by_fours(const Eigen::Array<Real, N, 1>& x, Fn&& fn) {
    static_assert(N % 4 == 0, "whole packets, so that an entry's value does not depend on its place");
    Eigen::Array<Real, N, 1> out;
    for (int i = 0; i < N; i += 4) out.template segment<4>(i) = fn(x.template segment<4>(i));
    return out;
  }

  // U diag(e) Uᵀ into out (row-major d×d): the Hencky strain of a stretch with principal
  // directions U and log-stretches e.
  template <int D, class Diagonal>
  static void symmetric_product(const Mat<D>& U, const Diagonal& e, Real* out) {
    for (int i = 0; i < D; ++i)
      for (int j = i; j < D; ++j) {
        Real sum = 0;
        for (int k = 0; k < D; ++k) sum += U(i, k) * e[k] * U(j, k);
        out[D * i + j] = out[D * j + i] = sum;
      }
  }

  Real wave_speed(Real density, Real /*Jp*/) const { return std::sqrt((lambda + 2 * mu) / density); }

  // ‖dev τ‖ + α tr τ − k for principal Hencky strains e, τ_i = 2μ e_i + λ tr e.
  template <int D>
  Real yield_of_strain(const Eigen::Matrix<Real, D, 1>& e) const {
    const Real tr = e.sum();
    const Real deviatoric_norm = (e.array() - tr / D).matrix().norm();
    return 2 * mu * deviatoric_norm + alpha * (D * lambda + 2 * mu) * tr - yield_shift;
  }

  Real mu;
  Real lambda;
  Real cohesion;
  Real alpha = 0;        // cone slope
  Real yield_shift = 0;  // k, Pa
};

}  // namespace nendo
