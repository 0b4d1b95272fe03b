#pragma once
// Four doubles in one register (AVX2 and AVX-512 machines alike: a ymm register), for kernels that
// update a grid node's four values (mass and 3D momentum) at once. A GCC/Clang vector type rather
// than an Eigen vector because its lanes are set from scalars in registers ({m, a, b, c}); Eigen's
// comma initialiser goes through the stack, and the 32-byte load after 8- and 16-byte stores
// stalls on store forwarding (≈ 40 % of P2G's time when it was tried).
#include <cstring>

#include "core/Types.hpp"

namespace nendo {

using Lanes4 = Real __attribute__((vector_size(4 * sizeof(Real))));

inline Lanes4 load4(const Real* p) {
  Lanes4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void store4(Real* p, Lanes4 v) { std::memcpy(p, &v, sizeof v); }

}  // namespace nendo
