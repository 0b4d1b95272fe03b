// Partition: rank r owns the block keys [split_r, split_{r+1}); owner() is a binary search;
// balanced() cuts the key-ordered blocks into runs of nearly equal weight and depends only on the
// weights, not on which rank held which block before.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "GlobalView.hpp"
#include "core/Error.hpp"
#include "decomposition/Partition.hpp"

namespace nendo {
namespace {

using testing::all_gather;
using testing::hash;

const BlockKey kEnd = kBlockKeyEnd;

// The rank whose range holds key, by a linear scan: what owner() must agree with.
int owner_by_scan(const Partition& p, BlockKey key) {
  int found = -1;
  for (int r = 0; r < p.ranks(); ++r)
    if (p.begin(r) <= key && key < p.end(r)) {
      EXPECT_EQ(found, -1) << "key " << key << " in two ranges";
      found = r;
    }
  return found;
}

TEST(Partition, OwnerFindsTheRangeHoldingTheKey) {
  const Partition p({0, 10, 20, 30, kEnd});
  EXPECT_EQ(p.ranks(), 4);
  EXPECT_EQ(p.owner(0), 0);
  EXPECT_EQ(p.owner(9), 0);
  EXPECT_EQ(p.owner(10), 1);
  EXPECT_EQ(p.owner(29), 2);
  EXPECT_EQ(p.owner(30), 3);
  EXPECT_EQ(p.owner(kEnd - 1), 3);
}

TEST(Partition, OwnerSkipsEmptyRanges) {
  const Partition middle({0, 10, 10, 25, kEnd});  // rank 1 owns [10, 10)
  EXPECT_EQ(middle.owner(9), 0);
  EXPECT_EQ(middle.owner(10), 2);
  EXPECT_EQ(middle.owner(24), 2);
  EXPECT_EQ(middle.owner(25), 3);

  const Partition leading({0, 0, 0, kEnd});  // ranks 0 and 1 own nothing
  EXPECT_EQ(leading.owner(0), 2);
  EXPECT_EQ(leading.owner(123456), 2);

  const Partition trailing({0, 5, kEnd, kEnd});  // rank 2 owns nothing
  EXPECT_EQ(trailing.owner(4), 0);
  EXPECT_EQ(trailing.owner(5), 1);
  EXPECT_EQ(trailing.owner(kEnd - 1), 1);

  const Partition initial(3);  // everything on rank 0 until the first balance
  EXPECT_EQ(initial.splitters(), (std::vector<BlockKey>{0, kEnd, kEnd, kEnd}));
  EXPECT_EQ(initial.owner(0), 0);
  EXPECT_EQ(initial.owner(kEnd - 1), 0);
}

TEST(Partition, OwnerAgreesWithALinearScanForRandomSplitters) {
  for (int trial = 0; trial < 50; ++trial) {
    const int ranks = 1 + static_cast<int>(hash(trial, 1) % 9);
    std::vector<BlockKey> s{0, kEnd};
    for (int r = 1; r < ranks; ++r) s.push_back(hash(trial, 2, r) % 64 == 0 ? kEnd : hash(trial, 3, r) % 200);
    std::sort(s.begin(), s.end());
    const Partition p(s);
    for (BlockKey key = 0; key < 210; ++key) EXPECT_EQ(p.owner(key), owner_by_scan(p, key)) << "key " << key;
    EXPECT_EQ(p.owner(kEnd - 1), owner_by_scan(p, kEnd - 1));
  }
}

TEST(Partition, InvalidSplittersThrow) {
  EXPECT_THROW(Partition(std::vector<BlockKey>{0}), Error);
  EXPECT_THROW(Partition(std::vector<BlockKey>{1, kEnd}), Error);
  EXPECT_THROW(Partition(std::vector<BlockKey>{0, 7}), Error);
  EXPECT_THROW(Partition(std::vector<BlockKey>{0, 9, 5, kEnd}), Error);
}

// Keys scattered over the ranks in no order, clustered in a corner of the key space (a body that
// fills part of its key range): every rank gets an equal count, up to one key's multiplicity, and
// every rank the same splitters; a rank that holds nothing takes part.
TEST(Partition, ByCountCutsEqualCountsOfScatteredKeys) {
  const int rank = mpi::rank(MPI_COMM_WORLD), ranks = mpi::size(MPI_COMM_WORLD);
  std::vector<BlockKey> keys;
  if (rank != 1)  // rank 1 seeded nothing
    for (std::uint64_t i = 0; i < 1000; ++i)
      keys.push_back((BlockKey{1} << 40) + (i * 7919 + 31 * rank) % 3001);
  const std::vector<BlockKey> mine = keys;
  const Partition p = Partition::by_count(MPI_COMM_WORLD, keys);
  const std::vector<BlockKey> all = all_gather(MPI_COMM_WORLD, mine);
  std::vector<std::uint64_t> owned(ranks, 0);
  for (BlockKey k : all) ++owned[p.owner(k)];
  const std::uint64_t total = all.size();
  for (int r = 0; r < ranks; ++r) {
    EXPECT_LE(owned[r], total / ranks + ranks + 1) << "rank " << r;  // each key is held at most once per rank
    EXPECT_GE(owned[r] + ranks + 1, total / ranks) << "rank " << r;
  }
  std::vector<BlockKey> splitters = p.splitters(), first = splitters;
  MPI_Bcast(first.data(), static_cast<int>(first.size()), MPI_UINT64_T, 0, MPI_COMM_WORLD);
  EXPECT_EQ(splitters, first);
  std::vector<BlockKey> none;
  EXPECT_EQ(Partition::by_count(MPI_COMM_WORLD, none), Partition(ranks));
}

// Ranges of equal length: of the span = max - min + 1 keys, rank r gets the keys
// [min + span*r/P, min + span*(r+1)/P), the first rank also everything below, the last everything above.
TEST(Partition, UniformCutsEqualKeyRanges) {
  EXPECT_EQ(Partition::uniform(4, 100, 499).splitters(), (std::vector<BlockKey>{0, 200, 300, 400, kEnd}));
  EXPECT_EQ(Partition::uniform(3, 0, 9).splitters(), (std::vector<BlockKey>{0, 3, 6, kEnd}));
  EXPECT_EQ(Partition::uniform(1, 5, 50).splitters(), (std::vector<BlockKey>{0, kEnd}));
  const Partition one_key = Partition::uniform(3, 7, 7);  // span 1: the last rank gets it
  EXPECT_EQ(one_key.splitters(), (std::vector<BlockKey>{0, 7, 7, kEnd}));
  EXPECT_EQ(one_key.owner(7), 2);

  const BlockKey top = (BlockKey{1} << 63) - 1;  // the largest key
  struct Case {
    int ranks;
    BlockKey min, max;
  };
  for (const Case& c :
       {Case{4, 0, top}, Case{3, 1000, 1000 + 3 * 777 - 1}, Case{5, 12, 13}, Case{7, 99, 99 + 100}}) {
    const Partition p = Partition::uniform(c.ranks, c.min, c.max);
    const unsigned __int128 span = static_cast<unsigned __int128>(c.max - c.min) + 1;
    if (span >= static_cast<unsigned>(c.ranks)) {
      EXPECT_EQ(p.owner(c.min), 0);
    }
    EXPECT_EQ(p.owner(c.max), c.ranks - 1);
    for (int r = 0; r < c.ranks; ++r) {
      const BlockKey lo = std::max(p.begin(r), c.min);
      const BlockKey hi = r == c.ranks - 1 ? c.max + 1 : p.end(r);
      const unsigned __int128 length = hi - lo;
      EXPECT_TRUE(length == span / c.ranks || length == span / c.ranks + 1)
          << "rank " << r << " of " << c.ranks << " has " << static_cast<std::uint64_t>(length) << " keys";
    }
  }
}

// --- balanced(): collective ------------------------------------------------------------------

// The specification of balanced(), computed on one rank from the global lists: splitter r is the
// first block whose preceding weight reaches r*W/P (exactly: P*prefix >= r*W).
std::vector<BlockKey> expected_splitters(const std::vector<BlockKey>& keys,
                                         const std::vector<std::uint64_t>& w, int ranks) {
  unsigned __int128 total = 0;
  for (auto x : w) total += x;
  std::vector<BlockKey> s(ranks + 1, kEnd);
  s[0] = 0;
  if (total == 0) return s;
  for (int r = 1; r < ranks; ++r) {
    unsigned __int128 prefix = 0;
    for (std::size_t j = 0; j < keys.size(); ++j) {
      if (prefix * ranks >= total * r) {
        s[r] = keys[j];
        break;
      }
      prefix += w[j];
    }
  }
  return s;
}

struct GlobalBlocks {
  std::vector<BlockKey> keys;  // sorted, distinct
  std::vector<std::uint64_t> weights;
};

// n distinct blocks in a 16^3 region around the origin, weights from `weigh`.
template <class Weigh>
GlobalBlocks make_blocks(std::size_t n, std::uint64_t seed, Weigh weigh) {
  std::set<BlockKey> keys;
  for (std::uint64_t i = 0; keys.size() < n; ++i) {
    const std::uint64_t h = hash(seed, i);
    keys.insert(
        encode_block_key({static_cast<std::int32_t>(h % 16) - 8, static_cast<std::int32_t>((h >> 8) % 16) - 8,
                          static_cast<std::int32_t>((h >> 16) % 16) - 8}));
  }
  GlobalBlocks g{{keys.begin(), keys.end()}, {}};
  for (std::size_t j = 0; j < n; ++j) g.weights.push_back(weigh(j));
  return g;
}

// How the blocks sit on the ranks before balancing: counts[r] consecutive blocks on rank r.
std::vector<std::size_t> layout(int kind, std::size_t n, int ranks) {
  std::vector<std::size_t> counts(ranks, 0);
  switch (kind) {
    case 0:  // even
      for (int r = 0; r < ranks; ++r) counts[r] = n * (r + 1) / ranks - n * r / ranks;
      break;
    case 1:
      counts[0] = n;
      break;  // all on rank 0
    case 2:
      counts[ranks - 1] = n;
      break;    // all on the last rank
    default: {  // random cuts; with 2+ ranks rank 1 holds nothing
      std::size_t left = n;
      for (int r = 0; r < ranks - 1; ++r) {
        counts[r] = r == 1 ? 0 : std::min<std::size_t>(left, hash(kind, r) % (n / 2 + 1));
        left -= counts[r];
      }
      counts[ranks - 1] = left;
    }
  }
  return counts;
}

Partition balance_with_layout(const GlobalBlocks& g, int kind) {
  const int ranks = mpi::size(MPI_COMM_WORLD), me = mpi::rank(MPI_COMM_WORLD);
  const auto counts = layout(kind, g.keys.size(), ranks);
  std::size_t begin = 0;
  for (int r = 0; r < me; ++r) begin += counts[r];
  const std::vector<BlockKey> keys(g.keys.begin() + begin, g.keys.begin() + begin + counts[me]);
  const std::vector<std::uint64_t> w(g.weights.begin() + begin, g.weights.begin() + begin + counts[me]);
  return Partition::balanced(MPI_COMM_WORLD, keys, w);
}

// Summed weight per rank of the global blocks under p.
std::vector<std::uint64_t> rank_loads(const Partition& p, const GlobalBlocks& g) {
  std::vector<std::uint64_t> load(p.ranks(), 0);
  for (std::size_t j = 0; j < g.keys.size(); ++j) load[p.owner(g.keys[j])] += g.weights[j];
  return load;
}

void expect_balanced(const GlobalBlocks& g, const char* what) {
  const int ranks = mpi::size(MPI_COMM_WORLD);
  std::uint64_t total = 0, heaviest = 0;
  for (auto w : g.weights) total += w, heaviest = std::max(heaviest, w);
  const std::vector<BlockKey> expected = expected_splitters(g.keys, g.weights, ranks);
  for (int kind = 0; kind < 6; ++kind) {
    const Partition p = balance_with_layout(g, kind);
    // Every rank computed the same splitters.
    const auto everyone = all_gather(MPI_COMM_WORLD, p.splitters());
    for (int r = 0; r < ranks; ++r)
      EXPECT_TRUE(std::equal(p.splitters().begin(), p.splitters().end(), everyone.begin() + r * (ranks + 1)))
          << what << ": rank " << r << " disagrees";
    // A pure function of the weights: the layout before balancing does not matter.
    EXPECT_EQ(p.splitters(), expected) << what << ", layout " << kind;
    EXPECT_EQ(p.splitters().front(), 0u);
    EXPECT_EQ(p.splitters().back(), kEnd);
    EXPECT_TRUE(std::is_sorted(p.splitters().begin(), p.splitters().end())) << what;
    const auto load = rank_loads(p, g);
    const double mean = static_cast<double>(total) / ranks;
    for (int r = 0; r < ranks; ++r)
      EXPECT_LE(std::abs(static_cast<double>(load[r]) - mean), static_cast<double>(heaviest))
          << what << ", layout " << kind << ": rank " << r << " carries " << load[r] << " of " << total;
  }
}

TEST(PartitionBalanced, RandomWeightsEndWithinOneHeaviestBlockOfTheMean) {
  expect_balanced(make_blocks(300, 1, [](std::size_t j) { return 1 + hash(7, j) % 50; }), "random weights");
}

TEST(PartitionBalanced, EqualWeightsGiveEqualBlockCounts) {
  const GlobalBlocks g = make_blocks(40, 2, [](std::size_t) { return 3; });
  expect_balanced(g, "equal weights");
  const int ranks = mpi::size(MPI_COMM_WORLD);
  const auto load = rank_loads(balance_with_layout(g, 0), g);
  // Rank r starts at block ceil(40 r / P).
  auto first = [&](int r) { return (40 * r + ranks - 1) / ranks; };
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(load[r], 3u * (first(r + 1) - first(r))) << "rank " << r;
}

TEST(PartitionBalanced, ZeroWeightBlocksAndHeavyBlocks) {
  expect_balanced(make_blocks(120, 3, [](std::size_t j) { return j % 3 == 0 ? 0 : (j % 17 == 1 ? 400 : 5); }),
                  "zero and heavy blocks");
}

// One block outweighs all others: the ranks between it and the rest own nothing.
TEST(PartitionBalanced, ADominantBlockLeavesRanksEmpty) {
  const GlobalBlocks g = make_blocks(3, 4, [](std::size_t j) { return j == 0 ? 1000 : 1; });
  expect_balanced(g, "dominant block");
  const int ranks = mpi::size(MPI_COMM_WORLD);
  const Partition p = balance_with_layout(g, 2);
  EXPECT_EQ(p.owner(g.keys[0]), 0);
  // Blocks 1 and 2 start at prefix 1000 and 1001 of 1002: floor(P * 1000 / 1002) = P - 1 for P <= 4.
  EXPECT_EQ(p.owner(g.keys[1]), ranks - 1);
  EXPECT_EQ(p.owner(g.keys[2]), ranks - 1);
  if (ranks >= 3) {
    EXPECT_EQ(rank_loads(p, g)[1], 0u) << "rank 1 should own no weight";
  }
}

TEST(PartitionBalanced, FewerBlocksThanRanks) {
  const GlobalBlocks g = make_blocks(1, 5, [](std::size_t) { return 9; });
  expect_balanced(g, "one block");
  const Partition p = balance_with_layout(g, 3);
  EXPECT_EQ(p.owner(g.keys[0]), 0);
}

TEST(PartitionBalanced, NoWeightGivesEverythingToRankZero) {
  const int ranks = mpi::size(MPI_COMM_WORLD);
  const Partition initial(ranks);
  EXPECT_EQ(Partition::balanced(MPI_COMM_WORLD, {}, {}), initial) << "no blocks anywhere";
  const GlobalBlocks g = make_blocks(25, 6, [](std::size_t) { return 0; });
  for (int kind = 0; kind < 4; ++kind) {
    const Partition p = balance_with_layout(g, kind);
    EXPECT_EQ(p, initial) << "zero total weight, layout " << kind;
    EXPECT_EQ(p.owner(g.keys.front()), 0);
    EXPECT_EQ(p.owner(g.keys.back()), 0);
  }
}

}  // namespace
}  // namespace nendo
