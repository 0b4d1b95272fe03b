// The spine's promise: a particle-grid loop gives bitwise identical grid and particle values on any
// rank count, with re-balancing every few steps and particles crossing rank boundaries. Each run
// on P ranks is compared with the same loop run by rank 0 alone on MPI_COMM_SELF.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>

#include "TransferLoop.hpp"
#include "core/Mpi.hpp"
#include "core/SplitMix.hpp"
#include "support/ReferenceRun.hpp"

namespace nendo {
namespace {

Real unit(std::uint64_t id, int salt) { return (splitmix64(id * 8 + salt) >> 11) * 0x1.0p-53; }

struct Scenario {
  int dimension;
  std::uint64_t particles;
  Vec3 center;
  Real radius;
  Real swirl;
  Vec3 drift;
  int steps;
  int rebalance_every;
  Real dt = 1e-2;
  bool must_move = true;  // the partition must change and particles must cross ranks
};

// Rank r of P creates ids [rP/N, (r+1)P/N), like the scene seeder: positions are a function of id.
ParticleSet seed(const Scenario& s, int rank, int ranks) {
  ParticleSet ps(s.dimension);
  ps.add_field("velocity", FieldType::Real, s.dimension);
  ps.add_field("mass", FieldType::Real, 1);
  const std::uint64_t begin = s.particles * rank / ranks, end = s.particles * (rank + 1) / ranks;
  ps.resize(end - begin);
  const int d = s.dimension;
  for (std::uint64_t id = begin; id < end; ++id) {
    const std::size_t p = id - begin;
    ps.ids()[p] = id;
    Real* x = ps.positions() + d * p;
    for (int a = 0; a < d; ++a) x[a] = s.center[a] + s.radius * (2 * unit(id, a) - 1);
    Real* v = ps.real("velocity") + d * p;
    v[0] = -s.swirl * (x[1] - s.center[1]) + s.drift[0];
    v[1] = s.swirl * (x[0] - s.center[0]) + s.drift[1];
    if (d == 3) v[2] = s.drift[2];
    ps.real("mass")[p] = 0.5 + unit(id, 7);
  }
  return ps;
}

struct State {
  std::map<ParticleId, std::vector<Real>> particles;  // id -> x, v
  std::map<BlockKey, std::vector<Real>> grid;         // block -> node values of the last step
  int max_ranks_with_particles = 0;
};

State collect(const Space& space, const testing::StepResult& last, MPI_Comm comm) {
  const int d = space.geometry().dimension;
  const ParticleSet& ps = space.particles();
  std::vector<Real> mine;
  std::vector<std::uint64_t> ids(ps.ids(), ps.ids() + ps.size());
  for (std::size_t p = 0; p < ps.size(); ++p) {
    for (int a = 0; a < d; ++a) mine.push_back(ps.positions()[d * p + a]);
    for (int a = 0; a < d; ++a) mine.push_back(ps.real("velocity")[d * p + a]);
  }
  const GhostExchange& ghost = const_cast<Space&>(space).ghost();
  std::vector<std::uint64_t> keys = ghost.grid_keys();
  const int ranks = mpi::size(comm);
  auto gather_u64 = [&](const std::vector<std::uint64_t>& v) {
    int n = static_cast<int>(v.size());
    std::vector<int> counts(ranks), displs(ranks);
    MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
    std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), 0);
    std::vector<std::uint64_t> all(displs.back() + counts.back());
    MPI_Allgatherv(v.data(), n, MPI_UINT64_T, all.data(), counts.data(), displs.data(), MPI_UINT64_T, comm);
    return all;
  };
  auto gather_real = [&](const std::vector<Real>& v) {
    int n = static_cast<int>(v.size());
    std::vector<int> counts(ranks), displs(ranks);
    MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
    std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), 0);
    std::vector<Real> all(displs.back() + counts.back());
    MPI_Allgatherv(v.data(), n, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE, comm);
    return all;
  };
  State s;
  const auto all_ids = gather_u64(ids);
  const auto all_pv = gather_real(mine);
  for (std::size_t i = 0; i < all_ids.size(); ++i)
    s.particles[all_ids[i]] = std::vector<Real>(all_pv.begin() + 2 * d * i, all_pv.begin() + 2 * d * (i + 1));
  const auto all_keys = gather_u64(keys);
  const auto all_grid = gather_real(last.grid);
  const std::size_t per_block = all_keys.empty() ? 0 : all_grid.size() / all_keys.size();
  for (std::size_t i = 0; i < all_keys.size(); ++i) {
    EXPECT_EQ(s.grid.count(all_keys[i]), 0u) << "grid block owned twice";
    s.grid[all_keys[i]] =
        std::vector<Real>(all_grid.begin() + per_block * i, all_grid.begin() + per_block * (i + 1));
  }
  int has = ps.size() > 0;
  MPI_Allreduce(&has, &s.max_ranks_with_particles, 1, MPI_INT, MPI_SUM, comm);
  return s;
}

struct Movement {
  int rebalances_that_moved = 0;
  std::uint64_t particles_crossing = 0;
};

State run(const Scenario& s, MPI_Comm comm, Movement* movement = nullptr) {
  BlockGeometry g;
  g.dimension = s.dimension;
  g.dx = 0.05;
  g.block = 4;
  Space space(comm, g, seed(s, mpi::rank(comm), mpi::size(comm)));
  space.distribute();
  space.migration().reset_counters();
  testing::StepResult last;
  for (int step = 0; step < s.steps; ++step) {
    if (step > 0 && step % s.rebalance_every == 0) {
      const Partition before = space.partition();
      space.rebalance();
      if (movement && space.partition() != before) ++movement->rebalances_that_moved;
    }
    last = testing::transfer_step(space, s.dt, {0, -9.81, 0});
  }
  if (movement) {
    std::uint64_t sent = space.migration().particles_sent();
    MPI_Allreduce(&sent, &movement->particles_crossing, 1, MPI_UINT64_T, MPI_SUM, comm);
  }
  return collect(space, last, comm);
}

bool bitwise_equal(const std::vector<Real>& a, const std::vector<Real>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(Real)) == 0;
}

void expect_same_on_any_rank_count(const Scenario& s) {
  Movement moved;
  const State distributed = run(s, MPI_COMM_WORLD, &moved);
  State serial;
  testing::on_rank0(MPI_COMM_WORLD, [&] { serial = run(s, MPI_COMM_SELF); });
  if (mpi::rank(MPI_COMM_WORLD) != 0) return;
  ASSERT_EQ(distributed.particles.size(), s.particles);
  ASSERT_EQ(serial.particles.size(), s.particles);
  for (const auto& [id, values] : serial.particles) {
    auto it = distributed.particles.find(id);
    ASSERT_NE(it, distributed.particles.end()) << "particle " << id << " lost";
    ASSERT_TRUE(bitwise_equal(it->second, values)) << "particle " << id << " differs";
  }
  ASSERT_EQ(distributed.grid.size(), serial.grid.size());
  for (const auto& [key, values] : serial.grid) {
    auto it = distributed.grid.find(key);
    ASSERT_NE(it, distributed.grid.end()) << "grid block " << key << " missing";
    ASSERT_TRUE(bitwise_equal(it->second, values)) << "grid block " << key << " differs";
  }
  if (mpi::size(MPI_COMM_WORLD) > 1 && s.must_move) {
    EXPECT_GT(moved.rebalances_that_moved, 0) << "the scenario should move the partition";
    EXPECT_GT(moved.particles_crossing, 0u) << "the scenario should move particles across ranks";
  }
}

TEST(Determinism, SwirlingBlob3D) {
  expect_same_on_any_rank_count({3, 6000, {0.3, 0.3, 0.3}, 0.22, 6.0, {0.8, 0.0, -0.5}, 12, 3});
}

TEST(Determinism, SwirlingBlob2D) {
  expect_same_on_any_rank_count({2, 5000, {0.0, 0.0, 0.0}, 0.3, 8.0, {-1.0, 0.5, 0.0}, 15, 4});
}

// All particles in one block: every other rank owns no particles (and maybe only grid blocks).
TEST(Determinism, OneBlockLeavesRanksEmpty) {
  const Scenario s{3, 40, {0.1, 0.1, 0.1}, 0.04, 1.0, {0, 0, 0}, 4, 2, 1e-3, false};
  expect_same_on_any_rank_count(s);
  const State state = run(s, MPI_COMM_WORLD);
  EXPECT_EQ(state.max_ranks_with_particles, 1);
}

}  // namespace
}  // namespace nendo
