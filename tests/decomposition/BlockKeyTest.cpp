// BlockKey: a block's integer coordinates packed into a 64-bit Morton key (21 bits per axis, biased
// so that negative coordinates work), and the fixed neighbour order of every deterministic sum.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <set>
#include <tuple>
#include <vector>

#include "core/Error.hpp"
#include "decomposition/BlockKey.hpp"

namespace nendo {
namespace {

BlockCoord plus(const BlockCoord& a, int x, int y, int z) { return {a[0] + x, a[1] + y, a[2] + z}; }

TEST(BlockKey, DomainIsTwoToTheTwentyBlocksEachWayOnEveryAxis) {
  EXPECT_EQ(kBlockCoordMin, -(1 << 20));
  EXPECT_EQ(kBlockCoordMax, (1 << 20) - 1);
  // Keys fill [0, 2^63), below kBlockKeyEnd: 0 at the shifted zero, 2^63 - 1 just below it.
  const std::int32_t z = kBlockKeyZero;
  EXPECT_EQ(z, (1 << 20) - 0x155555);
  EXPECT_EQ(encode_block_key({z, z, z}), 0u);
  EXPECT_EQ(encode_block_key({z - 1, z - 1, z - 1}), (BlockKey{1} << 63) - 1);
  EXPECT_LT(encode_block_key({kBlockCoordMax, kBlockCoordMax, kBlockCoordMax}), kBlockKeyEnd);
  EXPECT_EQ(encode_block_key({z + 1, z, z}), 1u);
  EXPECT_EQ(encode_block_key({z, z + 1, z}), 2u);
  EXPECT_EQ(encode_block_key({z, z, z + 1}), 4u);
}

// A domain face at coordinate 0 lies on a low level of the Z curve: the blocks at -1 and 0 share
// every key bit above the lowest level, so the empty grid blocks just outside the face sort next to
// the face's blocks (with a bias of exactly 2^20 they differed in the top bits).
TEST(BlockKey, TheOriginIsOnALowLevelOfTheCurve) {
  for (int axis = 0; axis < 3; ++axis) {
    BlockCoord below{0, 0, 0};
    below[axis] = -1;
    EXPECT_LT(encode_block_key({0, 0, 0}) ^ encode_block_key(below), BlockKey{8}) << "axis " << axis;
  }
}

TEST(BlockKey, DecodeInvertsEncodeOverNegativeZeroAndExtremeCoordinates) {
  const std::int32_t values[] = {kBlockCoordMin, kBlockCoordMin + 1, -123457,       -2, -1, 0, 1, 2,
                                 654321,         kBlockCoordMax - 1, kBlockCoordMax};
  std::set<BlockKey> keys;
  for (std::int32_t x : values)
    for (std::int32_t y : values)
      for (std::int32_t z : values) {
        const BlockCoord c{x, y, z};
        const BlockKey key = encode_block_key(c);
        EXPECT_EQ(decode_block_key(key), c) << x << " " << y << " " << z;
        keys.insert(key);
      }
  EXPECT_EQ(keys.size(), 11u * 11u * 11u) << "distinct blocks must have distinct keys";
}

TEST(BlockKey, CoordinateOutsideTheDomainThrows) {
  for (int axis = 0; axis < 3; ++axis)
    for (std::int32_t bad : {kBlockCoordMax + 1, kBlockCoordMin - 1, INT32_MAX, INT32_MIN}) {
      BlockCoord c{0, 0, 0};
      c[axis] = bad;
      EXPECT_THROW(encode_block_key(c), Error) << "axis " << axis << " coordinate " << bad;
    }
}

// In an aligned 2x2x2 cube the key offset of block (x, y, z) is x + 2y + 4z: the Z order.
TEST(BlockKey, KeysOfAnAlignedCubeFollowTheZOrder) {
  const std::int32_t z = kBlockKeyZero;
  const BlockCoord bases[] = {{z, z, z},
                              {z - 2, z - 2, z - 2},
                              {z - 8, z + 4, z + 1000},
                              {kBlockCoordMin + 1, kBlockCoordMin + 1, kBlockCoordMin + 1},
                              {kBlockCoordMax - 2, kBlockCoordMax - 2, kBlockCoordMax - 2}};
  for (const BlockCoord& base : bases) {
    const BlockKey base_key = encode_block_key(base);
    std::vector<BlockKey> keys;
    for (int i = 0; i < 8; ++i) {
      const BlockKey key = encode_block_key(plus(base, i & 1, (i >> 1) & 1, (i >> 2) & 1));
      EXPECT_EQ(key - base_key, static_cast<BlockKey>(i)) << "base " << base[0] << " block " << i;
      keys.push_back(key);
    }
    EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  }
}

// One level up: a 4x4x4 cube is eight 2x2x2 octants, each a run of 8 consecutive keys, in Z order.
TEST(BlockKey, OctantsOfAnAlignedFourCubeAreConsecutiveKeyRuns) {
  const BlockCoord base{kBlockKeyZero - 4, kBlockKeyZero + 8, kBlockKeyZero - 12};
  const BlockKey base_key = encode_block_key(base);
  for (int z = 0; z < 4; ++z)
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 4; ++x) {
        const int octant = (x / 2) + 2 * (y / 2) + 4 * (z / 2);
        const int inside = (x % 2) + 2 * (y % 2) + 4 * (z % 2);
        EXPECT_EQ(encode_block_key(plus(base, x, y, z)) - base_key,
                  static_cast<BlockKey>(8 * octant + inside));
      }
}

// Morton keys grow along every axis except across the wrap below kBlockKeyZero (the partition tests
// rely on it: the neighbour above the last block has a larger key).
TEST(BlockKey, KeyGrowsWithEachCoordinate) {
  const BlockCoord samples[] = {
      {0, 0, 0}, {-1, -1, -1}, {3, -7, 11}, {kBlockCoordMin, 5, -5}, {-65536, 65535, 0}};
  for (const BlockCoord& c : samples)
    for (int axis = 0; axis < 3; ++axis) {
      BlockCoord up = c;
      ++up[axis];
      EXPECT_LT(encode_block_key(c), encode_block_key(up)) << "axis " << axis;
    }
}

TEST(BlockKey, NeighbourOffsetsAreLexicographicWithXFastest) {
  ASSERT_EQ(neighbour_count(3), 27);
  for (int k = 0; k < 27; ++k) {
    const BlockCoord expected{k % 3 - 1, (k / 3) % 3 - 1, k / 9 - 1};
    EXPECT_EQ(neighbour_offset(3, k), expected) << "k = " << k;
  }
  EXPECT_EQ(neighbour_offset(3, 0), (BlockCoord{-1, -1, -1}));
  EXPECT_EQ(neighbour_offset(3, 1), (BlockCoord{0, -1, -1}));
  EXPECT_EQ(neighbour_offset(3, 3), (BlockCoord{-1, 0, -1}));
  EXPECT_EQ(neighbour_offset(3, 9), (BlockCoord{-1, -1, 0}));
  EXPECT_EQ(neighbour_offset(3, 13), (BlockCoord{0, 0, 0}));
  EXPECT_EQ(neighbour_offset(3, 26), (BlockCoord{1, 1, 1}));

  ASSERT_EQ(neighbour_count(2), 9);
  for (int k = 0; k < 9; ++k) {
    const BlockCoord expected{k % 3 - 1, k / 3 - 1, 0};
    EXPECT_EQ(neighbour_offset(2, k), expected) << "k = " << k;
  }
  EXPECT_EQ(neighbour_offset(2, 4), (BlockCoord{0, 0, 0}));

  // Strictly increasing in (z, y, x): every offset appears once.
  for (int d : {2, 3})
    for (int k = 1; k < neighbour_count(d); ++k) {
      const BlockCoord a = neighbour_offset(d, k - 1), b = neighbour_offset(d, k);
      EXPECT_TRUE(std::make_tuple(a[2], a[1], a[0]) < std::make_tuple(b[2], b[1], b[0]))
          << d << "D k = " << k;
    }
}

TEST(BlockKey, OppositeOfOffsetKIsOffsetCountMinusOneMinusK) {
  for (int d : {2, 3}) {
    const int K = neighbour_count(d);
    for (int k = 0; k < K; ++k) {
      const BlockCoord o = neighbour_offset(d, k);
      EXPECT_EQ(neighbour_offset(d, K - 1 - k), (BlockCoord{-o[0], -o[1], -o[2]})) << d << "D k = " << k;
      EXPECT_EQ(add(o, neighbour_offset(d, K - 1 - k)), (BlockCoord{0, 0, 0}));
    }
  }
}

}  // namespace
}  // namespace nendo
