// ParticleHalo: every rank sees, owned or as a halo copy, every particle within one cell (one
// kernel support) of each of its particles; halo copies are exact copies of other ranks' particles,
// and update() refreshes the chosen fields from their owners.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "GlobalView.hpp"
#include "decomposition/ParticleHalo.hpp"
#include "decomposition/ParticleMigration.hpp"
#include "decomposition/Space.hpp"

namespace nendo {
namespace {

using testing::all_gather;
using testing::Cut;
using testing::hash;
using testing::unit;

using Cell = std::array<std::int64_t, 3>;

BlockGeometry geometry(int dimension) {
  BlockGeometry g;
  g.dimension = dimension;
  g.dx = 0.1;
  g.block = 4;
  g.origin = {0.03, -0.21, 0.17};
  return g;
}

Cell cell_of(const BlockGeometry& g, const Real* x) {
  Cell c{0, 0, 0};
  for (int a = 0; a < g.dimension; ++a) c[a] = g.cell(x, a);
  return c;
}

ParticleSet seed(int dimension, std::size_t count, std::uint64_t first_index) {
  const BlockGeometry g = geometry(dimension);
  ParticleSet ps(dimension);
  ps.add_field("velocity", FieldType::Real, dimension);
  ps.add_field("mass", FieldType::Real, 1);
  ps.add_field("material", FieldType::Int32, 1);
  ps.resize(count);
  for (std::size_t p = 0; p < count; ++p) {
    const std::uint64_t index = first_index + p;
    ps.ids()[p] = testing::splitmix(index);
    for (int a = 0; a < dimension; ++a) {
      Real& x = ps.positions()[dimension * p + a];
      x = -0.9 + 1.8 * unit(index, a);
      if (hash(index, 5) % 10 == 0)
        x = g.origin[a] + g.dx * std::floor((x - g.origin[a]) / g.dx);  // on a cell face
      ps.real("velocity")[dimension * p + a] = unit(index, 10 + a);
    }
    ps.real("mass")[p] = 1 + unit(index, 20);
    ps.int32("material")[p] = static_cast<std::int32_t>(index % 5);
  }
  return ps;
}

// The particles of every rank, by id: packed bytes of all fields.
std::map<ParticleId, Bytes> everyone(const ParticleSet& ps, MPI_Comm comm) {
  std::vector<std::size_t> indices(ps.size());
  for (std::size_t p = 0; p < ps.size(); ++p) indices[p] = p;
  Bytes packed;
  ps.pack(indices.data(), indices.size(), packed);
  const Bytes all = all_gather(comm, packed);
  std::map<ParticleId, Bytes> out;
  const std::size_t stride = ps.bytes_per_particle();
  for (std::size_t at = 0; at < all.size(); at += stride) {
    ParticleId id;
    std::memcpy(&id, all.data() + at, sizeof(id));
    out[id] = Bytes(all.begin() + at, all.begin() + at + stride);
  }
  return out;
}

Bytes packed(const ParticleSet& ps, std::size_t p) {
  Bytes b;
  ps.pack(&p, 1, b);
  return b;
}

enum class Layout { Balanced, LastRankEmpty, FirstRankEmpty, AllOnRankZero, LastRankGridOnly };

// Seeds, migrates to the layout's partition and returns it.
Partition distribute(ParticleSet& ps, ParticleBlocks& blocks, const BlockGeometry& g, Layout layout) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int ranks = mpi::size(comm);
  ParticleMigration migration(comm);
  blocks = migration.migrate(ps, g, Partition(ranks));  // everything to rank 0, sorted into blocks
  auto keys = all_gather(comm, blocks.keys);
  Partition partition(ranks);
  switch (layout) {
    case Layout::Balanced: {
      std::vector<std::uint64_t> weights;
      for (std::size_t b = 0; b < blocks.count(); ++b) weights.push_back(blocks.particles(b));
      partition = Partition::balanced(comm, blocks.keys, weights);
      break;
    }
    case Layout::LastRankEmpty:
      partition = testing::cut_keys(keys, ranks, Cut::LastRankEmpty);
      break;
    case Layout::FirstRankEmpty:
      partition = testing::cut_keys(keys, ranks, Cut::FirstRankEmpty);
      break;
    case Layout::AllOnRankZero:
      break;
    case Layout::LastRankGridOnly:
      partition = testing::cut_keys(keys, ranks, Cut::LastRankGridOnly);
      break;
  }
  blocks = migration.migrate(ps, g, partition);
  return partition;
}

// Builds the halo and checks it against the global picture; then checks update().
void build_and_check(ParticleHalo& halo, ParticleSet& ps, const ParticleBlocks& blocks,
                     const BlockGeometry& g, const Partition& partition) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int me = mpi::rank(comm);
  const int d = g.dimension;
  halo.build(ps, blocks, g, partition);
  const ParticleSet& copies = halo.particles();
  const auto global = everyone(ps, comm);

  std::set<ParticleId> owned(ps.ids(), ps.ids() + ps.size());
  std::set<ParticleId> seen;
  // Halo copies: exact copies of particles owned elsewhere, each once, sorted by (block key, id).
  for (std::size_t q = 0; q < copies.size(); ++q) {
    const ParticleId id = copies.ids()[q];
    EXPECT_EQ(owned.count(id), 0u) << "halo particle " << id << " is owned here";
    EXPECT_TRUE(seen.insert(id).second) << "halo particle " << id << " twice";
    auto it = global.find(id);
    if (it == global.end()) {
      ADD_FAILURE() << "halo particle " << id << " exists nowhere";
      continue;
    }
    EXPECT_EQ(packed(copies, q), it->second) << "halo particle " << id << " differs from its owner's";
    // It is within one cell of a block this rank owns (one kernel support of the owned region).
    const Cell c = cell_of(g, copies.positions() + d * q);
    bool near = false;
    for (int k = 0; k < neighbour_count(d); ++k) {
      const BlockCoord o = neighbour_offset(d, k);
      BlockCoord b{0, 0, 0};
      for (int a = 0; a < d; ++a) b[a] = static_cast<std::int32_t>(floor_div(c[a] + o[a], g.block));
      near = near || partition.owner(encode_block_key(b)) == me;
    }
    EXPECT_TRUE(near) << "halo particle " << id << " is far from this rank's blocks";
  }
  const ParticleBlocks& hb = halo.blocks();
  // (No ASSERT before update(): a rank leaving early would miss the collective call.)
  EXPECT_EQ(hb.offsets.size(), hb.keys.size() + 1);
  EXPECT_EQ(hb.offsets.back(), copies.size());
  for (std::size_t b = 0; b + 1 < hb.offsets.size(); ++b) {
    if (b > 0) {
      EXPECT_LT(hb.keys[b - 1], hb.keys[b]);
    }
    EXPECT_NE(partition.owner(hb.keys[b]), me) << "a halo block is owned here";
    for (std::size_t q = hb.begin(b); q < hb.end(b); ++q) {
      EXPECT_EQ(g.key_of(copies.positions() + d * q), hb.keys[b]);
      if (q > hb.begin(b)) {
        EXPECT_LT(copies.ids()[q - 1], copies.ids()[q]);
      }
    }
  }

  // Completeness: every particle within one cell of an owned particle, on every axis, is here.
  std::map<Cell, std::vector<ParticleId>> by_cell;
  for (const auto& [id, bytes] : global) {
    Real x[3];
    std::memcpy(x, bytes.data() + sizeof(ParticleId), sizeof(Real) * d);
    by_cell[cell_of(g, x)].push_back(id);
  }
  std::size_t neighbours_checked = 0, missing = 0;
  for (std::size_t p = 0; p < ps.size(); ++p) {
    const Cell c = cell_of(g, ps.positions() + d * p);
    for (int k = 0; k < neighbour_count(d); ++k) {
      const BlockCoord o = neighbour_offset(d, k);
      auto it = by_cell.find({c[0] + o[0], c[1] + o[1], c[2] + o[2]});
      if (it == by_cell.end()) continue;
      for (ParticleId q : it->second) {
        ++neighbours_checked;
        if (owned.count(q) == 0 && seen.count(q) == 0 && ++missing <= 5) {
          ADD_FAILURE() << "particle " << q << " is within one cell of owned particle " << ps.ids()[p]
                        << " but neither owned nor in the halo";
        }
      }
    }
  }
  EXPECT_EQ(missing, 0u);
  if (ps.size() > 0) {
    EXPECT_GT(neighbours_checked, ps.size()) << "the scene is too sparse to test anything";
  }
  // A rank owning blocks but no particles may receive copies (they are near its blocks); a rank
  // owning no keys at all is nobody's neighbour.
  if (partition.begin(me) == partition.end(me)) {
    EXPECT_EQ(copies.size(), 0u) << "a rank that owns no keys got halo particles";
  }

  // update(): owners change fields; the named ones reach the copies, the others keep their old values.
  ParticleSet& mine = ps;
  for (int iteration = 1; iteration <= 3; ++iteration) {
    for (std::size_t p = 0; p < mine.size(); ++p) {
      const ParticleId id = mine.ids()[p];
      for (int a = 0; a < d; ++a)
        mine.real("velocity")[d * p + a] = iteration * 100.0 + unit(id, iteration, a);
      mine.real("mass")[p] = -1.0 * iteration;  // never sent
      mine.int32("material")[p] = static_cast<std::int32_t>(hash(id, iteration) % 1000);
    }
    const std::vector<std::string> fields = iteration == 2 ? std::vector<std::string>{"material", "velocity"}
                                                           : std::vector<std::string>{"velocity"};
    const ParticleSet old_copies = copies;
    halo.update(mine, fields);
    for (std::size_t q = 0; q < copies.size(); ++q) {
      const ParticleId id = copies.ids()[q];
      for (int a = 0; a < d; ++a)
        EXPECT_EQ(copies.real("velocity")[d * q + a], iteration * 100.0 + unit(id, iteration, a))
            << "iteration " << iteration << ": velocity of halo particle " << id;
      const std::int32_t material = iteration == 2 ? static_cast<std::int32_t>(hash(id, iteration) % 1000)
                                                   : old_copies.int32("material")[q];
      EXPECT_EQ(copies.int32("material")[q], material) << "iteration " << iteration << ": material of " << id;
      EXPECT_EQ(copies.real("mass")[q], old_copies.real("mass")[q]) << "mass was not asked for";
      EXPECT_EQ(copies.ids()[q], old_copies.ids()[q]) << "update() must not reorder the copies";
    }
  }
  // No fields: a valid, empty refresh.
  const ParticleSet old_copies = copies;
  halo.update(mine, {});
  for (std::size_t q = 0; q < copies.size(); ++q) EXPECT_EQ(packed(copies, q), packed(old_copies, q));
}

void expect_complete_halo(int dimension, std::size_t per_rank, Layout layout) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int me = mpi::rank(comm), ranks = mpi::size(comm);
  const BlockGeometry g = geometry(dimension);
  ParticleSet ps = seed(dimension, per_rank, 100000ull * me);
  ParticleBlocks blocks;
  const Partition partition = distribute(ps, blocks, g, layout);
  ParticleHalo halo(comm, dimension);
  build_and_check(halo, ps, blocks, g, partition);
  const int empty_ranks = testing::count_ranks(comm, ps.size() == 0);
  const int ranks_with_halo = testing::count_ranks(comm, halo.particles().size() > 0);
  if (ranks > 1 && layout != Layout::Balanced) {
    EXPECT_GT(empty_ranks, 0) << "this layout must leave a rank without particles";
  }
  if (ranks > 1 && layout == Layout::Balanced && per_rank > 0) {
    EXPECT_GT(ranks_with_halo, 0) << "no halo at all";
  }
  if (layout == Layout::AllOnRankZero) {
    EXPECT_EQ(ranks_with_halo, 0) << "one rank owns everything";
  }
}

TEST(ParticleHalo, Balanced3D) { expect_complete_halo(3, 800, Layout::Balanced); }
TEST(ParticleHalo, LastRankEmpty3D) { expect_complete_halo(3, 600, Layout::LastRankEmpty); }
TEST(ParticleHalo, LastRankOwnsOnlyEmptyBlocks3D) { expect_complete_halo(3, 600, Layout::LastRankGridOnly); }
TEST(ParticleHalo, AllOnRankZeroNeedsNoHalo2D) { expect_complete_halo(2, 300, Layout::AllOnRankZero); }
TEST(ParticleHalo, NoParticlesAnywhere) { expect_complete_halo(3, 0, Layout::Balanced); }

// One halo object rebuilt after the particles moved and migrated to another partition.
TEST(ParticleHalo, RebuildAfterMigrationIsCompleteAgain) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int me = mpi::rank(comm), ranks = mpi::size(comm);
  const BlockGeometry g = geometry(3);
  ParticleSet ps = seed(3, 500, 100000ull * me);
  ParticleBlocks blocks;
  Partition partition = distribute(ps, blocks, g, Layout::Balanced);
  ParticleHalo halo(comm, 3);
  ParticleMigration migration(comm);
  for (int round = 0; round < 3; ++round) {
    build_and_check(halo, ps, blocks, g, partition);
    for (std::size_t p = 0; p < ps.size(); ++p)
      for (int a = 0; a < 3; ++a) ps.positions()[3 * p + a] += 0.3 * (unit(ps.ids()[p], 50 + round, a) - 0.5);
    auto keys = all_gather(comm, blocks.keys);
    std::sort(keys.begin(), keys.end());
    partition = testing::cut_keys(keys, ranks, round % 2 ? Cut::LastRankEmpty : Cut::FirstRankEmpty);
    blocks = migration.migrate(ps, g, partition);
  }
  build_and_check(halo, ps, blocks, g, partition);
}

// A build naming its fields (issue 34): the copies hold "id", "position" and those fields only,
// with the owner's values, the same particles in the same order as a build of every field, and
// update() refreshes them along the same pattern; through Space too (set_halo_fields).
TEST(ParticleHalo, BuildWithFieldListCarriesOnlyThoseFields) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int me = mpi::rank(comm);
  const BlockGeometry g = geometry(3);
  ParticleSet ps = seed(3, 600, 100000ull * me);
  ParticleBlocks blocks;
  const Partition partition = distribute(ps, blocks, g, Layout::Balanced);
  ParticleHalo whole(comm, 3), few(comm, 3);
  whole.build(ps, blocks, g, partition);
  few.build(ps, blocks, g, partition, {"mass"});
  const ParticleSet& all_fields = whole.particles();
  const ParticleSet& copies = few.particles();
  ASSERT_EQ(copies.fields().size(), 3u);
  EXPECT_EQ(copies.fields()[0].name(), "id");
  EXPECT_EQ(copies.fields()[1].name(), "position");
  EXPECT_EQ(copies.fields()[2].name(), "mass");
  EXPECT_FALSE(copies.has_field("velocity"));
  EXPECT_EQ(copies.bytes_per_particle(), sizeof(ParticleId) + 4 * sizeof(Real));
  ASSERT_EQ(copies.size(), all_fields.size());
  for (std::size_t q = 0; q < copies.size(); ++q) {
    EXPECT_EQ(copies.ids()[q], all_fields.ids()[q]);
    EXPECT_EQ(std::memcmp(copies.positions() + 3 * q, all_fields.positions() + 3 * q, 3 * sizeof(Real)), 0);
    EXPECT_EQ(copies.real("mass")[q], all_fields.real("mass")[q]);
  }
  EXPECT_EQ(testing::count_ranks(comm, copies.size() > 0) > 0, mpi::size(comm) > 1);
  for (std::size_t p = 0; p < ps.size(); ++p)
    ps.real("mass")[p] = 1000.0 + static_cast<Real>(ps.ids()[p] % 7);
  few.update(ps, {"mass"});
  for (std::size_t q = 0; q < copies.size(); ++q)
    EXPECT_EQ(copies.real("mass")[q], 1000.0 + static_cast<Real>(copies.ids()[q] % 7));

  Space space(comm, g, seed(3, 600, 100000ull * me));
  space.distribute();
  space.set_halo_fields({"material"});
  const ParticleSet& space_copies = space.halo().particles();
  EXPECT_EQ(space_copies.fields().size(), 3u);
  EXPECT_TRUE(space_copies.has_field("material"));
  space.set_halo_fields({});  // every field again: rebuilt
  EXPECT_EQ(space.halo().particles().bytes_per_particle(), space.particles().bytes_per_particle());
}

// An infinite slack (a mesh method's) keeps the layout Space::distribute made: the first call does
// not migrate; a changed particle count still does.
TEST(Space, InfiniteSlackKeepsTheFirstLayout) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int me = mpi::rank(comm);
  Space space(comm, geometry(3), seed(3, 300, 100000ull * me));
  space.distribute();
  const std::uint64_t layout = space.layout_version();
  for (std::size_t p = 0; p < space.particles().size(); ++p) space.particles().positions()[3 * p] += 0.5;
  EXPECT_FALSE(space.migrate_if_moved(std::numeric_limits<Real>::infinity()));
  EXPECT_FALSE(space.migrate_if_moved(std::numeric_limits<Real>::infinity()));
  EXPECT_EQ(space.layout_version(), layout);
  if (me == 0) {  // a new particle at the origin
    ParticleSet& ps = space.particles();
    ps.resize(ps.size() + 1);
    ps.ids()[ps.size() - 1] = 1ull << 62;
  }
  EXPECT_TRUE(space.migrate_if_moved(std::numeric_limits<Real>::infinity()));
  EXPECT_GT(space.layout_version(), layout);
}

// KNOWN BUG (decomposition/ParticleHalo.cpp, for_each_reached_neighbour): in 2D the neighbour index
// is computed as (x+1) + 3(y+1) + 9(z+1) with z = 0, i.e. k + 9, so build() reads owner[9..17] of a
// 9-entry vector. With 2+ ranks it sends halo particles to garbage ranks: MPI_Issend aborts with
// MPI_ERR_RANK, or the halo is incomplete. Defined last so the tests above report first.
TEST(ParticleHaloBug2D, NeighbourIndexOutOfRange_Balanced) { expect_complete_halo(2, 400, Layout::Balanced); }
TEST(ParticleHaloBug2D, NeighbourIndexOutOfRange_FirstRankEmpty) {
  expect_complete_halo(2, 400, Layout::FirstRankEmpty);
}

}  // namespace
}  // namespace nendo
