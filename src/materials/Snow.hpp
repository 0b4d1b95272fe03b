#pragma once
// Snow (Stomakhin et al. 2013; spec 002 §3): fixed-corotated energy of the elastic part F_E
// (stored in the particle's F) with Lamé parameters hardened by the plastic volume ratio J_P
// (the particle's Jp):  μ, λ = μ0, λ0 · exp(min(ξ(1 − J_P), 10))  (§3.3; cap 10 is spec §12.1's
// hardening exponent cap). project() is the return mapping of §3.2: the singular values of the
// trial F_E are clamped to [1 − θ_c, 1 + θ_s], and J_P absorbs the removed part, so that
// det F = det F_E · J_P is unchanged. An inverted trial (σ_d < 0) is clamped like any other and
// then gives J_P < 0: snow cannot represent inversion, and the hardening cap keeps the stress
// finite while that particle's state is meaningless.
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "core/Svd.hpp"
#include "materials/ElasticParameters.hpp"
#include "materials/FixedCorotated.hpp"
#include "scene/MaterialSchema.hpp"

namespace nendo {

struct Snow {
  static constexpr const char* kName = "snow";
  static constexpr bool kPlastic = true;
  static constexpr Real kHardeningExponentMax = 10;  // spec 002 §3.3, §12.1

  static MaterialModelSchema schema() {
    MaterialModelSchema model{kName,
                              "fixed-corotated elasticity with Stomakhin et al. snow plasticity (spec 002)",
                              elastic_solid_keys()};
    model.parameters.push_back(KeySchema::real("theta_c",
                                               "critical compression: singular values of F are "
                                               "clamped to at least 1 - theta_c")
                                   .defaults_to("2.5e-2")
                                   .above(0));
    model.parameters.push_back(KeySchema::real("theta_s",
                                               "critical stretch: singular values of F are "
                                               "clamped to at most 1 + theta_s")
                                   .defaults_to("7.5e-3")
                                   .above(0));
    model.parameters.push_back(
        KeySchema::real("hardening",
                        "hardening coefficient xi: the Lame parameters scale by exp(xi (1 - Jp))")
            .defaults_to("10")
            .at_least(0));
    return model;
  }

  explicit Snow(const MaterialSettings& settings)
      : Snow(lame_parameters(settings), material_parameter(settings, "theta_c"),
             material_parameter(settings, "theta_s"), material_parameter(settings, "hardening")) {}
  Snow(const Lame& lame, Real theta_c_, Real theta_s_, Real hardening_)
      : mu0(lame.mu), lambda0(lame.lambda), theta_c(theta_c_), theta_s(theta_s_), hardening(hardening_) {}

  // exp(min(ξ(1 − J_P), 10)), spec §3.3.
  Real hardening_factor(Real Jp) const {
    return std::exp(std::min(hardening * (1 - Jp), kHardeningExponentMax));
  }

  template <int D>
  Real psi(const Mat<D>& F, Real Jp) const {
    const Real h = hardening_factor(Jp);
    return FixedCorotated::energy<D>(F, h * mu0, h * lambda0);
  }
  template <int D>
  Mat<D> P(const Mat<D>& F, Real Jp) const {
    const Real h = hardening_factor(Jp);
    return FixedCorotated::stress<D>(F, h * mu0, h * lambda0);
  }
  template <int D>
  Mat<D> kirchhoff(const Mat<D>& F, Real Jp) const {
    const Real h = hardening_factor(Jp);
    return FixedCorotated::kirchhoff_stress<D>(F, h * mu0, h * lambda0);
  }
  // kirchhoff<D> for count particles with their hardened μ, λ (3D: the batched polar decomposition).
  template <int D>
  void kirchhoff_batch(const Real* F, const Real* Jp, std::size_t count, Real* tau) const {
    FixedCorotated::kirchhoff_batch_with<D>(F, count, tau, [&](std::size_t p) {
      const Real h = hardening_factor(Jp[p]);
      return Lame{h * mu0, h * lambda0};
    });
  }
  // ∂P/∂F at fixed J_P: the fixed-corotated one with the hardened μ, λ.
  template <int D>
  ElasticHessian<D> hessian(const Mat<D>& F, Real Jp) const {
    const Real h = hardening_factor(Jp);
    return FixedCorotated::stress_derivative<D>(F, h * mu0, h * lambda0);
  }

  // Spec §3.2 steps 2-5 on the trial F_E (in F): J_P^{n+1} = J_P^n Π σ̂_i/σ_i. F is left
  // untouched when no singular value is clamped (θ = ∞ then reproduces fixed corotated exactly).
  template <int D>
  void project(Mat<D>& F, Real& Jp) const {
    project_svd<D>(polar_svd<D>(F), F, Jp);
  }
  // project<D> of count particles in place (F row-major, d×d each). A particle whose singular
  // values are certainly inside [1 − θ_c, 1 + θ_s] (clearly_elastic) is left alone, as project
  // leaves it; the others go through polar_svd_batch, kPolarBatch at a time.
  template <int D>
  void project_batch(Real* F, Real* Jp, std::size_t count) const {
    for_each_polar_svd<D>(
        F, count,
        [&](std::size_t p, const PolarSvd<D>& svd) {
          Eigen::Map<Eigen::Matrix<Real, D, D, Eigen::RowMajor>> Fp(F + D * D * p);
          project_svd<D>(svd, Fp, Jp[p]);
        },
        [&](std::size_t p) { return !clearly_elastic<D>(F + D * D * p); });
  }
  // Whether det F > 0 and the eigenvalues σ_i² of C = FᵀF are inside ((1 − θ_c)², (1 + θ_s)²)
  // with a margin of 1e-12 (far above the SVD's round-off), by Gershgorin's discs: then no
  // singular value is clamped.
  template <int D>
  bool clearly_elastic(const Real* F) const {
    Real C[D][D];
    for (int i = 0; i < D; ++i)
      for (int j = 0; j < D; ++j) {
        C[i][j] = 0;
        for (int k = 0; k < D; ++k) C[i][j] += F[D * k + i] * F[D * k + j];
      }
    Real low = C[0][0], high = C[0][0];
    for (int i = 0; i < D; ++i) {
      Real radius = 0;
      for (int j = 0; j < D; ++j) radius += j == i ? 0 : std::abs(C[i][j]);
      low = std::min(low, C[i][i] - radius);
      high = std::max(high, C[i][i] + radius);
    }
    Real det;
    if constexpr (D == 2)
      det = F[0] * F[3] - F[1] * F[2];
    else
      det = F[0] * (F[4] * F[8] - F[5] * F[7]) - F[1] * (F[3] * F[8] - F[5] * F[6]) +
            F[2] * (F[3] * F[7] - F[4] * F[6]);
    const Real lowest = (1 - theta_c) * (1 - theta_c), highest = (1 + theta_s) * (1 + theta_s);
    return det > 0 && low > lowest * (1 + 1e-12) && high < highest * (1 - 1e-12);
  }
  // project<D> given the SVD of F.
  template <int D, class Matrix>
  void project_svd(const PolarSvd<D>& svd, Matrix& F, Real& Jp) const {
    Eigen::Matrix<Real, D, 1> sigma = svd.sigma;
    Real ratio = 1;
    bool clamped = false;
    for (int i = 0; i < D; ++i) {
      const Real s = std::clamp(sigma(i), 1 - theta_c, 1 + theta_s);
      if (s != sigma(i)) {
        clamped = true;
        ratio *= sigma(i) / s;
        sigma(i) = s;
      }
    }
    if (!clamped) return;
    Jp *= ratio;
    F = svd.U * sigma.asDiagonal() * svd.V.transpose();
  }

  Real wave_speed(Real density, Real Jp) const {
    return std::sqrt(hardening_factor(Jp) * (lambda0 + 2 * mu0) / density);
  }

  Real mu0;
  Real lambda0;
  Real theta_c;
  Real theta_s;
  Real hardening;  // ξ
};

}  // namespace nendo
