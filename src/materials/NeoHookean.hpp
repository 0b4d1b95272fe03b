#pragma once
// Neo-Hookean hyperelasticity (spec 002 §2.3):
//   ψ = (μ/2)(tr(F^T F) − d) − μ log J + (λ/2)(log J)²,   P = μ(F − F^{-T}) + λ log(J) F^{-T}.
// Undefined for J ≤ 0 (spec §13.2 item 12): there ψ = +∞ (an implicit line search rejects the
// trial) and P, kirchhoff are NaN, so the method's finite-stress check stops the run naming the
// particle. No clamp of J is applied here.
#include <cmath>
#include <limits>

#include "core/Svd.hpp"
#include "materials/Cofactor.hpp"
#include "materials/ElasticHessian.hpp"
#include "materials/ElasticParameters.hpp"
#include "scene/MaterialSchema.hpp"

namespace nendo {

struct NeoHookean {
  static constexpr const char* kName = "neo_hookean";
  static constexpr bool kPlastic = false;

  static MaterialModelSchema schema() { return {kName, "neo-Hookean hyperelasticity", elastic_solid_keys()}; }

  explicit NeoHookean(const MaterialSettings& settings) : NeoHookean(lame_parameters(settings)) {}
  explicit NeoHookean(const Lame& lame) : mu(lame.mu), lambda(lame.lambda) {}

  template <int D>
  Real psi(const Mat<D>& F, Real /*Jp*/) const {
    const Real J = F.determinant();
    if (!(J > 0)) return std::numeric_limits<Real>::infinity();
    const Real log_J = std::log(J);
    return 0.5 * mu * (F.squaredNorm() - D) - mu * log_J + 0.5 * lambda * log_J * log_J;
  }

  template <int D>
  Mat<D> P(const Mat<D>& F, Real /*Jp*/) const {
    const Real J = F.determinant();
    if (!(J > 0)) return Mat<D>::Constant(std::numeric_limits<Real>::quiet_NaN());
    const Mat<D> F_inv_T = cofactor<D>(F) / J;
    return mu * (F - F_inv_T) + lambda * std::log(J) * F_inv_T;
  }

  // ∂P/∂F in the SVD's diagonal space (spec 002 §2.3), with c = μ − λ log J:
  //   ψ̂_{,kk} = μ + (c + λ)/σ_k²,  ψ̂_{,kl} = λ/(σ_kσ_l),  a_kl = μ + c/(σ_kσ_l),  b_kl = μ − c/(σ_kσ_l).
  // J ≤ 0: NaN, as P.
  template <int D>
  ElasticHessian<D> hessian(const Mat<D>& F, Real /*Jp*/) const {
    using H = ElasticHessian<D>;
    const PolarSvd<D> svd = polar_svd<D>(F);
    const Real J = svd.sigma.prod();
    if (!(J > 0)) return H::nan();
    const Real c = mu - lambda * std::log(J);
    const Eigen::Matrix<Real, D, 1> inv = svd.sigma.cwiseInverse();
    H h;
    h.U = svd.U;
    h.V = svd.V;
    h.A = lambda * inv * inv.transpose();
    h.A.diagonal().array() += mu + c * inv.array().square();
    for (int p = 0; p < H::kPairs; ++p) {
      const Real q = c * inv(H::kFirst[p]) * inv(H::kSecond[p]);
      h.a[p] = mu + q;
      h.b[p] = mu - q;
    }
    return h;
  }

  // P F^T = μ(F F^T − I) + λ log(J) I: no inverse needed.
  template <int D>
  Mat<D> kirchhoff(const Mat<D>& F, Real /*Jp*/) const {
    const Real J = F.determinant();
    if (!(J > 0)) return Mat<D>::Constant(std::numeric_limits<Real>::quiet_NaN());
    return mu * (F * F.transpose() - Mat<D>::Identity()) + lambda * std::log(J) * Mat<D>::Identity();
  }

  template <int D>
  void project(Mat<D>& /*F*/, Real& /*Jp*/) const {}

  Real wave_speed(Real density, Real /*Jp*/) const { return std::sqrt((lambda + 2 * mu) / density); }

  Real mu;
  Real lambda;
};

}  // namespace nendo
