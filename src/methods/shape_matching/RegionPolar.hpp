#pragma once
// A_r = R_r S_r for a region's best-fit map (spec 001 §6, polar(A)): Newton's iteration for the
// rotation (faster than an SVD or an eigen-decomposition, and exact to round-off), S = sym(R^T A);
// inverted or singular regions take the SVD route, whose S may have one negative eigenvalue. The
// setup's example stretches use the same routine as the steps.
#include <Eigen/Core>
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
