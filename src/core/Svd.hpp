#pragma once
// Polar singular value decomposition of 2×2 and 3×3 matrices (spec 002 §0):
//   F = U Σ V^T,  U, V proper rotations (det = +1),  Σ = diag(σ_1..σ_d),
//   σ_1 ≥ … ≥ σ_{d-1} ≥ |σ_d|, and σ_d < 0 exactly when det F < 0.
// 2D is closed form. 3D follows McAdams et al. 2011 ("Computing the singular value decomposition
// of 3×3 matrices with minimal branching and elementary floating point operations"): cyclic Jacobi
// conjugation of S = F^T F with approximate Givens quaternions gives V, then a Givens QR of F V
// gives U and Σ. Written for double precision: the Givens pairs are scaled by powers of two
// instead of normalised (no square root or division per rotation), the sweeps stop when S is
// diagonal to round-off, and one one-sided Jacobi rotation of the two smallest columns of F V
// resolves what the eigenvectors of S cannot (two tiny singular values, whose gap in S is below
// its round-off). Accuracy and speed are measured in tests/core/SvdTest.cpp.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "core/Types.hpp"

namespace nendo {

// A d×d tensor (deformation gradient, stress).
template <int D>
using Mat = Eigen::Matrix<Real, D, D>;

template <int D>
struct PolarSvd {
  Mat<D> U;
  Eigen::Matrix<Real, D, 1> sigma;
  Mat<D> V;
};

// D = 2 or 3; polar_svd(F) deduces D from a Mat<D>, polar_svd<D>(expression) otherwise.
template <int D>
PolarSvd<D> polar_svd(const Mat<D>& F);

namespace svd_detail {

// Cyclic Jacobi sweeps on S = F^T F: at most kMaxSweeps, fewer when the off-diagonal part has
// fallen below round-off (tests/core/SvdTest.cpp measures the worst case).
constexpr int kMaxSweeps = 8;

// Symmetric 3×3 matrix S = F^T F, kept as a full array for indexed access.
struct Symmetric3 {
  Real s[3][3];
};

// Quaternion (w, x, y, z) of the accumulated V; normalised once at the end.
struct Quaternion {
  Real w = 1, x = 0, y = 0, z = 0;
};

// 2^-e for the binary exponent e of |x| (x normal): scales x into [1, 2) without a division.
inline Real inverse_power_of_two(Real x) {
  std::uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const std::uint64_t biased = (bits >> 52) & 0x7ff;
  const std::uint64_t inverse = (2046 - std::min<std::uint64_t>(biased, 2045)) << 52;
  Real out;
  std::memcpy(&out, &inverse, sizeof out);
  return out;
}

// McAdams' approximate Givens half angle for the (p, q) entry of S: (ch, sh) ∝ (2(s_pp − s_qq),
// s_pq), or the π/8 half angle (a π/4 rotation) when that would rotate by more than π/4. The pair
// is scaled by a power of two instead of normalised: the rotation it defines is then a rotation
// times n² = ch² + sh² ∈ [1, 5), which scales S uniformly (harmless: only ratios of S decide the
// angles) and V's quaternion by n (normalised at the end). No square root, no division.
// A zero off-diagonal entry gives exactly no rotation.
template <int p, int q>
inline void approximate_givens(const Symmetric3& S, Real& ch, Real& sh) {
  constexpr Real kGamma = 5.828427124746190097603377448419396;    // 3 + 2√2 = cot²(π/8)
  constexpr Real kCosPi8 = 0.9238795325112867561281831893967882;  // cos(π/8)
  constexpr Real kSinPi8 = 0.3826834323650897717284599840303989;  // sin(π/8)
  const Real a = 2 * (S.s[p][p] - S.s[q][q]), b = S.s[p][q];
  const Real scale = inverse_power_of_two(a);
  const bool small_angle = kGamma * b * b < a * a;
  // Selects rather than branches: the outcome is data dependent and mispredicts often.
  ch = b == 0 ? 1 : (small_angle ? a * scale : kCosPi8);
  sh = b == 0 ? 0 : (small_angle ? b * scale : (a * b < 0 ? -kSinPi8 : kSinPi8));
}

// S ← Q^T S Q and v ← v ⊗ (ch, sh e_k) for the rotation Q of angle θ in the (p, q) plane,
// (ch, sh) ∝ (cos θ/2, sin θ/2); the pairs (p, q, k) run cyclically so that Q is a positive
// rotation about axis k. With (ch, sh) of squared length n², Q here is n² times a rotation.
template <int p, int q, int k>
inline void conjugate(Symmetric3& S, Quaternion& v, Real ch, Real sh) {
  // Q = [c −s; s c] in the (p, q) plane and n² on the axis: c² + s² = n⁴.
  const Real c = ch * ch - sh * sh, s = 2 * ch * sh, n2 = ch * ch + sh * sh;
  const Real spp = S.s[p][p], sqq = S.s[q][q], spq = S.s[p][q], spk = S.s[p][k], sqk = S.s[q][k];
  S.s[p][p] = c * c * spp + 2 * c * s * spq + s * s * sqq;
  S.s[q][q] = s * s * spp - 2 * c * s * spq + c * c * sqq;
  S.s[p][q] = S.s[q][p] = (c * c - s * s) * spq - c * s * (spp - sqq);
  S.s[p][k] = S.s[k][p] = n2 * (c * spk + s * sqk);
  S.s[q][k] = S.s[k][q] = n2 * (-s * spk + c * sqk);
  S.s[k][k] *= n2 * n2;
  Real r[3] = {v.x, v.y, v.z};
  constexpr int k1 = (k + 1) % 3, k2 = (k + 2) % 3;
  const Real w = v.w, a = r[k], b = r[k1], d = r[k2];
  v.w = ch * w - sh * a;
  r[k] = ch * a + sh * w;
  r[k1] = ch * b + sh * d;
  r[k2] = ch * d - sh * b;
  v.x = r[0];
  v.y = r[1];
  v.z = r[2];
}

// Givens rotation of rows p, q of R (columns of U) that zeroes R(q, col) and leaves
// R(p, col) = ‖(R(p, col), R(q, col))‖ ≥ 0.
inline void qr_givens(Mat<3>& R, Mat<3>& U, int p, int q, int col) {
  const Real a = R(p, col), b = R(q, col);
  const Real rho = std::sqrt(a * a + b * b);
  Real c = 1, s = 0;
  if (rho > 0) {
    const Real inv = 1 / rho;
    c = a * inv;
    s = b * inv;
  }
  for (int j = 0; j < 3; ++j) {
    const Real rp = R(p, j), rq = R(q, j);
    R(p, j) = c * rp + s * rq;
    R(q, j) = -s * rp + c * rq;
    const Real up = U(j, p), uq = U(j, q);
    U(j, p) = c * up + s * uq;
    U(j, q) = -s * up + c * uq;
  }
  R(q, col) = 0;
  R(p, col) = rho;
}

// One-sided Jacobi rotation of columns p, q of B (and V) that makes them orthogonal; for
// ‖b_p‖ ≥ ‖b_q‖ it keeps that order (the larger column only grows).
inline void orthogonalize_columns(Mat<3>& B, Mat<3>& V, int p, int q) {
  const Real alpha = B.col(p).squaredNorm(), beta = B.col(q).squaredNorm();
  const Real gamma = B.col(p).dot(B.col(q));
  if (gamma == 0) return;
  const Real zeta = (beta - alpha) / (2 * gamma);
  const Real t = (gamma > 0 ? -1 : 1) / (std::abs(zeta) + std::sqrt(1 + zeta * zeta));
  const Real c = 1 / std::sqrt(1 + t * t), s = c * t;
  for (int j = 0; j < 3; ++j) {
    const Real bp = B(j, p), bq = B(j, q);
    B(j, p) = c * bp - s * bq;
    B(j, q) = s * bp + c * bq;
    const Real vp = V(j, p), vq = V(j, q);
    V(j, p) = c * vp - s * vq;
    V(j, q) = s * vp + c * vq;
  }
}

// Swap columns i and j of B and V, negating one so that det V stays +1.
inline void swap_columns(Mat<3>& B, Mat<3>& V, int i, int j) {
  B.col(i).swap(B.col(j));
  B.col(j) = -B.col(j);
  V.col(i).swap(V.col(j));
  V.col(j) = -V.col(j);
}

}  // namespace svd_detail

// 2D closed form: with e = (a+d)/2, f = (a−d)/2, g = (c+b)/2, h = (c−b)/2 for F = [[a, b], [c, d]],
// F = rot(φ) diag(q + r, q − r) rot(θ)^T where q = ‖(e, h)‖, r = ‖(f, g)‖,
// φ = (atan2(h, e) + atan2(g, f))/2 and θ = (atan2(g, f) − atan2(h, e))/2.
// det F = q² − r², so σ_2 = q − r is negative exactly when det F < 0, and σ_1 = q + r ≥ |σ_2|.
template <>
inline PolarSvd<2> polar_svd<2>(const Mat<2>& F) {
  const Real e = 0.5 * (F(0, 0) + F(1, 1)), f = 0.5 * (F(0, 0) - F(1, 1));
  const Real g = 0.5 * (F(1, 0) + F(0, 1)), h = 0.5 * (F(1, 0) - F(0, 1));
  const Real q = std::sqrt(e * e + h * h), r = std::sqrt(f * f + g * g);
  const Real a1 = std::atan2(g, f), a2 = std::atan2(h, e);
  const Real phi = 0.5 * (a2 + a1), theta = 0.5 * (a1 - a2);
  const Real cu = std::cos(phi), su = std::sin(phi), cv = std::cos(theta), sv = std::sin(theta);
  PolarSvd<2> out;
  out.U << cu, -su, su, cu;
  out.V << cv, -sv, sv, cv;
  out.sigma << q + r, q - r;
  return out;
}

template <>
inline PolarSvd<3> polar_svd<3>(const Mat<3>& F) {
  using namespace svd_detail;
  // 1. V: eigenvectors of S = F^T F by cyclic Jacobi with approximate Givens quaternions.
  Symmetric3 S;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) S.s[i][j] = F.col(i).dot(F.col(j));
  Quaternion v;
  Real ch, sh;
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    approximate_givens<0, 1>(S, ch, sh);
    conjugate<0, 1, 2>(S, v, ch, sh);
    approximate_givens<1, 2>(S, ch, sh);
    conjugate<1, 2, 0>(S, v, ch, sh);
    approximate_givens<2, 0>(S, ch, sh);
    conjugate<2, 0, 1>(S, v, ch, sh);
    const Real off = S.s[0][1] * S.s[0][1] + S.s[1][2] * S.s[1][2] + S.s[2][0] * S.s[2][0];
    const Real trace = S.s[0][0] + S.s[1][1] + S.s[2][2];
    if (off <= 1e-30 * trace * trace) break;  // off-diagonal below 1e-15 of the scale of S
  }
  const Real inv = 1 / std::sqrt(v.w * v.w + v.x * v.x + v.y * v.y + v.z * v.z);
  const Real w = v.w * inv, x = v.x * inv, y = v.y * inv, z = v.z * inv;
  Mat<3> V;
  V << 1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),  //
      2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),   //
      2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y);

  // 2. B = F V with its columns sorted by norm, descending (strict comparisons: ties keep their
  //    order, so F = I gives V = I).
  Mat<3> B = F * V;
  Real n0 = B.col(0).squaredNorm(), n1 = B.col(1).squaredNorm(), n2 = B.col(2).squaredNorm();
  if (n0 < n1) {
    swap_columns(B, V, 0, 1);
    std::swap(n0, n1);
  }
  if (n0 < n2) {
    swap_columns(B, V, 0, 2);
    std::swap(n0, n2);
  }
  if (n1 < n2) swap_columns(B, V, 1, 2);

  // 3. The eigenvectors of S resolve the columns to about ε‖F‖²/σ_2: not enough when σ_2, σ_3 are
  //    both tiny. One one-sided Jacobi rotation of the last two columns, computed from B itself,
  //    makes them orthogonal to round-off of F.
  orthogonalize_columns(B, V, 1, 2);

  // 4. B = U R by Givens rotations. R is diagonal up to round-off, R(0,0), R(1,1) ≥ 0, and
  //    R(2,2) carries the sign of det F = det R.
  PolarSvd<3> out;
  out.U.setIdentity();
  Mat<3> R = B;
  qr_givens(R, out.U, 0, 1, 0);
  qr_givens(R, out.U, 0, 2, 0);
  qr_givens(R, out.U, 1, 2, 1);
  out.sigma << R(0, 0), R(1, 1), R(2, 2);
  out.V = V;
  return out;
}

// R = U V^T, the rotation of the polar decomposition F = R S (spec 002 §0).
template <int D>
Mat<D> polar_rotation(const Mat<D>& F) {
  const PolarSvd<D> svd = polar_svd<D>(F);
  return svd.U * svd.V.transpose();
}

// In 2D, R = U Vᵀ is the rotation by θ that maximises tr(Rᵀ F) (with σ_2 < 0 for inverted F,
// as polar_svd gives it): cos θ ∝ F₀₀ + F₁₁, sin θ ∝ F₁₀ − F₀₁, in closed form; I when both are 0.
template <>
inline Mat<2> polar_rotation<2>(const Mat<2>& F) {
  const Real c = F(0, 0) + F(1, 1), s = F(1, 0) - F(0, 1), norm = std::hypot(c, s);
  Mat<2> R;
  if (norm == 0) return Mat<2>::Identity();
  R << c / norm, -s / norm, s / norm, c / norm;
  return R;
}

// In 3D, for det F > 0 (the usual case), R is the limit of Higham's scaled Newton iteration
// X ← ½(γX + γ⁻¹X⁻ᵀ), γ = (‖X⁻¹‖/‖X‖)^½ (Higham 1986), which converges quadratically: about
// four iterations and no SVD. It stops one iteration after the update fell below 1e-6 (the error
// is then below round-off). Inverted or nearly singular F, where the polar factor is not the
// spec's rotation (det R = +1 with σ_d < 0), and the rare non-convergence go through the SVD.
template <>
inline Mat<3> polar_rotation<3>(const Mat<3>& F) {
  constexpr int kMaxIterations = 12;
  Mat<3> X = F;
  bool settled = false;
  for (int iteration = 0; iteration < kMaxIterations; ++iteration) {
    Mat<3> cofactor;  // det(X) X^{-T}
    cofactor << X(1, 1) * X(2, 2) - X(1, 2) * X(2, 1), X(1, 2) * X(2, 0) - X(1, 0) * X(2, 2),
        X(1, 0) * X(2, 1) - X(1, 1) * X(2, 0), X(0, 2) * X(2, 1) - X(0, 1) * X(2, 2),
        X(0, 0) * X(2, 2) - X(0, 2) * X(2, 0), X(0, 1) * X(2, 0) - X(0, 0) * X(2, 1),
        X(0, 1) * X(1, 2) - X(0, 2) * X(1, 1), X(0, 2) * X(1, 0) - X(0, 0) * X(1, 2),
        X(0, 0) * X(1, 1) - X(0, 1) * X(1, 0);
    const Real det = X.row(0).dot(cofactor.row(0));
    const Real norm2 = X.squaredNorm();
    if (!(det > 1e-6 * norm2 * std::sqrt(norm2))) break;  // inverted, singular or NaN: use the SVD
    // The scaling matters only while X is far from orthogonal: after the first iteration γ = 1.
    const Real gamma =
        iteration == 0 ? std::sqrt(std::sqrt(cofactor.squaredNorm() / (det * det * norm2))) : 1.0;
    const Mat<3> next = (0.5 * gamma) * X + (0.5 / (gamma * det)) * cofactor;
    const Real change2 = (next - X).squaredNorm();
    X = next;
    if (settled) return X;
    settled = change2 < 1e-12;
  }
  const PolarSvd<3> svd = polar_svd<3>(F);
  return svd.U * svd.V.transpose();
}

// polar_rotation<3> for a batch of up to kPolarBatch matrices at once (row-major, 9 numbers each,
// contiguous in F and R): the Newton iteration above runs on all of them in lock step, written
// lane by lane so that the compiler vectorises it across matrices; each matrix stops (is frozen)
// after its own convergence, so its result does not depend on the other matrices in the batch.
// Matrices the iteration does not take (det F ≤ 0, no convergence) go through the SVD.
constexpr int kPolarBatch = 16;

namespace svd_detail {

template <int D>
using Lanes = Real[D * D][kPolarBatch];  // entry e of lane l's matrix at [e][l]

// Up to kPolarBatch row-major d×d matrices into lanes; the lanes beyond count hold the identity.
template <int D>
inline void load_lanes(const Real* F, int count, Lanes<D>& x) {
  for (int l = 0; l < kPolarBatch; ++l)
    for (int e = 0; e < D * D; ++e) x[e][l] = l < count ? F[D * D * l + e] : (e % (D + 1) == 0 ? 1.0 : 0.0);
}

// polar_rotation<3>'s Newton iteration on every lane: x holds F in, R out where state = 2
// (converged); state = 3 where the iteration does not apply (det F ≤ 0, nearly singular, NaN)
// and below 2 where it did not converge.
inline void newton_polar_lanes(Lanes<3>& x, Real (&state)[kPolarBatch]) {
  constexpr int W = kPolarBatch, kMaxIterations = 12;
  for (int l = 0; l < W; ++l) state[l] = 0;  // 0: iterating, 1: one more iteration (Real: selects vectorise)
  for (int iteration = 0; iteration < kMaxIterations; ++iteration) {
    int active = 0;
    for (int l = 0; l < W; ++l) active += state[l] < 2 ? 1 : 0;
    if (active == 0) break;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC ivdep
#endif
    for (int l = 0; l < W; ++l) {
      const Real c0 = x[4][l] * x[8][l] - x[5][l] * x[7][l], c1 = x[5][l] * x[6][l] - x[3][l] * x[8][l],
                 c2 = x[3][l] * x[7][l] - x[4][l] * x[6][l], c3 = x[2][l] * x[7][l] - x[1][l] * x[8][l],
                 c4 = x[0][l] * x[8][l] - x[2][l] * x[6][l], c5 = x[1][l] * x[6][l] - x[0][l] * x[7][l],
                 c6 = x[1][l] * x[5][l] - x[2][l] * x[4][l], c7 = x[2][l] * x[3][l] - x[0][l] * x[5][l],
                 c8 = x[0][l] * x[4][l] - x[1][l] * x[3][l];
      const Real det = x[0][l] * c0 + x[1][l] * c1 + x[2][l] * c2;
      // Sums as trees, not chains: the iteration is bound by the latency of its dependent operations.
      const Real cof2 =
          ((c0 * c0 + c1 * c1) + (c2 * c2 + c3 * c3)) + ((c4 * c4 + c5 * c5) + (c6 * c6 + c7 * c7)) + c8 * c8;
      const Real norm2 = ((x[0][l] * x[0][l] + x[1][l] * x[1][l]) + (x[2][l] * x[2][l] + x[3][l] * x[3][l])) +
                         ((x[4][l] * x[4][l] + x[5][l] * x[5][l]) + (x[6][l] * x[6][l] + x[7][l] * x[7][l])) +
                         x[8][l] * x[8][l];
      const bool valid = det > 1e-6 * norm2 * std::sqrt(norm2);
      const Real gamma = iteration == 0 ? std::sqrt(std::sqrt(cof2 / (det * det * norm2))) : 1.0;
      const Real a = 0.5 * gamma, b = 0.5 / (gamma * det);
      const Real c[9] = {c0, c1, c2, c3, c4, c5, c6, c7, c8};
      Real next[9], step[9];
#pragma GCC unroll 9
      for (int e = 0; e < 9; ++e) {
        next[e] = a * x[e][l] + b * c[e];
        step[e] = (next[e] - x[e][l]) * (next[e] - x[e][l]);
      }
      const Real change2 =
          ((step[0] + step[1]) + (step[2] + step[3])) + ((step[4] + step[5]) + (step[6] + step[7])) + step[8];
      const Real st = state[l];
      const bool take = (st < 2) & valid;
#pragma GCC unroll 9
      for (int e = 0; e < 9; ++e) x[e][l] = take ? next[e] : x[e][l];
      Real after = change2 < 1e-12 ? 1.0 : 0.0;
      after = st == 1 ? 2.0 : after;
      after = valid ? after : 3.0;
      state[l] = st >= 2 ? st : after;
    }
  }
}

}  // namespace svd_detail

inline void polar_rotation_batch(const Real* F, Real* R, int count) {
  Real x[9][kPolarBatch], state[kPolarBatch];
  svd_detail::load_lanes<3>(F, count, x);
  svd_detail::newton_polar_lanes(x, state);
  for (int l = 0; l < count; ++l) {
    if (state[l] == 2) {
      for (int e = 0; e < 9; ++e) R[9 * l + e] = x[e][l];
    } else {
      Eigen::Map<Eigen::Matrix<Real, 3, 3, Eigen::RowMajor>>(R + 9 * l) =
          polar_rotation<3>(Eigen::Map<const Eigen::Matrix<Real, 3, 3, Eigen::RowMajor>>(F + 9 * l));
    }
  }
}

namespace svd_detail {

// Entry (i, j) of a symmetric 3×3 matrix held as its 6 distinct entries: the diagonal, then
// (0, 1), (0, 2), (1, 2).
constexpr int sym(int i, int j) { return i == j ? i : 2 + i + j; }

// One Jacobi rotation of every lane's symmetric s in the (p, q) plane, zeroing s_pq, accumulated
// into v's columns p, q (Numerical Recipes §11.1: t = tan θ, |θ| ≤ π/4, in the form without
// cancellation, t = ±2 s_pq/h with h = |d| + r, d = s_qq − s_pp, r = ‖(d, 2 s_pq)‖). Since
// h² + 4 s_pq² = 2rh, cos θ = h/√(2rh) and sin θ = ±2 s_pq/√(2rh): two square roots and one
// division, the cost of a rotation. s_pq = 0 gives the exact identity. Lanes marked done keep
// their values.
template <int p, int q>
inline void jacobi_rotation_lanes(Real (&s)[6][kPolarBatch], Lanes<3>& v, const Real (&done)[kPolarBatch]) {
  constexpr int r = 3 - p - q, pq = sym(p, q), rp = sym(r, p), rq = sym(r, q);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC ivdep
#endif
  for (int l = 0; l < kPolarBatch; ++l) {
    const Real a = s[pq][l], d = s[q][l] - s[p][l];
    const Real c2a = d < 0 ? -2 * a : 2 * a;
    const Real r = std::sqrt(d * d + 4 * a * a), h = std::abs(d) + r, m2 = 2 * r * h;
    // Else exactly c = 1, sin θ = t = 0 (h/√(2rh) would be 1 ± ε). The bound keeps m2 a normal
    // number, whose cos θ, sin θ are orthonormal to round-off; it skips only |s_pq| < 1e-140,
    // negligible here: the Newton iteration takes no F with σ_1 below about 1e-100.
    const bool rotate = a != 0 && m2 > 1e-280;
    const Real inverse = rotate ? 1 / std::sqrt(m2) : 0.0;
    const Real c = rotate ? h * inverse : 1.0, sn = c2a * inverse;
    const Real t = (2 * r * inverse) * sn;  // 1/h = 2r/m²
    const bool keep = done[l] != 0;
    const Real spp = s[p][l] - t * a, sqq = s[q][l] + t * a;
    const Real srp = c * s[rp][l] - sn * s[rq][l], srq = sn * s[rp][l] + c * s[rq][l];
    s[p][l] = keep ? s[p][l] : spp;
    s[q][l] = keep ? s[q][l] : sqq;
    s[pq][l] = keep ? a : 0.0;
    s[rp][l] = keep ? s[rp][l] : srp;
    s[rq][l] = keep ? s[rq][l] : srq;
#pragma GCC unroll 3
    for (int k = 0; k < 3; ++k) {
      const Real vp = v[3 * k + p][l], vq = v[3 * k + q][l];
      v[3 * k + p][l] = keep ? vp : c * vp - sn * vq;
      v[3 * k + q][l] = keep ? vq : sn * vp + c * vq;
    }
  }
}

// Cyclic Jacobi on every lane's symmetric s: its eigenvalues on the diagonal of s, its
// eigenvectors in the columns of v (row-major), det v = +1. A lane stops after the sweep that
// leaves its off-diagonal part below 1e-15 of its diagonal, so that its result does not depend
// on the other lanes (quadratic convergence: 3–4 sweeps; the cap is never reached in the tests).
inline void jacobi_eigen_lanes(Real (&s)[6][kPolarBatch], Lanes<3>& v) {
  constexpr int W = kPolarBatch;
  Real done[W];
  for (int l = 0; l < W; ++l) {
    for (int e = 0; e < 9; ++e) v[e][l] = e % 4 == 0 ? 1.0 : 0.0;
    done[l] = 0;
  }
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    jacobi_rotation_lanes<0, 1>(s, v, done);
    jacobi_rotation_lanes<0, 2>(s, v, done);
    jacobi_rotation_lanes<1, 2>(s, v, done);
    int active = 0;
    for (int l = 0; l < W; ++l) {
      const Real off = s[3][l] * s[3][l] + s[4][l] * s[4][l] + s[5][l] * s[5][l];
      const Real diagonal = s[0][l] * s[0][l] + s[1][l] * s[1][l] + s[2][l] * s[2][l];
      done[l] = done[l] != 0 || off <= 1e-30 * diagonal ? 1.0 : 0.0;
      active += done[l] == 0 ? 1 : 0;
    }
    if (active == 0) break;
  }
}

// Orders the eigenvalues s_i, s_j of every lane descending (strictly: ties keep their order), by
// swapping columns i, j of v and negating one so that det v stays +1, as polar_svd does.
template <int i, int j>
inline void sort_pair_lanes(Real (&s)[6][kPolarBatch], Lanes<3>& v) {
  for (int l = 0; l < kPolarBatch; ++l) {
    const bool swap = s[i][l] < s[j][l];
    const Real si = s[i][l], sj = s[j][l];
    s[i][l] = swap ? sj : si;
    s[j][l] = swap ? si : sj;
#pragma GCC unroll 3
    for (int k = 0; k < 3; ++k) {
      const Real vi = v[3 * k + i][l], vj = v[3 * k + j][l];
      v[3 * k + i][l] = swap ? vj : vi;
      v[3 * k + j][l] = swap ? -vi : vj;
    }
  }
}

}  // namespace svd_detail

// polar_svd for a batch of up to kPolarBatch matrices (F, U, V row-major, d×d each, sigma d
// values each, all contiguous), with polar_svd's conventions (header) though not its bits, and
// written lane by lane so that the compiler vectorises it across matrices. Each matrix's result
// depends on it alone, not on its place in the batch nor on its neighbours.
//   3D: R from the batched Newton iteration (polar_rotation<3>); S = RᵀF is symmetric positive
//   definite, and cyclic Jacobi on S gives S = V Σ Vᵀ (the eigenvalues of S are the σ_i
//   themselves, not their squares: small σ_i keep the round-off of F); U = R V. The matrices the
//   iteration does not take (det F ≤ 0, nearly singular) go through polar_svd<3>.
//   2D: R = polar_rotation<2> in closed form, whose S = RᵀF is symmetric with σ_2 < 0 exactly when
//   det F < 0; one Jacobi rotation diagonalises it. No fallback, no trigonometry.
template <int D>
void polar_svd_batch(const Real* F, Real* U, Real* sigma, Real* V, int count);

template <>
inline void polar_svd_batch<3>(const Real* F, Real* U, Real* sigma, Real* V, int count) {
  using namespace svd_detail;
  constexpr int W = kPolarBatch;
  Real f[9][W], x[9][W], state[W], s[6][W], v[9][W];
  load_lanes<3>(F, count, f);
  std::memcpy(x, f, sizeof x);
  newton_polar_lanes(x, state);
  for (int l = 0; l < W; ++l) {  // S = RᵀF, symmetrised; the identity in lanes left to polar_svd
    Real S[3][3];
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        S[i][j] = x[i][l] * f[j][l] + x[3 + i][l] * f[3 + j][l] + x[6 + i][l] * f[6 + j][l];
    const bool ok = state[l] == 2;
    for (int i = 0; i < 3; ++i) s[i][l] = ok ? S[i][i] : 1.0;
    s[3][l] = ok ? 0.5 * (S[0][1] + S[1][0]) : 0.0;
    s[4][l] = ok ? 0.5 * (S[0][2] + S[2][0]) : 0.0;
    s[5][l] = ok ? 0.5 * (S[1][2] + S[2][1]) : 0.0;
  }
  jacobi_eigen_lanes(s, v);
  sort_pair_lanes<0, 1>(s, v);
  sort_pair_lanes<0, 2>(s, v);
  sort_pair_lanes<1, 2>(s, v);
  for (int l = 0; l < count; ++l) {
    if (state[l] == 2) {
      for (int i = 0; i < 3; ++i) {
        sigma[3 * l + i] = s[i][l];
        for (int j = 0; j < 3; ++j) {
          U[9 * l + 3 * i + j] =
              x[3 * i][l] * v[j][l] + x[3 * i + 1][l] * v[3 + j][l] + x[3 * i + 2][l] * v[6 + j][l];
          V[9 * l + 3 * i + j] = v[3 * i + j][l];
        }
      }
    } else {
      using RowMat = Eigen::Matrix<Real, 3, 3, Eigen::RowMajor>;
      const PolarSvd<3> svd = polar_svd<3>(Eigen::Map<const RowMat>(F + 9 * l));
      Eigen::Map<RowMat>(U + 9 * l) = svd.U;
      Eigen::Map<Eigen::Matrix<Real, 3, 1>>(sigma + 3 * l) = svd.sigma;
      Eigen::Map<RowMat>(V + 9 * l) = svd.V;
    }
  }
}

template <>
inline void polar_svd_batch<2>(const Real* F, Real* U, Real* sigma, Real* V, int count) {
  constexpr int W = kPolarBatch;
  Real f[4][W], u[4][W], s[2][W], v[4][W];
  svd_detail::load_lanes<2>(F, count, f);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC ivdep
#endif
  for (int l = 0; l < W; ++l) {
    const Real a = f[0][l], b = f[1][l], c = f[2][l], d = f[3][l];
    // R = [[co, −si], [si, co]] as polar_rotation<2>: the identity when a + d = c − b = 0.
    const Real cr = a + d, sr = c - b, norm = std::sqrt(cr * cr + sr * sr);
    const Real inverse = norm > 0 ? 1 / norm : 0.0;
    const Real co = norm > 0 ? cr * inverse : 1.0, si = sr * inverse;
    const Real s00 = co * a + si * c, s11 = co * d - si * b;
    const Real s01 = 0.5 * ((co * b + si * d) + (co * c - si * a));
    // The Jacobi rotation that diagonalises S (as jacobi_rotation_lanes), V = [[cv, sv], [−sv, cv]].
    const Real diff = s11 - s00;
    const Real denominator = std::abs(diff) + std::sqrt(diff * diff + 4 * s01 * s01);
    const Real t = (diff < 0 ? -2 * s01 : 2 * s01) / (denominator > 0 ? denominator : 1.0);
    const Real cv = 1 / std::sqrt(1 + t * t), sv = t * cv;
    const Real l0 = s00 - t * s01, l1 = s11 + t * s01;
    const bool swap = l0 < l1;  // then V's columns swap, the second negated: det V = +1
    const Real v00 = swap ? sv : cv, v01 = swap ? -cv : sv, v10 = swap ? cv : -sv, v11 = swap ? sv : cv;
    s[0][l] = swap ? l1 : l0;
    s[1][l] = swap ? l0 : l1;
    v[0][l] = v00, v[1][l] = v01, v[2][l] = v10, v[3][l] = v11;
    u[0][l] = co * v00 - si * v10, u[1][l] = co * v01 - si * v11;
    u[2][l] = si * v00 + co * v10, u[3][l] = si * v01 + co * v11;
  }
  for (int l = 0; l < count; ++l) {
    for (int e = 0; e < 4; ++e) U[4 * l + e] = u[e][l], V[4 * l + e] = v[e][l];
    sigma[2 * l] = s[0][l], sigma[2 * l + 1] = s[1][l];
  }
}

// fn(index, n, svd) for the count row-major d×d matrices in F for which take(p), in batches
// through polar_svd_batch: svd[l] the polar SVD of matrix index[l], l < n ≤ kPolarBatch, p
// ascending.
template <int D, class Fn, class Take>
void for_each_polar_svd_batch(const Real* F, std::size_t count, Fn&& fn, Take&& take) {
  using RowMat = Eigen::Matrix<Real, D, D, Eigen::RowMajor>;
  Real batch[D * D * kPolarBatch], U[D * D * kPolarBatch], sigma[D * kPolarBatch], V[D * D * kPolarBatch];
  std::size_t index[kPolarBatch];
  PolarSvd<D> svd[kPolarBatch];
  int n = 0;
  for (std::size_t p = 0; p < count; ++p) {
    if (take(p)) {
      std::copy(F + D * D * p, F + D * D * (p + 1), batch + D * D * n);
      index[n++] = p;
    }
    if (n == 0 || (n < kPolarBatch && p + 1 < count)) continue;
    polar_svd_batch<D>(batch, U, sigma, V, n);
    for (int l = 0; l < n; ++l) {
      svd[l].U = Eigen::Map<const RowMat>(U + D * D * l);
      svd[l].sigma = Eigen::Map<const Eigen::Matrix<Real, D, 1>>(sigma + D * l);
      svd[l].V = Eigen::Map<const RowMat>(V + D * D * l);
    }
    fn(static_cast<const std::size_t*>(index), n, static_cast<const PolarSvd<D>*>(svd));
    n = 0;
  }
}

// fn(p, svd) with the polar SVD of each of the count row-major d×d matrices in F for which
// take(p), p ascending, through polar_svd_batch kPolarBatch at a time.
template <int D, class Fn, class Take>
void for_each_polar_svd(const Real* F, std::size_t count, Fn&& fn, Take&& take) {
  for_each_polar_svd_batch<D>(
      F, count,
      [&](const std::size_t* index, int n, const PolarSvd<D>* svd) {
        for (int l = 0; l < n; ++l) fn(index[l], svd[l]);
      },
      std::forward<Take>(take));
}

// The same for every matrix.
template <int D, class Fn>
void for_each_polar_svd(const Real* F, std::size_t count, Fn&& fn) {
  for_each_polar_svd<D>(F, count, std::forward<Fn>(fn), [](std::size_t) { return true; });
}

}  // namespace nendo
