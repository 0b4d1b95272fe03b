#pragma once
// The cofactor matrix J F^{-T} = ∂J/∂F (spec 002 §2.1, §2.4): polynomial in F, defined for
// singular and inverted F alike.
#include <Eigen/Geometry>

#include "core/Svd.hpp"

namespace nendo {

// 2D: F = [[a, b], [c, d]] gives [[d, −c], [−b, a]]; 3D: columns f2×f3, f3×f1, f1×f2.
template <int D>
Mat<D> cofactor(const Mat<D>& F) {
  Mat<D> C;
  if constexpr (D == 2) {
    C << F(1, 1), -F(1, 0), -F(0, 1), F(0, 0);
  } else {
    C.col(0) = F.col(1).cross(F.col(2));
    C.col(1) = F.col(2).cross(F.col(0));
    C.col(2) = F.col(0).cross(F.col(1));
  }
  return C;
}

}  // namespace nendo
