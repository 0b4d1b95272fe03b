#pragma once
// Fixed-corotated hyperelasticity (spec 002 §2.4), with F = U Σ V^T the polar SVD and R = U V^T:
//   ψ = μ Σ_i (σ_i − 1)² + (λ/2)(J − 1)²,   P = 2μ(F − R) + λ(J − 1) J F^{-T}.
// J F^{-T} is the cofactor, so P is defined for inverted F (σ_d < 0) too. The static members
// take μ and λ so that snow (Snow.hpp) evaluates the same energy with hardened parameters.
#include <algorithm>
#include <cmath>
#include <cstddef>

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
  // kirchhoff<D> for count particles (F row-major, d×d each): in 3D the rotations come from the
  // batched polar decomposition, kPolarBatch particles at a time.
  template <int D>
  void kirchhoff_batch(const Real* F, const Real* /*Jp*/, std::size_t count, Real* tau) const {
    using RowMat = Eigen::Matrix<Real, D, D, Eigen::RowMajor>;
    if constexpr (D == 3) {
      Real R[9 * kPolarBatch];
      for (std::size_t first = 0; first < count; first += kPolarBatch) {
        const int batch = static_cast<int>(std::min<std::size_t>(kPolarBatch, count - first));
        polar_rotation_batch(F + 9 * first, R, batch);
        for (int l = 0; l < batch; ++l) {
          const Mat<3> Fp = Eigen::Map<const RowMat>(F + 9 * (first + l));
          const Mat<3> Rp = Eigen::Map<const RowMat>(R + 9 * l);
          const Real J = Fp.determinant();
          Eigen::Map<RowMat>(tau + 9 * (first + l)) =
              (2 * mu) * (Fp - Rp) * Fp.transpose() + (lambda * (J - 1) * J) * Mat<3>::Identity();
        }
      }
    } else {
      for (std::size_t p = 0; p < count; ++p)
        Eigen::Map<RowMat>(tau + D * D * p) = kirchhoff<D>(Eigen::Map<const RowMat>(F + D * D * p), 0);
    }
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

  // τ = P Fᵀ = 2μ(F − R)Fᵀ + λ(J − 1)J I: only the rotation R is needed, which polar_rotation
  // finds without an SVD for det F > 0 (core/Svd.hpp).
  template <int D>
  static Mat<D> kirchhoff_stress(const Mat<D>& F, Real mu, Real lambda) {
    const Real J = F.determinant();
    return (2 * mu) * (F - polar_rotation<D>(F)) * F.transpose() +
           (lambda * (J - 1) * J) * Mat<D>::Identity();
  }

  Real mu;
  Real lambda;
};

}  // namespace nendo
