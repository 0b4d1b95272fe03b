#pragma once
// B-spline interpolation weights and their gradients along each axis (spec 002 §5.1–§5.2).
#include <cmath>
#include <cstdint>

#include "core/Types.hpp"

namespace nendo {

// Weights of the N nodes base..base+N-1 along one axis at u = (x - origin)/h, and their
// derivatives d/dx (already divided by h).
template <int N>
struct AxisWeights {
  std::int64_t base;
  Real w[N];
  Real dw[N];
};

// Quadratic B-spline, support 1.5 (spec 002 §5.2): base = floor(u - 1/2), f = u - base in
// [1/2, 3/2); w0 = (3/2 - f)^2/2, w1 = 3/4 - (f-1)^2, w2 = (f - 1/2)^2/2.
struct QuadraticSpline {
  static constexpr int kNodes = 3;
  static constexpr Real kInverseD = 4.0;  // D_p = h^2/4 I (spec 002 §6.1)
  static AxisWeights<3> axis(Real u, Real inv_h) {
    AxisWeights<3> a;
    a.base = static_cast<std::int64_t>(std::floor(u - 0.5));
    const Real f = u - static_cast<Real>(a.base);
    a.w[0] = 0.5 * (1.5 - f) * (1.5 - f);
    a.w[1] = 0.75 - (f - 1) * (f - 1);
    a.w[2] = 0.5 * (f - 0.5) * (f - 0.5);
    a.dw[0] = (f - 1.5) * inv_h;
    a.dw[1] = -2 * (f - 1) * inv_h;
    a.dw[2] = (f - 0.5) * inv_h;
    return a;
  }
};

// Cubic B-spline, support 2 (spec 002 §5.1–§5.2): base = floor(u) - 1, d_k = f - k for f = u - base
// in [1, 2); N(t) = |t|^3/2 - t^2 + 2/3 (|t| < 1), (2 - |t|)^3/6 (1 <= |t| < 2).
struct CubicSpline {
  static constexpr int kNodes = 4;
  static constexpr Real kInverseD = 3.0;  // D_p = h^2/3 I (spec 002 §6.1)
  static AxisWeights<4> axis(Real u, Real inv_h) {
    AxisWeights<4> a;
    a.base = static_cast<std::int64_t>(std::floor(u)) - 1;
    const Real f = u - static_cast<Real>(a.base);
    for (int k = 0; k < 4; ++k) {
      const Real t = f - k, s = std::fabs(t);
      if (s < 1) {
        a.w[k] = 0.5 * s * s * s - s * s + 2.0 / 3.0;
        a.dw[k] = (1.5 * s * t - 2 * t) * inv_h;
      } else {
        const Real r = 2 - s;
        a.w[k] = r * r * r / 6;
        a.dw[k] = -0.5 * r * r * (t > 0 ? 1 : -1) * inv_h;
      }
    }
    return a;
  }
};

// Quadratic weights only, for the spine's tests and benchmark. Axes beyond the dimension get
// base 0 and the weights (1, 0, 0).
struct QuadraticWeights {
  std::int64_t base[3];
  Real w[3][3];
};

inline QuadraticWeights quadratic_weights(int dimension, Real h, const Vec3& origin, const Real* x) {
  QuadraticWeights q{};
  for (int a = 0; a < 3; ++a) {
    if (a >= dimension) {
      q.base[a] = 0, q.w[a][0] = 1, q.w[a][1] = q.w[a][2] = 0;
      continue;
    }
    const AxisWeights<3> axis = QuadraticSpline::axis((x[a] - origin[a]) / h, 1 / h);
    q.base[a] = axis.base;
    for (int k = 0; k < 3; ++k) q.w[a][k] = axis.w[k];
  }
  return q;
}

}  // namespace nendo
