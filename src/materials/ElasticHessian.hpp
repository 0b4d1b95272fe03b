#pragma once
// Second derivative ∂P/∂F = ∂²ψ/∂F² of an isotropic elastic energy, in the diagonal space of the
// polar SVD F = U Σ Vᵀ (spec 002 §2.5), and its definiteness projection (§2.6). With M = Uᵀ δF V,
//   δP = U [ (∂P/∂F)(Σ) : M ] Vᵀ,
// where (∂P/∂F)(Σ) is block diagonal: the d×d matrix A_km = ψ̂_{,km} maps the diagonal of M to
// the diagonal of δP̂, and for each pair k < l the 2×2 block
//   B_kl = ½ a_kl [[1, 1], [1, 1]] + ½ b_kl [[1, −1], [−1, 1]],
//   a_kl = (ψ̂_{,k} − ψ̂_{,l}) / (σ_k − σ_l),   b_kl = (ψ̂_{,k} + ψ̂_{,l}) / (σ_k + σ_l),
// maps (M_kl, M_lk) to (δP̂_kl, δP̂_lk). B_kl has the eigenvalues a_kl (on M_kl = M_lk) and b_kl (on
// M_kl = −M_lk), so the whole tensor is symmetric, and positive semi-definite exactly when A is and
// every a_kl, b_kl ≥ 0. Each material builds this in its hessian<D>(F, Jp) from closed forms of
// a_kl, b_kl (no 0/0 at σ_k = σ_l); elastic_hessian_from_derivatives() is the generic fallback.
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/Svd.hpp"

namespace nendo {

template <int D>
struct ElasticHessian {
  static_assert(D == 2 || D == 3, "ElasticHessian: D = 2 or 3");
  static constexpr int kPairs = D == 3 ? 3 : 1;  // pairs (k, l): (0,1) in 2D; (0,1), (0,2), (1,2) in 3D
  static constexpr int kFirst[3] = {0, 0, 1};    // k of pair p
  static constexpr int kSecond[3] = {1, 2, 2};   // l of pair p

  Mat<D> U, V;                // from the polar SVD (proper rotations)
  Mat<D> A;                   // A_km = ψ̂_{,km}, symmetric
  Real a[kPairs], b[kPairs];  // eigenvalues of the blocks B_kl, pairs in the order above

  // δP = U [Ã : M] Vᵀ with M = Uᵀ δF V. Fixed size, no allocation; lazyProduct: coefficient-wise
  // products into registers, about half the time of the default 3×3 product path.
  Mat<D> apply(const Mat<D>& dF) const {
    const Mat<D> T = dF.lazyProduct(V);
    const Mat<D> M = U.transpose().lazyProduct(T);
    Mat<D> R;
    R.diagonal() = A.lazyProduct(M.diagonal());
    for (int p = 0; p < kPairs; ++p) {
      const int k = kFirst[p], l = kSecond[p];
      const Real sym = 0.5 * a[p] * (M(k, l) + M(l, k));
      const Real skew = 0.5 * b[p] * (M(k, l) - M(l, k));
      R(k, l) = sym + skew;
      R(l, k) = sym - skew;
    }
    const Mat<D> W = U.lazyProduct(R);
    return W.lazyProduct(V.transpose());
  }

  // ∂P_αβ/∂F_τσ as a D²×D² matrix, column (τσ) = δP[E_τσ] (row-major indices).
  Eigen::Matrix<Real, D * D, D * D> matrix() const {
    Eigen::Matrix<Real, D * D, D * D> C;
    for (int t = 0; t < D * D; ++t) {
      Mat<D> E = Mat<D>::Zero();
      E(t / D, t % D) = 1;
      const Eigen::Matrix<Real, D, D, Eigen::RowMajor> dP = apply(E);
      C.col(t) = Eigen::Map<const Eigen::Matrix<Real, D * D, 1>>(dP.data());
    }
    return C;
  }

  // Spec §2.6: A ← Q max(Λ, 0) Qᵀ (skipped when A is already positive definite, or positive
  // semi-definite by its eigenvalues), a, b ← max(·, 0). The result is positive semi-definite.
  void project_spd() {
    for (int p = 0; p < kPairs; ++p) {
      a[p] = std::max(a[p], Real(0));
      b[p] = std::max(b[p], Real(0));
    }
    if (positive_definite(A)) return;
    Eigen::SelfAdjointEigenSolver<Mat<D>> eigen;
    eigen.computeDirect(A);
    const Eigen::Matrix<Real, D, 1>& lambda = eigen.eigenvalues();
    if (!(lambda.minCoeff() < 0)) return;  // PSD (singular) as it is; NaN stays NaN
    const Mat<D>& Q = eigen.eigenvectors();
    A = Q * lambda.cwiseMax(Real(0)).asDiagonal() * Q.transpose();
  }

  // All entries NaN: the Hessian where the model's P is NaN (e.g. J ≤ 0 for neo-Hookean).
  static ElasticHessian nan() {
    ElasticHessian h;
    const Real q = std::numeric_limits<Real>::quiet_NaN();
    h.U.setConstant(q);
    h.V.setConstant(q);
    h.A.setConstant(q);
    std::fill(h.a, h.a + kPairs, q);
    std::fill(h.b, h.b + kPairs, q);
    return h;
  }

  // Sylvester's criterion on the leading principal minors: true for a positive definite A (and
  // false for a singular or NaN one).
  static bool positive_definite(const Mat<D>& S) {
    const Real m1 = S(0, 0), m2 = S(0, 0) * S(1, 1) - S(0, 1) * S(0, 1);
    if constexpr (D == 2) {
      return m1 > 0 && m2 > 0;
    } else {
      return m1 > 0 && m2 > 0 && S.determinant() > 0;
    }
  }
};

namespace elastic_hessian_detail {
constexpr Real kMinSeparation = 1e-6;  // spec 002 §2.5: |σ_k ± σ_l| below this is "equal"/"opposite"
}  // namespace elastic_hessian_detail

// x with its magnitude raised to at least 1e-6, sign kept (0 counts as positive): the clamp of an
// explicit σ_k + σ_l denominator (spec 002 §2.5).
inline Real clamp_pair_sum(Real x) {
  constexpr Real m = elastic_hessian_detail::kMinSeparation;
  return x < 0 ? std::min(x, -m) : std::max(x, m);
}

// J/(σ_k σ_l) of pair p without dividing: σ_m (the third singular value) in 3D, 1 in 2D.
template <int D>
Real pair_cofactor(const Eigen::Matrix<Real, D, 1>& sigma, int p) {
  if constexpr (D == 3) {
    return sigma(2 - p);  // pairs (0,1), (0,2), (1,2) → m = 2, 1, 0
  } else {
    (void)sigma;
    (void)p;
    return 1;
  }
}

// J/σ_k for every k, as products of the other singular values.
template <int D>
Eigen::Matrix<Real, D, 1> cofactor_diagonal(const Eigen::Matrix<Real, D, 1>& sigma) {
  Eigen::Matrix<Real, D, 1> g;
  if constexpr (D == 3) {
    g << sigma(1) * sigma(2), sigma(0) * sigma(2), sigma(0) * sigma(1);
  } else {
    g << sigma(1), sigma(0);
  }
  return g;
}

// The Hessian of a model given only by ψ̂_{,k} (gradient) and ψ̂_{,kl} (second) at the SVD's Σ:
// a_kl = (ψ̂_{,k} − ψ̂_{,l})/(σ_k − σ_l), or for |σ_k − σ_l| < 1e-6 its limit ½(ψ̂_{,kk} + ψ̂_{,ll})
// − ψ̂_{,kl} (the spec's ψ̂_{,kk} − ψ̂_{,kl} at σ_k = σ_l, symmetrised: the average of the two
// one-sided limits is second-order accurate in σ_k − σ_l); b_kl = (ψ̂_{,k} + ψ̂_{,l})/(σ_k + σ_l)
// with |σ_k + σ_l| clamped to ≥ 1e-6, sign kept. Prefer a model's closed forms where it has them.
template <int D>
ElasticHessian<D> elastic_hessian_from_derivatives(const PolarSvd<D>& svd,
                                                   const Eigen::Matrix<Real, D, 1>& gradient,
                                                   const Mat<D>& second) {
  using H = ElasticHessian<D>;
  H h;
  h.U = svd.U;
  h.V = svd.V;
  h.A = 0.5 * (second + second.transpose());
  for (int p = 0; p < H::kPairs; ++p) {
    const int k = H::kFirst[p], l = H::kSecond[p];
    const Real difference = svd.sigma(k) - svd.sigma(l);
    h.a[p] = std::abs(difference) < elastic_hessian_detail::kMinSeparation
                 ? 0.5 * (h.A(k, k) + h.A(l, l)) - h.A(k, l)
                 : (gradient(k) - gradient(l)) / difference;
    h.b[p] = (gradient(k) + gradient(l)) / clamp_pair_sum(svd.sigma(k) + svd.sigma(l));
  }
  return h;
}

}  // namespace nendo
