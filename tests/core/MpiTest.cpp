// The helpers of core/Mpi.hpp and core/CollectiveError.hpp on 1-4 ranks: rank r contributes r
// values (rank 0 none), so every rank count has a rank that owns nothing.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "core/CollectiveError.hpp"
#include "core/Mpi.hpp"

namespace nendo {
namespace {

struct Record {  // a trivially copyable struct of mixed widths, as the methods gather
  std::int64_t key;
  double value;
  std::int32_t rank;
};

TEST(Mpi, AllGatherPutsEveryRanksValuesInRankOrderOnEveryRank) {
  const int rank = mpi::rank(MPI_COMM_WORLD), ranks = mpi::size(MPI_COMM_WORLD);
  std::vector<Record> mine;
  for (int i = 0; i < rank; ++i) mine.push_back({100 * rank + i, 0.5 * rank + i, rank});
  const std::vector<Record> all = mpi::all_gather(mine, MPI_COMM_WORLD);
  std::vector<Record> expected;
  for (int r = 0; r < ranks; ++r)
    for (int i = 0; i < r; ++i) expected.push_back({100 * r + i, 0.5 * r + i, r});
  ASSERT_EQ(all.size(), expected.size());
  for (std::size_t k = 0; k < all.size(); ++k) {
    EXPECT_EQ(all[k].key, expected[k].key);
    EXPECT_EQ(all[k].value, expected[k].value);
    EXPECT_EQ(all[k].rank, expected[k].rank);
  }
}

TEST(Mpi, AllGatherOfNothingIsEmptyEverywhere) {
  EXPECT_TRUE(mpi::all_gather(std::vector<double>{}, MPI_COMM_WORLD).empty());
}

TEST(CollectiveError, TheLowestFailingRanksMessageReachesEveryRank) {
  const int rank = mpi::rank(MPI_COMM_WORLD), ranks = mpi::size(MPI_COMM_WORLD);
  EXPECT_NO_THROW(raise_collectively(MPI_COMM_WORLD, ""));
  // the last rank and (with 3 or more ranks) rank 1 fail: rank 1's message, or the last rank's
  const std::string mine = rank == ranks - 1 || rank == 1 ? "rank " + std::to_string(rank) + " failed" : "";
  const int first = ranks > 1 ? 1 : 0;
  try {
    raise_collectively(MPI_COMM_WORLD, mine);
    FAIL() << "no rank threw";
  } catch (const CollectiveError& e) {
    EXPECT_EQ(std::string(e.what()), "rank " + std::to_string(first) + " failed");
  }
}

}  // namespace
}  // namespace nendo
