#pragma once
// A block is a cube of B^d grid cells named by its integer coordinates. Coordinates are packed into
// a 64-bit Morton key (21 bits per axis, biased so that negative coordinates work): the domain is
// unbounded in practice (±2^20 blocks per axis) and keys sort blocks along a Z-order curve.
#include <array>
#include <cstdint>
#include <limits>

namespace nendo {

using BlockKey = std::uint64_t;
using BlockCoord = std::array<std::int32_t, 3>;  // z = 0 in 2D

constexpr int kBlockCoordBits = 21;
constexpr std::int32_t kBlockCoordMin = -(1 << (kBlockCoordBits - 1));
constexpr std::int32_t kBlockCoordMax = (1 << (kBlockCoordBits - 1)) - 1;
// One past the largest key; the end of the last rank's key range.
constexpr BlockKey kBlockKeyEnd = std::numeric_limits<BlockKey>::max();

// Throws nendo::Error if a coordinate is outside [kBlockCoordMin, kBlockCoordMax].
BlockKey encode_block_key(const BlockCoord& coord);
BlockCoord decode_block_key(BlockKey key);

// Offsets to the 3^d neighbours of a block (self included), in the fixed order used by every
// deterministic reduction: lexicographic with x fastest, from (-1,-1,-1) to (1,1,1).
int neighbour_count(int dimension);
BlockCoord neighbour_offset(int dimension, int index);
inline BlockCoord add(const BlockCoord& a, const BlockCoord& b) {
  return {a[0] + b[0], a[1] + b[1], a[2] + b[2]};
}

}  // namespace nendo
