// B-spline kernels (spec 002 §5.2, §12.3 item 1): partition of unity, gradient sums, linear
// reproduction, D_p, and the derivative against finite differences, for random positions.
#include <gtest/gtest.h>

#include <random>

#include "core/BSpline.hpp"

namespace nendo {
namespace {

template <class Kernel>
void check_identities(Real h) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<Real> position(-3.7, 5.2);
  constexpr int N = Kernel::kNodes;
  for (int trial = 0; trial < 10000; ++trial) {
    const Real x = position(rng);
    const AxisWeights<N> a = Kernel::axis(x / h, 1 / h);
    Real sum = 0, grad = 0, first = 0, second = 0, grad_moment = 0;
    for (int k = 0; k < N; ++k) {
      const Real xi = (a.base + k) * h;
      sum += a.w[k];
      grad += a.dw[k];
      first += a.w[k] * xi;
      second += a.w[k] * (xi - x) * (xi - x);
      grad_moment += xi * a.dw[k];
    }
    ASSERT_NEAR(sum, 1.0, 1e-14) << "partition of unity at " << x;
    ASSERT_NEAR(grad, 0.0, 1e-14 / h) << "gradients sum to zero at " << x;
    ASSERT_NEAR(first, x, 1e-14 * std::max(1.0, std::fabs(x))) << "linear reproduction at " << x;
    ASSERT_NEAR(grad_moment, 1.0, 1e-13) << "sum x_i dw_i = 1 at " << x;
    ASSERT_NEAR(second * Kernel::kInverseD / (h * h), 1.0, 1e-13) << "D_p = h^2 / kInverseD at " << x;
    // The stencil reaches nodes [c-1, c+2] of the particle's cell c (ghost width, spec §5.2).
    const std::int64_t c = static_cast<std::int64_t>(std::floor(x / h));
    ASSERT_GE(a.base, c - 1);
    ASSERT_LE(a.base + N - 1, c + 2);
    // dw is the derivative of w: central differences with the same base.
    const Real eps = 1e-6 * h;
    const AxisWeights<N> plus = Kernel::axis((x + eps) / h, 1 / h),
                         minus = Kernel::axis((x - eps) / h, 1 / h);
    if (plus.base != a.base || minus.base != a.base) continue;
    for (int k = 0; k < N; ++k) ASSERT_NEAR((plus.w[k] - minus.w[k]) / (2 * eps), a.dw[k], 1e-7 / h);
  }
}

TEST(BSpline, QuadraticIdentities) {
  check_identities<QuadraticSpline>(1.0);
  check_identities<QuadraticSpline>(0.02);
}

TEST(BSpline, CubicIdentities) {
  check_identities<CubicSpline>(1.0);
  check_identities<CubicSpline>(0.02);
}

// Tensor products in 3D keep the partition of unity and zero gradient sum (spec §12.3 item 1).
TEST(BSpline, TensorProductIn3D) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<Real> position(-1, 1);
  for (int trial = 0; trial < 1000; ++trial) {
    AxisWeights<3> a[3];
    for (auto& axis : a) axis = QuadraticSpline::axis(position(rng) / 0.1, 10.0);
    Real sum = 0, grad[3] = {0, 0, 0};
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 3; ++k) {
          sum += a[0].w[i] * a[1].w[j] * a[2].w[k];
          grad[0] += a[0].dw[i] * a[1].w[j] * a[2].w[k];
          grad[1] += a[0].w[i] * a[1].dw[j] * a[2].w[k];
          grad[2] += a[0].w[i] * a[1].w[j] * a[2].dw[k];
        }
    ASSERT_NEAR(sum, 1.0, 1e-14);
    for (Real g : grad) ASSERT_NEAR(g, 0.0, 1e-13);
  }
}

}  // namespace
}  // namespace nendo
