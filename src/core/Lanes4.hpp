#pragma once
// Four doubles in one register (AVX2 and AVX-512 machines alike: a ymm register), for kernels that
// update a grid node's four values (mass and 3D momentum) at once. A GCC/Clang vector type rather
// than an Eigen vector because its lanes are set from scalars in registers ({m, a, b, c}); Eigen's
// comma initialiser goes through the stack, and the 32-byte load after 8- and 16-byte stores
// stalls on store forwarding (≈ 40 % of P2G's time when it was tried).
#include <cstddef>
#include <cstring>
#include <utility>

#include "core/Types.hpp"

namespace nendo {

using Lanes4 = Real __attribute__((vector_size(4 * sizeof(Real))));

inline Lanes4 load4(const Real* p) {
  Lanes4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void store4(Real* p, Lanes4 v) { std::memcpy(p, &v, sizeof v); }

// One particle per lane, for kernels that work on a few particles at a time
// (GridKernels::stencil_lanes): a register's worth, 8 doubles with AVX-512, else 4 (AVX2 has 16
// registers: kernels that hold 20 sums in lanes of 8 would spill).
#ifdef __AVX512F__
constexpr int kParticleLanes = 8;
#else
constexpr int kParticleLanes = 4;
#endif
using ParticleLanes = Real __attribute__((vector_size(kParticleLanes * sizeof(Real))));

}  // namespace nendo

namespace nendo {

// The lanes p[at[0]], p[at[1]], ...: set from scalars in registers, not stored one by one and
// loaded whole (that load stalls on store forwarding).
template <std::size_t... I>
inline ParticleLanes gather_lanes(const Real* p, const std::size_t* at, std::index_sequence<I...>) {
  return ParticleLanes{p[at[I]]...};
}
inline ParticleLanes gather_lanes(const Real* p, const std::size_t* at) {
  return gather_lanes(p, at, std::make_index_sequence<kParticleLanes>());
}

}  // namespace nendo
