#pragma once
// Fixed-corotated hyperelasticity (spec 002 §2.4), with F = U Σ V^T the polar SVD and R = U V^T:
//   ψ = μ Σ_i (σ_i − 1)² + (λ/2)(J − 1)²,   P = 2μ(F − R) + λ(J − 1) J F^{-T}.
// J F^{-T} is the cofactor, so P is defined for inverted F (σ_d < 0) too. The static members
// take μ and λ so that snow (Snow.hpp) evaluates the same energy with hardened parameters.
#include <cmath>

#include "core/Svd.hpp"
#include "methods/mpm/materials/Cofactor.hpp"
#include "methods/mpm/materials/ElasticParameters.hpp"
#include "scene/MaterialSchema.hpp"

namespace nendo {

struct FixedCorotated {
  static constexpr const char* kName = "fixed_corotated";
  static constexpr bool kPlastic = false;

  static MaterialModelSchema schema() {
    return {kName, "fixed-corotated hyperelasticity (spec 002)", elastic_solid_keys()};
  }

  explicit FixedCorotated(const MaterialSettings& settings) : FixedCorotated(lame_parameters(settings)) {}
  explicit FixedCorotated(const Lame& lame) : mu(lame.mu), lambda(lame.lambda) {}

  template <int D>
  Real psi(const Mat<D>& F, Real /*Jp*/) const {
    return energy<D>(F, mu, lambda);
  }
  template <int D>
  Mat<D> P(const Mat<D>& F, Real /*Jp*/) const {
    return stress<D>(F, mu, lambda);
  }
  template <int D>
  Mat<D> kirchhoff(const Mat<D>& F, Real /*Jp*/) const {
    return kirchhoff_stress<D>(F, mu, lambda);
  }
  template <int D>
  void project(Mat<D>& /*F*/, Real& /*Jp*/) const {}

  Real wave_speed(Real density, Real /*Jp*/) const { return std::sqrt((lambda + 2 * mu) / density); }

  template <int D>
  static Real energy(const Mat<D>& F, Real mu, Real lambda) {
    const PolarSvd<D> svd = polar_svd<D>(F);
    const Real J = F.determinant();
    return mu * (svd.sigma.array() - 1).square().sum() + 0.5 * lambda * (J - 1) * (J - 1);
  }

  template <int D>
  static Mat<D> stress(const Mat<D>& F, Real mu, Real lambda) {
    const Real J = F.determinant();
    return 2 * mu * (F - polar_rotation<D>(F)) + lambda * (J - 1) * cofactor<D>(F);
  }

  // P F^T = 2μ(F − R)F^T + λ(J − 1)J I = U diag(2μ(σ_i − 1)σ_i) U^T + λ(J − 1)J I: symmetric by
  // construction, no V and no cofactor needed.
  template <int D>
  static Mat<D> kirchhoff_stress(const Mat<D>& F, Real mu, Real lambda) {
    const PolarSvd<D> svd = polar_svd<D>(F);
    const Real J = F.determinant();
    const Eigen::Matrix<Real, D, 1> diagonal = 2 * mu * (svd.sigma.array() - 1) * svd.sigma.array();
    return svd.U * diagonal.asDiagonal() * svd.U.transpose() + lambda * (J - 1) * J * Mat<D>::Identity();
  }

  Real mu;
  Real lambda;
};

}  // namespace nendo
