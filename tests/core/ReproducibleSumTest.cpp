// Reproducible global sums (core/ReproducibleSum.hpp) on 1-4 ranks: the same terms dealt to the
// ranks in different ways and orders give the same bits as one process summing them in yet
// another order, close to the exact sum; non-finite terms propagate.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "core/Mpi.hpp"
#include "core/ReproducibleSum.hpp"

namespace nendo {
namespace {

// 20,000 terms over 30 orders of magnitude, both signs, with cancellation.
std::vector<double> all_terms() {
  std::mt19937_64 random(42);
  std::uniform_real_distribution<double> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-20, 10);
  std::vector<double> terms(20000);
  for (double& t : terms) t = std::ldexp(mantissa(random), exponent(random));
  terms[17] = 1e10, terms[18] = -1e10;  // cancels exactly
  return terms;
}

std::uint64_t bits(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, 8);
  return b;
}

TEST(ReproducibleSum, DoesNotDependOnTheSplitOrTheOrder) {
  const int rank = mpi::rank(MPI_COMM_WORLD), ranks = mpi::size(MPI_COMM_WORLD);
  const std::vector<double> terms = all_terms();
  // Rank r takes every term i with i % (ranks + 1) mapped to r (the last residue to rank 0, so
  // rank 0 gets two shares and on 4 ranks rank 3 ... every rank some), in reverse order.
  std::vector<std::vector<double>> mine(2);
  for (std::size_t i = terms.size(); i-- > 0;) {
    const int owner = static_cast<int>(i % (ranks + 1)) % ranks;
    if (owner == rank) mine[0].push_back(terms[i]), mine[1].push_back(-2 * terms[i]);
  }
  const std::vector<double> split = reproducible_sums(MPI_COMM_WORLD, mine);

  std::vector<double> shuffled = terms;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937_64(7));
  std::vector<std::vector<double>> alone(2);
  for (double t : shuffled) alone[0].push_back(t), alone[1].push_back(-2 * t);
  const std::vector<double> serial = reproducible_sums(MPI_COMM_SELF, alone);
  EXPECT_EQ(bits(split[0]), bits(serial[0]));
  EXPECT_EQ(bits(split[1]), bits(serial[1]));

  long double exact = 0;  // sorted by magnitude in extended precision: a close reference
  std::vector<double> sorted = terms;
  std::sort(sorted.begin(), sorted.end(), [](double a, double b) { return std::fabs(a) < std::fabs(b); });
  for (double t : sorted) exact += t;
  EXPECT_NEAR(split[0], static_cast<double>(exact), 1e-12 * std::fabs(static_cast<double>(exact)));
  EXPECT_EQ(bits(split[1]), bits(-2 * split[0]));  // scaling by -2 is exact all the way through
}

TEST(ReproducibleSum, EmptyRanksZeroAndNonFiniteTerms) {
  const int rank = mpi::rank(MPI_COMM_WORLD);
  std::vector<std::vector<double>> columns(3);
  if (rank == 0) columns[1] = {1.5, std::numeric_limits<double>::quiet_NaN()};
  if (rank == 0) columns[2] = {std::numeric_limits<double>::infinity(), 2.0};
  const std::vector<double> sums = reproducible_sums(MPI_COMM_WORLD, columns);
  EXPECT_EQ(sums[0], 0.0);
  EXPECT_TRUE(std::isnan(sums[1]));
  EXPECT_TRUE(std::isinf(sums[2]));
}

}  // namespace
}  // namespace nendo
