#pragma once
// Linear (small-strain) elasticity: ε = ½(F + F^T) − I, ψ = μ ε:ε + (λ/2) tr(ε)²,
// P = 2μ ε + λ tr(ε) I. Not rotation invariant: a rigid rotation stresses it, so P F^T is not
// symmetric and the MPM grid force does not conserve angular momentum exactly. Valid for small
// displacement gradients only (validation.md §4, §5 use it there).
#include <cmath>

#include "core/Svd.hpp"
#include "materials/ElasticHessian.hpp"
#include "materials/ElasticParameters.hpp"
#include "scene/MaterialSchema.hpp"

namespace nendo {

struct LinearElastic {
  static constexpr const char* kName = "linear";
  static constexpr bool kPlastic = false;

  static MaterialModelSchema schema() {
    return {kName, "linear elasticity (small strain)", elastic_solid_keys()};
  }

  explicit LinearElastic(const MaterialSettings& settings) : LinearElastic(lame_parameters(settings)) {}
  explicit LinearElastic(const Lame& lame) : mu(lame.mu), lambda(lame.lambda) {}

  template <int D>
  static Mat<D> strain(const Mat<D>& F) {
    return 0.5 * (F + F.transpose()) - Mat<D>::Identity();
  }

  template <int D>
  Real psi(const Mat<D>& F, Real /*Jp*/) const {
    const Mat<D> e = strain<D>(F);
    const Real tr = e.trace();
    return mu * e.squaredNorm() + 0.5 * lambda * tr * tr;
  }

  template <int D>
  Mat<D> P(const Mat<D>& F, Real /*Jp*/) const {
    const Mat<D> e = strain<D>(F);
    return 2 * mu * e + lambda * e.trace() * Mat<D>::Identity();
  }

  // ∂P/∂F is constant, δP = 2μ sym(δF) + λ tr(δF) I: U = V = I, A = 2μ I + λ 11ᵀ, a = 2μ, b = 0.
  template <int D>
  ElasticHessian<D> hessian(const Mat<D>& /*F*/, Real /*Jp*/) const {
    ElasticHessian<D> h;
    h.U.setIdentity();
    h.V.setIdentity();
    h.A = Mat<D>::Constant(lambda) + 2 * mu * Mat<D>::Identity();
    for (int p = 0; p < ElasticHessian<D>::kPairs; ++p) {
      h.a[p] = 2 * mu;
      h.b[p] = 0;
    }
    return h;
  }

  template <int D>
  Mat<D> kirchhoff(const Mat<D>& F, Real Jp) const {
    return P<D>(F, Jp) * F.transpose();
  }

  template <int D>
  void project(Mat<D>& /*F*/, Real& /*Jp*/) const {}

  Real wave_speed(Real density, Real /*Jp*/) const { return std::sqrt((lambda + 2 * mu) / density); }

  Real mu;
  Real lambda;
};

}  // namespace nendo
