#pragma once
// A block is a cube of B^d grid cells named by its integer coordinates. Coordinates are packed into
// a 64-bit Morton key (21 bits per axis, biased so that negative coordinates work): the domain is
// unbounded in practice (±2^20 blocks per axis) and keys sort blocks along a Z-order curve.
//
// Each axis is shifted by kBlockKeyShift (alternating bits) before interleaving, so that a round
// coordinate such as 0 lies on a low level of the curve: the empty grid blocks just outside a
// domain face at 0 then have keys next to the face's own and belong to the ranks that own the
// face, not all to the rank whose key range starts the curve (with a bias of exactly 2^20, every
// block at x, y or z = -1 sorted before all of a domain at 0 and rank 0 exchanged ghost slices
// with every rank on those faces; docs/scaling.md).
#include <array>
#include <cstdint>
#include <limits>

namespace nendo {

using BlockKey = std::uint64_t;
using BlockCoord = std::array<std::int32_t, 3>;  // z = 0 in 2D

constexpr int kBlockCoordBits = 21;
constexpr std::int32_t kBlockCoordMin = -(1 << (kBlockCoordBits - 1));
constexpr std::int32_t kBlockCoordMax = (1 << (kBlockCoordBits - 1)) - 1;
constexpr std::uint32_t kBlockKeyShift = 0x155555;
// The coordinate whose shifted value is 0 on an axis: Z-order cubes of every size are aligned to
// it (and keys wrap from their largest to 0 between it and the coordinate below).
constexpr std::int32_t kBlockKeyZero =
    (1 << (kBlockCoordBits - 1)) - static_cast<std::int32_t>(kBlockKeyShift);
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
