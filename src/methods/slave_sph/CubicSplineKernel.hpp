#pragma once
// The M4 cubic-spline SPH kernel of spec 000 Eq. (3), support 2h, ∫ w dV = 1 in 3D:
//   w(q) = 3/(2π h³) { ½q³ − q² + 2/3 (q ≤ 1);  (2 − q)³/6 (1 ≤ q ≤ 2);  0 },  q = r/h,
// and its gradient with respect to the master position (Eq. 3''), written without dividing by r:
//   ∇W_sm = 3/(2π h⁵) c(q) (x_s − x_m),  c = 2 − 1.5q (q ≤ 1), (2 − q)²/(2q) (1 < q < 2), 0.
#include <cmath>

#include "core/Types.hpp"

namespace nendo {

class CubicSplineKernel {
 public:
  explicit CubicSplineKernel(Real h)
      : h_(h), inv_h2_(1 / (h * h)), w_scale_(3 / (2 * kPi * h * h * h)), g_scale_(w_scale_ / (h * h)) {}

  Real h() const { return h_; }
  Real support() const { return 2 * h_; }
  Real support_squared() const { return 4 * h_ * h_; }

  // w from the squared distance r².
  Real w(Real r2) const {
    const Real q2 = r2 * inv_h2_;
    if (q2 >= 4) return 0;
    const Real q = std::sqrt(q2);
    if (q <= 1) return w_scale_ * (0.5 * q2 * q - q2 + Real(2) / 3);
    const Real t = 2 - q;
    return w_scale_ * (t * t * t / 6);
  }
  // dw/dr (Eq. 3'), for tests.
  Real dw_dr(Real r) const {
    const Real q = r / h_;
    if (q >= 2) return 0;
    const Real s = w_scale_ / h_;
    return q <= 1 ? s * (1.5 * q * q - 2 * q) : -s * 0.5 * (2 - q) * (2 - q);
  }
  // The scalar multiplying (x_s − x_m) in ∇W_sm, from r².
  Real gradient_factor(Real r2) const {
    const Real q2 = r2 * inv_h2_;
    if (q2 >= 4) return 0;
    const Real q = std::sqrt(q2);
    if (q <= 1) return g_scale_ * (2 - 1.5 * q);
    const Real t = 2 - q;
    return g_scale_ * (t * t / (2 * q));
  }

 private:
  static constexpr Real kPi = 3.14159265358979323846;
  Real h_, inv_h2_, w_scale_, g_scale_;
};

}  // namespace nendo
