// Load balance by counted and by measured weights: a space of evenly spread particles is balanced
// by count, and stays so; when rank 0 reports its work three times as costly per particle (a
// costlier material, more neighbours), the time weights move blocks off it until the loads are
// even again — counting the moved blocks at the cost they carry with them; the particles all
// survive the move. Run on 1-4 ranks; rank 0 starts with every particle. distribute() moves each
// particle once, straight to the balanced partition (issue 34), the one that moving them to a
// key-range partition first and balancing there gives.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/Mpi.hpp"
#include "decomposition/Space.hpp"

namespace nendo {
namespace {

constexpr int kSide = 64;  // particles per axis of a 2-D lattice, one per cell: 16 x 16 blocks of 4

std::unique_ptr<Space> lattice(MPI_Comm comm) {
  BlockGeometry g;
  g.dimension = 2, g.dx = 1.0, g.block = 4;
  ParticleSet ps(2);
  if (mpi::rank(comm) == 0) {
    ps.resize(kSide * kSide);
    for (int i = 0; i < kSide * kSide; ++i) {
      ps.ids()[i] = static_cast<ParticleId>(i);
      ps.positions()[2 * i] = i % kSide + 0.5, ps.positions()[2 * i + 1] = i / kSide + 0.5;
    }
  }
  auto space = std::make_unique<Space>(comm, g, std::move(ps));
  space->distribute();
  return space;
}

std::uint64_t total(MPI_Comm comm, std::uint64_t local) {
  MPI_Allreduce(MPI_IN_PLACE, &local, 1, MPI_UINT64_T, MPI_SUM, comm);
  return local;
}

TEST(LoadBalance, TimedWeightsSumToTheMeasuredNanoseconds) {
  const std::vector<std::uint64_t> counted{10, 30, 0, 60};
  const std::vector<std::uint64_t> timed = timed_weights(counted, 2.0);
  EXPECT_EQ(timed, (std::vector<std::uint64_t>{200000000, 600000000, 0, 1200000000}));
  EXPECT_EQ(timed_weights(counted, 0.0), counted) << "nothing measured: the count stands";
  EXPECT_EQ(timed_weights({0, 0}, 1.0), (std::vector<std::uint64_t>{0, 0}));
}

TEST(LoadBalance, ASlowRankHandsOverBlocksByTime) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int ranks = mpi::size(comm), rank = mpi::rank(comm);
  const std::unique_ptr<Space> owned = lattice(comm);
  Space& space = *owned;
  const std::uint64_t n = kSide * kSide, even = n / ranks;
  ASSERT_EQ(total(comm, space.particles().size()), n);
  // Counted: balanced by distribute(), so no re-balance is due.
  EXPECT_NEAR(static_cast<double>(space.particles().size()), static_cast<double>(even), 0.1 * even);
  EXPECT_FALSE(space.maybe_rebalance(100, {100, 1.1, false}));

  // Measured: every rank worked 1 ns per particle, rank 0 three.
  const int slow = ranks > 1 ? 0 : -1;
  const Partition before = space.partition();
  const double work = 1e-9 * (rank == slow ? 3.0 : 1.0) * static_cast<double>(space.particles().size());
  EXPECT_FALSE(space.maybe_rebalance(99, {100, 1.1, true}, work)) << "not a check step";
  EXPECT_EQ(space.maybe_rebalance(100, {100, 1.1, true}, work), ranks > 1);
  ASSERT_EQ(total(comm, space.particles().size()), n) << "particles lost in the move";

  // The cost is the blocks': those that were on rank 0 cost 3 wherever they are now. Each rank's
  // load is even to within a block (16 particles, cost up to 48) and 5 %.
  double load = 0;
  for (std::size_t p = 0; p < space.particles().size(); ++p)
    load += before.owner(space.geometry().key_of(&space.particles().positions()[2 * p])) == slow ? 3.0 : 1.0;
  double sum = load;
  MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, comm);
  const double even_load = sum / ranks;
  EXPECT_NEAR(load, even_load, 0.05 * even_load + 48) << "rank " << rank;
  if (rank == slow) {
    EXPECT_LT(static_cast<double>(space.particles().size()), 0.75 * even) << "kept its blocks";
  }
  for (std::size_t p = 0; p < space.particles().size(); ++p)
    ASSERT_EQ(space.partition().owner(space.geometry().key_of(&space.particles().positions()[2 * p])), rank);
}

// A long strip of particles split by index, as seeding splits a lattice: its key range is uneven,
// so the provisional key-range partition is not the balanced one.
std::unique_ptr<Space> strip(MPI_Comm comm, const std::vector<Real>& positions) {
  BlockGeometry g;
  g.dimension = 2, g.dx = 1.0, g.block = 4;
  const std::size_t n = positions.size() / 2, rank = mpi::rank(comm), ranks = mpi::size(comm);
  const std::size_t first = n * rank / ranks, last = n * (rank + 1) / ranks;
  ParticleSet ps(2);
  ps.resize(last - first);
  for (std::size_t i = first; i < last; ++i) {
    ps.ids()[i - first] = static_cast<ParticleId>(i);
    std::copy_n(&positions[2 * i], 2, ps.positions() + 2 * (i - first));
  }
  return std::make_unique<Space>(comm, g, std::move(ps));
}

TEST(LoadBalance, DistributeMovesEachParticleOnceToTheBalancedPartition) {
  MPI_Comm comm = MPI_COMM_WORLD;
  std::vector<Real> positions;
  for (int j = 0; j < 6; ++j)
    for (int i = 0; i < 200; ++i) positions.insert(positions.end(), {i + 0.5, j + 0.5});
  // The partition of the earlier two-step start: a key-range partition, then balanced there.
  const std::unique_ptr<Space> two_step = strip(comm, positions);
  {
    std::vector<BlockKey> keys = two_step->blocks().keys;
    BlockKey lo = keys.empty() ? kBlockKeyEnd : keys.front(), hi = keys.empty() ? 0 : keys.back();
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, comm);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, comm);
    two_step->distribute(Partition::uniform(mpi::size(comm), lo, hi));
    two_step->rebalance();
  }
  const std::unique_ptr<Space> space = strip(comm, positions);
  space->distribute();
  EXPECT_TRUE(space->partition() == two_step->partition());
  EXPECT_EQ(total(comm, space->particles().size()), positions.size() / 2);
  EXPECT_LE(total(comm, space->migration().particles_sent()), positions.size() / 2);
  // Started on their owners, the particles stay there: none visits a key-range owner.
  const std::unique_ptr<Space> again = std::make_unique<Space>(comm, space->geometry(), space->particles());
  again->distribute();
  EXPECT_TRUE(again->partition() == space->partition());
  EXPECT_EQ(total(comm, again->migration().particles_sent()), 0u);
}

}  // namespace
}  // namespace nendo
