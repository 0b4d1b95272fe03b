#include "decomposition/BlockKey.hpp"

#include <string>

#include "core/Error.hpp"

namespace nendo {
namespace {

std::uint64_t spread_bits(std::uint64_t v) {  // 21 bits -> every third bit
  v &= 0x1fffff;
  v = (v | v << 32) & 0x1f00000000ffffULL;
  v = (v | v << 16) & 0x1f0000ff0000ffULL;
  v = (v | v << 8) & 0x100f00f00f00f00fULL;
  v = (v | v << 4) & 0x10c30c30c30c30c3ULL;
  v = (v | v << 2) & 0x1249249249249249ULL;
  return v;
}

std::uint64_t compact_bits(std::uint64_t v) {
  v &= 0x1249249249249249ULL;
  v = (v ^ (v >> 2)) & 0x10c30c30c30c30c3ULL;
  v = (v ^ (v >> 4)) & 0x100f00f00f00f00fULL;
  v = (v ^ (v >> 8)) & 0x1f0000ff0000ffULL;
  v = (v ^ (v >> 16)) & 0x1f00000000ffffULL;
  v = (v ^ (v >> 32)) & 0x1fffff;
  return v;
}

}  // namespace

BlockKey encode_block_key(const BlockCoord& coord) {
  BlockKey key = 0;
  for (int a = 0; a < 3; ++a) {
    if (coord[a] < kBlockCoordMin || coord[a] > kBlockCoordMax)
      throw Error("block coordinate " + std::to_string(coord[a]) + " on axis " + std::to_string(a) +
                  " is outside the addressable domain (±2^20 blocks); material has flown away or dx is "
                  "too small for the scene's extent");
    key |= spread_bits(static_cast<std::uint64_t>(coord[a] - kBlockCoordMin) + kBlockKeyShift) << a;
  }
  return key;
}

BlockCoord decode_block_key(BlockKey key) {
  BlockCoord c{};
  constexpr std::uint64_t kMask = (std::uint64_t{1} << kBlockCoordBits) - 1;
  for (int a = 0; a < 3; ++a)
    c[a] = static_cast<std::int32_t>((compact_bits(key >> a) - kBlockKeyShift) & kMask) + kBlockCoordMin;
  return c;
}

int neighbour_count(int dimension) { return dimension == 3 ? 27 : 9; }

BlockCoord neighbour_offset(int dimension, int index) {
  BlockCoord o{index % 3 - 1, (index / 3) % 3 - 1, 0};
  if (dimension == 3) o[2] = index / 9 - 1;
  return o;
}

}  // namespace nendo
