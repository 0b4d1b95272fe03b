#pragma once
// Fixed-corotated hyperelasticity (spec 002 §2.4), with F = U Σ V^T the polar SVD and R = U V^T:
//   ψ = μ Σ_i (σ_i − 1)² + (λ/2)(J − 1)²,   P = 2μ(F − R) + λ(J − 1) J F^{-T}.
// J F^{-T} is the cofactor, so P is defined for inverted F (σ_d < 0) too. The static members
// (energy, stress, stress_derivative = ∂P/∂F, kirchhoff_stress) take μ and λ so that snow
// (Snow.hpp) evaluates the same energy with hardened parameters.
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "core/Svd.hpp"
#include "materials/Cofactor.hpp"
#include "materials/ElasticHessian.hpp"
#include "materials/ElasticParameters.hpp"
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
  ElasticHessian<D> hessian(const Mat<D>& F, Real /*Jp*/) const {
    return stress_derivative<D>(F, mu, lambda);
  }
  // kirchhoff<D> for count particles (F row-major, d×d each): in 3D the rotations come from the
  // batched polar decomposition, kPolarBatch particles at a time.
  template <int D>
  void kirchhoff_batch(const Real* F, const Real* /*Jp*/, std::size_t count, Real* tau) const {
    kirchhoff_batch_with<D>(F, count, tau, [&](std::size_t) { return Lame{mu, lambda}; });
  }

  // The same with particle p's Lamé parameters lame(p) (snow hardens them by J_P).
  template <int D, class LameOf>
  static void kirchhoff_batch_with(const Real* F, std::size_t count, Real* tau, LameOf&& lame) {
    using RowMat = Eigen::Matrix<Real, D, D, Eigen::RowMajor>;
    if constexpr (D == 3) {
      Real R[9 * kPolarBatch];
      for (std::size_t first = 0; first < count; first += kPolarBatch) {
        const int batch = static_cast<int>(std::min<std::size_t>(kPolarBatch, count - first));
        polar_rotation_batch(F + 9 * first, R, batch);
        for (int l = 0; l < batch; ++l) {
          const Lame m = lame(first + l);
          kirchhoff_from_rotation(F + 9 * (first + l), R + 9 * l, m.mu, m.lambda, tau + 9 * (first + l));
        }
      }
    } else {
      for (std::size_t p = 0; p < count; ++p) {
        const Lame m = lame(p);
        Eigen::Map<RowMat>(tau + D * D * p) =
            kirchhoff_stress<D>(Eigen::Map<const RowMat>(F + D * D * p), m.mu, m.lambda);
      }
    }
  }

  // τ = 2μ(F − R)Fᵀ + λ(J − 1)J I of one row-major 3×3 F given its rotation R, written out: the
  // batch's per-particle cost next to the polar decomposition (Eigen's temporaries cost 3× more).
  static void kirchhoff_from_rotation(const Real* F, const Real* R, Real mu, Real lambda, Real* tau) {
    const Real J = F[0] * (F[4] * F[8] - F[5] * F[7]) - F[1] * (F[3] * F[8] - F[5] * F[6]) +
                   F[2] * (F[3] * F[7] - F[4] * F[6]);
    Real S[9];
    for (int e = 0; e < 9; ++e) S[e] = 2 * mu * (F[e] - R[e]);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        tau[3 * i + j] = S[3 * i] * F[3 * j] + S[3 * i + 1] * F[3 * j + 1] + S[3 * i + 2] * F[3 * j + 2];
    const Real volume = lambda * (J - 1) * J;
    tau[0] += volume, tau[4] += volume, tau[8] += volume;
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

  // ∂P/∂F = ∂stress/∂F in the SVD's diagonal space (spec 002 §2.4), with g_k = J/σ_k and
  // J/(σ_kσ_l) = σ_m (3D) or 1 (2D), all products of singular values (valid for inverted F):
  //   ψ̂_{,kk} = 2μ + λ g_k²,  ψ̂_{,kl} = λ(2J − 1) J/(σ_kσ_l),  a_kl = 2μ − λ(J − 1) J/(σ_kσ_l),
  //   b_kl = 2μ + λ(J − 1) J/(σ_kσ_l) − 4μ/(σ_k + σ_l), |σ_k + σ_l| clamped to ≥ 1e-6 (sign kept).
  template <int D>
  static ElasticHessian<D> stress_derivative(const Mat<D>& F, Real mu, Real lambda) {
    using H = ElasticHessian<D>;
    const PolarSvd<D> svd = polar_svd<D>(F);
    const Real J = svd.sigma.prod();
    const Eigen::Matrix<Real, D, 1> g = cofactor_diagonal<D>(svd.sigma);
    H h;
    h.U = svd.U;
    h.V = svd.V;
    h.A.diagonal() = (2 * mu) + lambda * g.array().square();
    for (int p = 0; p < H::kPairs; ++p) {
      const int k = H::kFirst[p], l = H::kSecond[p];
      const Real m = pair_cofactor<D>(svd.sigma, p);
      h.A(k, l) = h.A(l, k) = lambda * (2 * J - 1) * m;
      const Real volume = lambda * (J - 1) * m;
      h.a[p] = 2 * mu - volume;
      h.b[p] = 2 * mu + volume - 4 * mu / clamp_pair_sum(svd.sigma(k) + svd.sigma(l));
    }
    return h;
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
