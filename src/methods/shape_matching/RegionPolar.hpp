#pragma once
// A_r = R_r S_r for a region's best-fit map (spec 001 §6, polar(A)): Newton's iteration for the
// rotation (faster than an SVD or an eigen-decomposition, and exact to round-off), S = sym(R^T A);
// inverted or singular regions take the SVD route, whose S may have one negative eigenvalue. The
// setup's example stretches use the same routine as the steps.
#include <Eigen/LU>
#include <cmath>

#include "core/Svd.hpp"
#include "methods/shape_matching/ExampleProjection.hpp"

namespace nendo::shape_matching {

struct Polar {
  Mat3 R, S;
};

inline Polar polar(const Mat3& A) {
  if (A.determinant() > 0) {
    // Higham's scaled Newton iteration X <- (γ X + X^-T / γ) / 2, γ = |det X|^(-1/3): quadratic
    // convergence to R from any non-singular A, a few iterations for the stretches of a step.
    Mat3 X = A;
    for (int it = 0; it < 30; ++it) {
      const Real det = X.determinant();
      if (!(det > 1e-300)) break;
      const Real gamma = 1 / std::cbrt(det);
      const Mat3 next = 0.5 * (gamma * X + X.inverse().transpose() / gamma);
      const Real change = (next - X).cwiseAbs().maxCoeff();
      X = next;
      if (change < 1e-15) {
        Polar p;
        p.R = X;
        p.S = 0.5 * (X.transpose() * A + A.transpose() * X);
        return p;
      }
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
