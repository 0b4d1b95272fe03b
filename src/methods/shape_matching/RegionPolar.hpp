#pragma once
// A_r = R_r S_r for a region's best-fit map (spec 001 §6, polar(A)): Newton's iteration for the
// rotation (faster than an SVD or an eigen-decomposition, and exact to round-off), S = sym(R^T A);
// inverted or singular regions take the SVD route, whose S may have one negative eigenvalue. The
// setup's example stretches use the same routine as the steps. A step warm-starts it from the
// region's rotation of the last step (polar_from: Newton on the rotations, issue 31 item 4a).
#include <Eigen/Core>
#include <algorithm>
#include <cmath>

#include "core/Svd.hpp"
#include "methods/shape_matching/ExampleProjection.hpp"

namespace nendo::shape_matching {

struct Polar {
  Mat3 R, S;
};

inline Polar polar(const Mat3& A) {
  // Higham's Newton iteration X <- (γ X + X^-T / γ) / 2 (X^-T = cofactors / det), scaled by
  // γ = det^(-1/3) while det X is far from 1: converges quadratically to R from any A with
  // det A > 0. A change below 1e-8 means the new iterate is within ~1e-16 of R.
  Mat3 X = A;
  for (int it = 0; it < 40; ++it) {
    Mat3 cof;
    cof << X(1, 1) * X(2, 2) - X(1, 2) * X(2, 1), X(1, 2) * X(2, 0) - X(1, 0) * X(2, 2),
        X(1, 0) * X(2, 1) - X(1, 1) * X(2, 0), X(0, 2) * X(2, 1) - X(0, 1) * X(2, 2),
        X(0, 0) * X(2, 2) - X(0, 2) * X(2, 0), X(0, 1) * X(2, 0) - X(0, 0) * X(2, 1),
        X(0, 1) * X(1, 2) - X(0, 2) * X(1, 1), X(0, 2) * X(1, 0) - X(0, 0) * X(1, 2),
        X(0, 0) * X(1, 1) - X(0, 1) * X(1, 0);
    const Real det = X(0, 0) * cof(0, 0) + X(0, 1) * cof(0, 1) + X(0, 2) * cof(0, 2);
    if (!(det > 1e-300)) break;  // inverted or singular: the SVD below
    const Real gamma = std::fabs(det - 1) > 1e-4 ? 1 / std::cbrt(det) : 1;
    const Mat3 next = 0.5 * (gamma * X + cof / (gamma * det));
    const Real change = (next - X).cwiseAbs().maxCoeff();
    X = next;
    if (change < 1e-8) {
      Polar p;
      p.R = X;
      p.S = 0.5 * (X.transpose() * A + A.transpose() * X);
      return p;
    }
  }
  const PolarSvd<3> svd = polar_svd<3>(A);
  return {svd.U * svd.V.transpose(), svd.V * svd.sigma.asDiagonal() * svd.V.transpose()};
}

// A unit quaternion (w, x, y, z) as its rotation matrix.
inline Mat3 rotation_matrix(const Real* q) {
  const Real w = q[0], x = q[1], y = q[2], z = q[3];
  Mat3 R;
  R << 1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),  //
      2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),   //
      2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y);
  return R;
}

// The unit quaternion of a rotation matrix (Shepperd: from the largest of w², x², y², z²).
inline void quaternion_of(const Mat3& R, Real* q) {
  const Real t = R.trace();
  if (t >= R(0, 0) && t >= R(1, 1) && t >= R(2, 2)) {
    const Real s = 2 * std::sqrt(1 + t);  // 4 w
    q[0] = s / 4, q[1] = (R(2, 1) - R(1, 2)) / s, q[2] = (R(0, 2) - R(2, 0)) / s,
    q[3] = (R(1, 0) - R(0, 1)) / s;
  } else if (R(0, 0) >= R(1, 1) && R(0, 0) >= R(2, 2)) {
    const Real s = 2 * std::sqrt(1 + R(0, 0) - R(1, 1) - R(2, 2));  // 4 x
    q[0] = (R(2, 1) - R(1, 2)) / s, q[1] = s / 4, q[2] = (R(0, 1) + R(1, 0)) / s,
    q[3] = (R(0, 2) + R(2, 0)) / s;
  } else if (R(1, 1) >= R(2, 2)) {
    const Real s = 2 * std::sqrt(1 - R(0, 0) + R(1, 1) - R(2, 2));  // 4 y
    q[0] = (R(0, 2) - R(2, 0)) / s, q[1] = (R(0, 1) + R(1, 0)) / s, q[2] = s / 4,
    q[3] = (R(1, 2) + R(2, 1)) / s;
  } else {
    const Real s = 2 * std::sqrt(1 - R(0, 0) - R(1, 1) + R(2, 2));  // 4 z
    q[0] = (R(1, 0) - R(0, 1)) / s, q[1] = (R(0, 2) + R(2, 0)) / s, q[2] = (R(1, 2) + R(2, 1)) / s,
    q[3] = s / 4;
  }
}

// The rotation of polar(A) by Newton's method on the rotations, from the last step's rotation q
// (a unit quaternion, updated to the result): R maximises tr(R^T A); with B = R^T A the Newton
// step ω solves (tr B I − sym B) ω = (B₂₁ − B₁₂, B₀₂ − B₂₀, B₁₀ − B₀₁) and R ← R exp([ω]×), taken
// as q ⊗ (1, ω/2) normalised (exp to O(|ω|³), so convergence stays quadratic). With A = U Σ V^T,
// det A ≥ 0, the critical points are U D V^T (D = diag(±1), det D = 1), where the Hessian
// tr B I − sym B has the eigenvalues d_i σ_i + d_j σ_j: positive definite only at D = I, polar(A)'s
// rotation, also when σ_3 = 0 (a flat region, all its vertices on a floor plane: the SVD route of
// polar() gives this same rotation). So the iteration gives up — returns 0 — as soon as the
// Hessian is not positive definite, after kWarmIterations, or when det A < 0 (inverted: polar()'s
// SVD). Otherwise it returns the number of iterations (each one product R^T A).
constexpr int kWarmIterations = 8;
inline int warm_rotation(const Mat3& A, Real* q, Mat3& R) {
  const Real norm2 = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3];
  if (!(std::fabs(norm2 - 1) < 1e-6) || !(A.determinant() >= 0)) return 0;  // no rotation yet; inverted
  for (int it = 1; it <= kWarmIterations; ++it) {
    R = rotation_matrix(q);
    const Mat3 B = R.transpose() * A;
    const Real g[3] = {B(2, 1) - B(1, 2), B(0, 2) - B(2, 0), B(1, 0) - B(0, 1)};
    const Real t = B.trace();
    const Real h00 = t - B(0, 0), h11 = t - B(1, 1), h22 = t - B(2, 2);
    const Real h01 = -0.5 * (B(0, 1) + B(1, 0)), h02 = -0.5 * (B(0, 2) + B(2, 0)),
               h12 = -0.5 * (B(1, 2) + B(2, 1));
    const Real c00 = h11 * h22 - h12 * h12, c01 = h02 * h12 - h01 * h22, c02 = h01 * h12 - h02 * h11;
    const Real c11 = h00 * h22 - h02 * h02, c12 = h01 * h02 - h00 * h12, c22 = h00 * h11 - h01 * h01;
    const Real det = h00 * c00 + h01 * c01 + h02 * c02;
    if (!(h00 > 0 && c22 > 0 && det > 0)) return 0;  // Sylvester: the Hessian is not positive definite
    const Real half = 0.5 / det;                     // v = ω / 2 = H^-1 g / 2
    const Real v[3] = {half * (c00 * g[0] + c01 * g[1] + c02 * g[2]),
                       half * (c01 * g[0] + c11 * g[1] + c12 * g[2]),
                       half * (c02 * g[0] + c12 * g[1] + c22 * g[2])};
    const Real w = q[0] - (q[1] * v[0] + q[2] * v[1] + q[3] * v[2]);
    const Real x = q[1] + q[0] * v[0] + q[2] * v[2] - q[3] * v[1];
    const Real y = q[2] + q[0] * v[1] + q[3] * v[0] - q[1] * v[2];
    const Real z = q[3] + q[0] * v[2] + q[1] * v[1] - q[2] * v[0];
    const Real scale = 1 / std::sqrt(w * w + x * x + y * y + z * z);
    q[0] = scale * w, q[1] = scale * x, q[2] = scale * y, q[3] = scale * z;
    // After a step below 1e-8 the error is O(1e-16): the rotation to round-off.
    if (std::max({std::fabs(v[0]), std::fabs(v[1]), std::fabs(v[2])}) < 0.5e-8) {
      R = rotation_matrix(q);
      return it;
    }
  }
  return 0;
}

// polar(A)'s rotation from the last step's rotation q (updated): the Newton iteration above where
// it applies, else polar(A) from scratch (a large rotation since the last step; inverted: the SVD).
inline Mat3 rotation_from(const Mat3& A, Real* q) {
  Mat3 R;
  if (warm_rotation(A, q, R) > 0) return R;
  R = polar(A).R;
  quaternion_of(R, q);
  return R;
}

// polar(A) likewise; S = sym(R^T A) after the warm start, polar()'s own S after the fallback.
inline Polar polar_from(const Mat3& A, Real* q) {
  Polar p;
  if (warm_rotation(A, q, p.R) > 0) {
    p.S = 0.5 * (p.R.transpose() * A + A.transpose() * p.R);
    return p;
  }
  p = polar(A);
  quaternion_of(p.R, q);
  return p;
}

// R_r and S_r of a region from A_r and A_pq: the paper's polar(A_r), or Müller's rotation of A_pq
// with S_r = sym(R^T A_r) (spec §9 A3, `rotation: Apq`).
inline Polar region_polar(const Mat3& A, const Mat3& apq, bool from_apq) {
  if (!from_apq) return polar(A);
  Polar p;
  p.R = polar(apq).R;
  p.S = 0.5 * (p.R.transpose() * A + A.transpose() * p.R);
  return p;
}

}  // namespace nendo::shape_matching
