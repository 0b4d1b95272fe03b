#pragma once
// B-spline interpolation weights along each axis (spec 002 §5.1–§5.2).
#include <cmath>
#include <cstdint>

#include "core/Types.hpp"

namespace nendo {

// Quadratic B-spline: with u = (x - origin)/h, nodes base, base+1, base+2 where
// base = floor(u - 1/2), f = u - base in [1/2, 3/2), and (spec 002 §5.2)
// w0 = (3/2 - f)^2 / 2, w1 = 3/4 - (f - 1)^2, w2 = (f - 1/2)^2 / 2.
// Axes beyond the dimension get base 0 and the weights (1, 0, 0).
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
    const Real u = (x[a] - origin[a]) / h;
    q.base[a] = static_cast<std::int64_t>(std::floor(u - 0.5));
    const Real f = u - static_cast<Real>(q.base[a]);
    q.w[a][0] = 0.5 * (1.5 - f) * (1.5 - f);
    q.w[a][1] = 0.75 - (f - 1) * (f - 1);
    q.w[a][2] = 0.5 * (f - 0.5) * (f - 0.5);
  }
  return q;
}

}  // namespace nendo
