// ParticleMigration: after particles move, every particle lives exactly once, on the rank that owns
// its block, with all its fields, and each rank's particles are sorted by (block key, id).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "GlobalView.hpp"
#include "decomposition/ParticleMigration.hpp"

namespace nendo {
namespace {

using testing::all_gather;
using testing::Cut;
using testing::hash;
using testing::unit;

BlockGeometry geometry(int dimension) {
  BlockGeometry g;
  g.dimension = dimension;
  g.dx = 0.1;
  g.block = 4;
  g.origin = {-0.35, 0.2, 0.05};
  return g;
}

// `count` particles created on this rank with scrambled ids, one field of every type, positions in
// a box that straddles the origin (negative block coordinates included).
ParticleSet seed(int dimension, std::size_t count, std::uint64_t first_index) {
  ParticleSet ps(dimension);
  ps.add_field("velocity", FieldType::Real, dimension);
  ps.add_field("material", FieldType::Int32, 1);
  ps.add_field("cell", FieldType::Int32, 2);
  ps.add_field("parent", FieldType::UInt64, 1);
  ps.resize(count);
  for (std::size_t p = 0; p < count; ++p) {
    const std::uint64_t index = first_index + p;
    ps.ids()[p] = testing::splitmix(index);  // a bijection: unique, unrelated to position
    for (int a = 0; a < dimension; ++a) {
      ps.positions()[dimension * p + a] = -1.6 + 3.2 * unit(index, a);
      ps.real("velocity")[dimension * p + a] = unit(index, 10 + a) - 0.5;
    }
    ps.int32("material")[p] = static_cast<std::int32_t>(hash(index, 20) % 7) - 3;
    ps.int32("cell")[2 * p] = static_cast<std::int32_t>(index);
    ps.int32("cell")[2 * p + 1] = -static_cast<std::int32_t>(index);
    ps.uint64("parent")[p] = hash(index, 21);
  }
  return ps;
}

// Every particle of every rank: id -> (rank, packed bytes of all fields).
struct Census {
  std::map<ParticleId, std::pair<int, Bytes>> particles;
  std::size_t duplicates = 0;
};

Census census(const ParticleSet& ps, MPI_Comm comm) {
  std::vector<std::size_t> all_indices(ps.size());
  for (std::size_t p = 0; p < ps.size(); ++p) all_indices[p] = p;
  Bytes packed;
  ps.pack(all_indices.data(), all_indices.size(), packed);
  const Bytes every = all_gather(comm, packed);
  const auto counts = all_gather(comm, std::vector<std::uint64_t>{ps.size()});
  const std::size_t stride = ps.bytes_per_particle();
  Census c;
  std::size_t at = 0;
  for (int r = 0; r < static_cast<int>(counts.size()); ++r)
    for (std::uint64_t i = 0; i < counts[r]; ++i, at += stride) {
      ParticleId id;
      std::memcpy(&id, every.data() + at, sizeof(id));  // "id" is the first field
      const bool inserted =
          c.particles.emplace(id, std::make_pair(r, Bytes(every.begin() + at, every.begin() + at + stride)))
              .second;
      if (!inserted) ++c.duplicates;
    }
  return c;
}

// Moves every particle by up to 1.5 blocks per axis (or, with `drift` false, not at all); one in
// 50 jumps anywhere in the box.
void move(ParticleSet& ps, const BlockGeometry& g, int step, bool drift = true) {
  const int d = ps.dimension();
  const Real reach = drift ? 1.5 * g.block * g.dx : 0;
  for (std::size_t p = 0; p < ps.size(); ++p) {
    const ParticleId id = ps.ids()[p];
    const bool jump = hash(id, step, 1) % 50 == 0;
    for (int a = 0; a < d; ++a) {
      Real& x = ps.positions()[d * p + a];
      x = jump ? -1.6 + 3.2 * unit(id, step, a) : x + reach * (2 * unit(id, step, 10 + a) - 1);
    }
    ps.real("velocity")[d * p] += 1;  // fields change between migrations too
  }
}

std::vector<BlockKey> global_block_keys(const ParticleSet& ps, const BlockGeometry& g, MPI_Comm comm) {
  std::vector<BlockKey> mine;
  for (std::size_t p = 0; p < ps.size(); ++p) mine.push_back(g.key_of(ps.positions() + ps.dimension() * p));
  auto all = all_gather(comm, mine);
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

// The partition of migration step `step`: balanced, or a cut that leaves a rank with nothing.
Partition partition_for(int step, const ParticleSet& ps, const BlockGeometry& g, MPI_Comm comm) {
  const int ranks = mpi::size(comm);
  const auto keys = global_block_keys(ps, g, comm);
  switch (step % 5) {
    case 0:
      return testing::cut_keys(keys, ranks, Cut::AllOnRankZero);
    case 1:
      return testing::cut_keys(keys, ranks, Cut::LastRankEmpty);
    case 2:
      return testing::cut_keys(keys, ranks, Cut::FirstRankEmpty);
    case 3:
      return keys.empty() ? Partition(ranks) : Partition::uniform(ranks, keys.front(), keys.back());
    default: {
      std::vector<BlockKey> mine;
      std::vector<std::uint64_t> weights;
      const int me = mpi::rank(comm);
      for (std::size_t j = 0; j < keys.size(); ++j)  // keys in rank order: an even cut by count
        if (static_cast<int>(j * ranks / keys.size()) == me)
          mine.push_back(keys[j]), weights.push_back(1 + j % 3);
      return Partition::balanced(comm, mine, weights);
    }
  }
}

// Checks one rank's particles and blocks after migrate(); compares with the census taken before.
void expect_migrated(const ParticleSet& ps, const ParticleBlocks& blocks, const BlockGeometry& g,
                     const Partition& partition, const Census& before, const Census& after,
                     std::uint64_t sent, const std::string& what) {
  const int me = mpi::rank(MPI_COMM_WORLD);
  const int d = ps.dimension();
  // Globally: every particle once, with every field bit for bit as before.
  EXPECT_EQ(after.duplicates, 0u) << what;
  EXPECT_EQ(after.particles.size(), before.particles.size()) << what;
  std::uint64_t expected_sent = 0;
  for (const auto& [id, was] : before.particles) {
    auto it = after.particles.find(id);
    if (it == after.particles.end()) {
      ADD_FAILURE() << what << ": particle " << id << " lost";
      continue;
    }
    EXPECT_EQ(it->second.second, was.second) << what << ": fields of particle " << id << " changed";
    Real x[3] = {0, 0, 0};
    std::memcpy(x, was.second.data() + sizeof(ParticleId), sizeof(Real) * d);
    const int owner = partition.owner(g.key_of(x));
    EXPECT_EQ(it->second.first, owner) << what << ": particle " << id << " is not on the owner of its block";
    expected_sent += was.first != owner;
  }
  EXPECT_EQ(sent, expected_sent) << what << ": particles that changed rank";

  // Locally: sorted by (block key, id), blocks consistent with the particles.
  ASSERT_EQ(blocks.offsets.size(), blocks.keys.size() + 1) << what;
  EXPECT_EQ(blocks.offsets.front(), 0u) << what;
  EXPECT_EQ(blocks.offsets.back(), ps.size()) << what;
  for (std::size_t b = 0; b < blocks.count(); ++b) {
    EXPECT_EQ(partition.owner(blocks.keys[b]), me) << what;
    EXPECT_LT(blocks.begin(b), blocks.end(b)) << what << ": empty block " << b;
    if (b > 0) {
      EXPECT_LT(blocks.keys[b - 1], blocks.keys[b]) << what;
    }
    for (std::size_t p = blocks.begin(b); p < blocks.end(b); ++p) {
      EXPECT_EQ(g.key_of(ps.positions() + d * p), blocks.keys[b])
          << what << ": particle " << p << " in block " << b;
      if (p > blocks.begin(b)) {
        EXPECT_LT(ps.ids()[p - 1], ps.ids()[p]) << what << ": ids not increasing";
      }
    }
  }
}

void run_migrations(int dimension, std::size_t particles_per_rank, bool only_last_rank_seeds) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int me = mpi::rank(comm), ranks = mpi::size(comm);
  const BlockGeometry g = geometry(dimension);
  const bool seeds = !only_last_rank_seeds || me == ranks - 1;
  ParticleSet ps = seed(dimension, seeds ? particles_per_rank : 0, 1'000'000ull * me);
  ParticleMigration migration(comm);
  for (int step = 0; step < 10; ++step) {
    if (step > 0) move(ps, g, step);
    const Partition partition = partition_for(step, ps, g, comm);
    const Census before = census(ps, comm);
    migration.reset_counters();
    const ParticleBlocks blocks = migration.migrate(ps, g, partition);
    const Census after = census(ps, comm);
    std::uint64_t sent = migration.particles_sent(), total_sent = 0;
    MPI_Allreduce(&sent, &total_sent, 1, MPI_UINT64_T, MPI_SUM, comm);
    const int holding = testing::count_ranks(comm, ps.size() > 0);
    const std::string what = std::to_string(dimension) + "D step " + std::to_string(step);
    expect_migrated(ps, blocks, g, partition, before, after, total_sent, what);
    if (ranks > 1 && particles_per_rank > 0 && step % 5 < 3) {
      EXPECT_LT(holding, ranks) << what << ": the partition should leave a rank without particles";
    }
  }
}

TEST(ParticleMigration, EveryParticleEndsOnceOnItsOwnerWithItsFields3D) { run_migrations(3, 700, false); }

TEST(ParticleMigration, EveryParticleEndsOnceOnItsOwnerWithItsFields2D) { run_migrations(2, 500, false); }

// Like a time step: a fixed partition and 2 % of the particles jumping, so fewer than an eighth of
// a rank's particles leave and the arrivals are written over the slots of those sent away.
TEST(ParticleMigration, AFewParticlesLeavingPerStepAreReplacedInPlace) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const BlockGeometry g = geometry(3);
  ParticleSet ps = seed(3, 2000, 1'000'000ull * mpi::rank(comm));
  ParticleMigration migration(comm);
  const Partition partition = partition_for(4, ps, g, comm);
  for (int step = 0; step < 6; ++step) {
    if (step > 0) move(ps, g, step, false);
    const Census before = census(ps, comm);
    migration.reset_counters();
    const std::size_t had = ps.size();
    const ParticleBlocks blocks = migration.migrate(ps, g, partition);
    std::uint64_t sent = migration.particles_sent(), total_sent = 0;
    if (step > 0) {
      EXPECT_LE(8 * sent, had) << "step " << step << " should not be a bulk redistribution";
    }
    MPI_Allreduce(&sent, &total_sent, 1, MPI_UINT64_T, MPI_SUM, comm);
    expect_migrated(ps, blocks, g, partition, before, census(ps, comm), total_sent,
                    "step " + std::to_string(step));
  }
}

// Every field of `ps`, bit for bit, and its blocks equal those of a from-scratch (block, id) sort of
// the same particles given in reverse order.
void expect_as_sorted_afresh(const ParticleSet& ps, const ParticleBlocks& blocks, const BlockGeometry& g,
                             const std::string& what) {
  ParticleSet fresh = ps;
  std::vector<std::size_t> reversed(ps.size());
  for (std::size_t p = 0; p < ps.size(); ++p) reversed[p] = ps.size() - 1 - p;
  fresh.reorder(reversed);
  const ParticleBlocks fresh_blocks = sort_by_block(fresh, g);
  EXPECT_EQ(blocks.keys, fresh_blocks.keys) << what;
  EXPECT_EQ(blocks.offsets, fresh_blocks.offsets) << what;
  ASSERT_EQ(fresh.size(), ps.size()) << what;
  for (std::size_t f = 0; f < ps.fields().size(); ++f) {
    const std::size_t bytes = ps.fields()[f].bytes_per_particle() * ps.size();
    if (bytes == 0) continue;  // a rank that owns nothing: memcmp must not see its null pointers
    EXPECT_EQ(std::memcmp(ps.fields()[f].raw(), fresh.fields()[f].raw(), bytes), 0)
        << what << ": field " << ps.fields()[f].name();
  }
}

// Every rank's particle with the lowest id jumps to where the next rank's first particle sits (an
// existing block of that rank); a few more step to a neighbouring block, some on, some off the rank.
void move_a_few(ParticleSet& ps, const BlockGeometry& g, int step, MPI_Comm comm) {
  const int d = ps.dimension(), me = mpi::rank(comm), ranks = mpi::size(comm);
  std::vector<Real> first(3, std::numeric_limits<Real>::quiet_NaN());
  if (ps.size() > 0) std::copy_n(ps.positions(), d, first.begin());
  const std::vector<Real> firsts = all_gather(comm, first);
  const Real* target = &firsts[3 * ((me + 1) % ranks)];
  if (ps.size() > 0 && !std::isnan(target[0])) {
    const std::size_t lowest = std::min_element(ps.ids(), ps.ids() + ps.size()) - ps.ids();
    std::copy_n(target, d, ps.positions() + d * lowest);
  }
  for (std::size_t p = 0; p < ps.size(); ++p) {
    if (hash(ps.ids()[p], step, 2) % 100 != 0) continue;
    for (int a = 0; a < d; ++a)
      ps.positions()[d * p + a] += g.block * g.dx * (2 * unit(ps.ids()[p], step, a) - 1);
  }
}

// A step moves only what changed block: the result is still exactly the (block key, id) sort, and a
// step where no particle changed block touches no particle at all.
void expect_moves_only_what_changed(int cut) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const BlockGeometry g = geometry(3);
  ParticleSet ps = seed(3, 2000, 1'000'000ull * mpi::rank(comm));
  ParticleMigration migration(comm);
  const Partition partition = partition_for(cut, ps, g, comm);
  migration.migrate(ps, g, partition);
  for (int step = 1; step < 8; ++step) {
    const std::string what = "cut " + std::to_string(cut) + " step " + std::to_string(step);
    const bool still = step % 3 == 1;
    if (still) {
      for (std::size_t p = 0; p < ps.size(); ++p) ps.real("velocity")[3 * p] += 1;
    } else {
      move_a_few(ps, g, step, comm);
    }
    const std::uint64_t layout = ps.layout();
    std::vector<const void*> data;
    for (const ParticleField& f : ps.fields()) data.push_back(f.raw());
    const Census before = census(ps, comm);
    migration.reset_counters();
    const ParticleBlocks blocks = migration.migrate(ps, g, partition);
    std::uint64_t sent = migration.particles_sent(), total_sent = 0;
    MPI_Allreduce(&sent, &total_sent, 1, MPI_UINT64_T, MPI_SUM, comm);
    expect_migrated(ps, blocks, g, partition, before, census(ps, comm), total_sent, what);
    expect_as_sorted_afresh(ps, blocks, g, what);
    if (still) {
      EXPECT_EQ(ps.layout(), layout) << what << ": particles were moved";
      for (std::size_t f = 0; f < ps.fields().size(); ++f) EXPECT_EQ(ps.fields()[f].raw(), data[f]) << what;
    } else if (cut == 4 && mpi::size(comm) > 1) {
      EXPECT_GT(total_sent, 0u) << what << ": some particle should have changed rank";
    }
  }
}

TEST(ParticleMigration, AStepMovesOnlyWhatChangedBlockAndStaysSortedByBlockAndId) {
  expect_moves_only_what_changed(4);  // balanced
  expect_moves_only_what_changed(1);  // the last rank owns nothing
}

// Particles removed and added between migrations (as by an emitter) leave the old sort void, also
// when the count comes out the same: one particle of the last block replaced by another there with
// a lower id must not be taken for a particle that stayed in that block.
TEST(ParticleMigration, ParticlesAddedOrRemovedBetweenMigrationsAreSorted) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int me = mpi::rank(comm);
  const BlockGeometry g = geometry(3);
  ParticleSet ps = seed(3, 600, 1'000'000ull * me);
  for (std::size_t p = 0; p < 3 * ps.size(); ++p) ps.positions()[p] *= 0.3;  // ~20 per block
  ParticleMigration migration(comm);
  const Partition partition = partition_for(4, ps, g, comm);
  ParticleBlocks blocks = migration.migrate(ps, g, partition);
  for (std::size_t added = 1; added <= 2; ++added) {
    const std::string what = std::to_string(added) + " added";
    if (blocks.count() == 0) continue;
    std::vector<bool> keep(ps.size(), true);
    keep[blocks.begin(blocks.count() - 1)] = false;
    ps.compact(keep);
    const std::size_t n = ps.size();
    ps.resize(n + added);
    for (std::size_t p = n; p < n + added; ++p) {
      ps.ids()[p] = 10 * me + p - n + added;  // below the ids of seed(), splitmix of large indices
      std::copy_n(ps.positions() + 3 * (n - 1), 3, ps.positions() + 3 * p);
    }
    blocks = migration.migrate(ps, g, partition);
    expect_as_sorted_afresh(ps, blocks, g, what);
  }
}

// All particles start on the last rank, which some partitions leave empty.
TEST(ParticleMigration, ParticlesSeededOnOneRankSpreadOut) { run_migrations(3, 900, true); }

TEST(ParticleMigration, NoParticlesAnywhere) {
  const BlockGeometry g = geometry(3);
  ParticleSet ps = seed(3, 0, 0);
  ParticleMigration migration(MPI_COMM_WORLD);
  const ParticleBlocks blocks = migration.migrate(ps, g, Partition(mpi::size(MPI_COMM_WORLD)));
  EXPECT_EQ(ps.size(), 0u);
  EXPECT_TRUE(blocks.keys.empty());
  EXPECT_EQ(blocks.offsets, (std::vector<std::size_t>{0}));
  EXPECT_EQ(migration.particles_sent(), 0u);
  EXPECT_EQ(migration.bytes_sent(), 0u);
}

// A position that no block can hold stops every rank alike, naming the lowest such id, before any
// particle moves; NaN or inf is told apart from a position that flew past the domain.
void expect_stray(double bad, const std::string& problem) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int me = mpi::rank(comm), ranks = mpi::size(comm);
  const BlockGeometry g = geometry(3);
  ParticleSet ps = seed(3, me == 0 && ranks > 1 ? 0 : 200, 1'000'000ull * me);  // rank 0 owns none
  ParticleId lowest = std::numeric_limits<ParticleId>::max();
  for (std::size_t p = 0; p < ps.size(); p += 37) {  // a few on every rank that has particles
    ps.positions()[3 * p + 1] = bad;
    lowest = std::min(lowest, ps.ids()[p]);
  }
  MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_UINT64_T, MPI_MIN, comm);
  const std::vector<std::uint64_t> before(ps.ids(), ps.ids() + ps.size());
  ParticleMigration migration(comm);
  try {
    migration.migrate(ps, g,
                      Partition::uniform(ranks, encode_block_key({-5, -5, -5}), encode_block_key({5, 5, 5})));
    ADD_FAILURE() << "no error for a position of " << bad;
  } catch (const StrayParticleError& e) {
    EXPECT_EQ(e.id(), lowest);
    EXPECT_EQ(e.problem(), problem);
    EXPECT_EQ(std::string(e.what()), "particle " + std::to_string(lowest) + " has a " + problem);
  }
  EXPECT_EQ(std::vector<std::uint64_t>(ps.ids(), ps.ids() + ps.size()), before) << "particles moved";
}

TEST(ParticleMigration, ANonFinitePositionStopsEveryRank) {
  expect_stray(std::numeric_limits<double>::quiet_NaN(), "non-finite position");
  expect_stray(-std::numeric_limits<double>::infinity(), "non-finite position");
}

TEST(ParticleMigration, APositionPastTheAddressableDomainStopsEveryRank) {
  expect_stray(1e12, "position outside the addressable domain (±2^20 blocks per axis)");
}

// All particles in one block: one rank holds them all, wherever they started.
TEST(ParticleMigration, OneBlockGoesToOneRank) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int me = mpi::rank(comm), ranks = mpi::size(comm);
  const BlockGeometry g = geometry(3);
  ParticleSet ps = seed(3, 50, 1000 * me);
  for (std::size_t p = 0; p < ps.size(); ++p)
    for (int a = 0; a < 3; ++a)
      ps.positions()[3 * p + a] = g.origin[a] + 0.38 * unit(ps.ids()[p], a);  // block (0,0,0)
  // The last rank owns the block (and everything above it); rank 0 everything below; the rest nothing.
  const BlockKey key = encode_block_key({0, 0, 0});
  std::vector<BlockKey> splitters(ranks + 1, key);
  splitters.front() = 0;
  splitters.back() = kBlockKeyEnd;
  const Partition partition(splitters);
  ParticleMigration migration(comm);
  const ParticleBlocks blocks = migration.migrate(ps, g, partition);
  const bool owner = me == ranks - 1;
  EXPECT_EQ(ps.size(), owner ? 50u * ranks : 0u);
  EXPECT_EQ(blocks.count(), owner ? 1u : 0u);
  if (owner) {
    EXPECT_EQ(blocks.keys[0], key);
    EXPECT_EQ(blocks.particles(0), 50u * ranks);
  }
  EXPECT_EQ(migration.particles_sent(), owner ? 0u : 50u);
}

}  // namespace
}  // namespace nendo
