#pragma once
// Basic scalar and index types shared by every layer of nendo.
#include <array>
#include <cstdint>

namespace nendo {

using Real = double;  // spec 002 §0: double precision everywhere
using ParticleId = std::uint64_t;
using Vec3 = std::array<Real, 3>;  // cold-code vector; unused components are 0 in 2D
using Int3 = std::array<std::int64_t, 3>;

}  // namespace nendo
