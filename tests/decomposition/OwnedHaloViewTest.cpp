// OwnedHaloView: the owned particles come first, in their order, then the halo copies in theirs;
// every gathered field equals its particle's values, padded with zeros to the width asked for;
// find() locates every id and no other; after a halo update of one field, gathering it again
// refreshes it in the same storage. On any rank count, with a rank that owns nothing.
#include <gtest/gtest.h>

#include <algorithm>

#include "GlobalView.hpp"
#include "decomposition/OwnedHaloView.hpp"
#include "decomposition/Space.hpp"

namespace nendo {
namespace {

using testing::Cut;
using testing::unit;

constexpr std::size_t kPerRank = 400;

BlockGeometry geometry(int dimension) {
  BlockGeometry g;
  g.dimension = dimension;
  g.dx = 0.1;
  g.block = 4;
  g.origin = {0.03, -0.21, 0.17};
  return g;
}

ParticleSet seed(int dimension, std::size_t count, std::uint64_t first_index) {
  ParticleSet ps(dimension);
  ps.add_field("velocity", FieldType::Real, dimension);
  ps.add_field("mass", FieldType::Real, 1);
  ps.add_field("material", FieldType::Int32, 1);
  ps.resize(count);
  for (std::size_t p = 0; p < count; ++p) {
    const std::uint64_t index = first_index + p;
    ps.ids()[p] = testing::splitmix(index);
    for (int a = 0; a < dimension; ++a) {
      ps.positions()[dimension * p + a] = -0.9 + 1.8 * unit(index, a);
      ps.real("velocity")[dimension * p + a] = unit(index, 10 + a);
    }
    ps.real("mass")[p] = 1 + unit(index, 20);
    ps.int32("material")[p] = static_cast<std::int32_t>(index % 5);
  }
  return ps;
}

// The particles' blocks cut among the ranks so that one rank owns nothing.
Partition cut(const ParticleSet& ps, const BlockGeometry& g, Cut how) {
  std::vector<BlockKey> mine;
  for (std::size_t p = 0; p < ps.size(); ++p) mine.push_back(g.key_of(ps.positions() + g.dimension * p));
  std::vector<BlockKey> keys = testing::all_gather(MPI_COMM_WORLD, mine);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return testing::cut_keys(keys, mpi::size(MPI_COMM_WORLD), how);
}

// Where view index i comes from: the owned set or the halo's, and the index there.
struct Source {
  const ParticleSet& set;
  std::size_t index;
};

Source source(const OwnedHaloView& view, const ParticleSet& owned, const ParticleSet& halo, std::size_t i) {
  return i < view.owned() ? Source{owned, i} : Source{halo, i - view.owned()};
}

void expect_gathered(const OwnedHaloView& view, const ParticleSet& owned, const ParticleSet& halo) {
  const int d = owned.dimension();
  std::vector<Real> x, v, m;
  std::vector<std::int32_t> material;
  std::vector<std::uint64_t> id;
  view.gather("position", x, 3);  // 2D: z = 0
  view.gather("velocity", v);
  view.gather("mass", m);
  view.gather("material", material);
  view.gather("id", id);
  ASSERT_EQ(x.size(), 3 * view.size());
  ASSERT_EQ(v.size(), d * view.size());
  ASSERT_EQ(m.size(), view.size());
  ASSERT_EQ(material.size(), view.size());
  ASSERT_EQ(id.size(), view.size());
  for (std::size_t i = 0; i < view.size(); ++i) {
    const Source s = source(view, owned, halo, i);
    EXPECT_EQ(view.id(i), s.set.ids()[s.index]) << "view index " << i << " (owned " << view.owned() << ")";
    EXPECT_EQ(id[i], view.id(i));
    for (int a = 0; a < 3; ++a)
      EXPECT_EQ(x[3 * i + a], a < d ? s.set.positions()[d * s.index + a] : 0.0) << "particle " << view.id(i);
    for (int a = 0; a < d; ++a) EXPECT_EQ(v[d * i + a], s.set.real("velocity")[d * s.index + a]);
    EXPECT_EQ(m[i], s.set.real("mass")[s.index]);
    EXPECT_EQ(material[i], s.set.int32("material")[s.index]);
  }
}

void expect_view(int dimension, Cut how) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int me = mpi::rank(comm), ranks = mpi::size(comm);
  const BlockGeometry g = geometry(dimension);
  Space space(comm, g, seed(dimension, kPerRank, 100000ull * me));
  space.distribute(cut(space.particles(), g, how));
  ParticleSet& owned = space.particles();
  const ParticleSet& halo = space.halo().particles();
  OwnedHaloView view;
  view.assign(owned, halo);

  EXPECT_EQ(view.owned(), owned.size());
  EXPECT_EQ(view.size(), owned.size() + halo.size());
  EXPECT_EQ(view.ids().size(), view.size());
  expect_gathered(view, owned, halo);
  for (std::size_t i = 0; i < view.size(); ++i) EXPECT_EQ(view.find(view.id(i)), i) << "id " << view.id(i);
  EXPECT_EQ(view.find(testing::splitmix(1000000000ull)), IdIndex::kAbsent) << "an id nobody has";

  std::uint64_t counts[2] = {view.owned(), view.size() - view.owned()};
  MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_UINT64_T, MPI_SUM, comm);
  EXPECT_EQ(counts[0], kPerRank * ranks) << "every particle is owned once";
  if (testing::count_ranks(comm, view.owned() > 0) > 1) {
    EXPECT_GT(counts[1], 0u) << "no halo copies anywhere: the test shows nothing";
  }
  if (ranks > 1) {
    EXPECT_GT(testing::count_ranks(comm, view.owned() == 0), 0) << "the cut must leave a rank with nothing";
  }
  if (ranks > 1 && how == Cut::LastRankGridOnly) {  // the copies near its empty blocks, and nothing owned
    EXPECT_GT(testing::count_ranks(comm, view.owned() == 0 && view.size() > 0), 0);
  }

  // A refresh: the owners change the velocities, the halo update sends them, a gather takes them
  // into the same storage.
  for (std::size_t p = 0; p < owned.size(); ++p)
    for (int a = 0; a < dimension; ++a)
      owned.real("velocity")[dimension * p + a] = 100 + unit(owned.ids()[p], 7, a);
  std::vector<Real> v;
  v.reserve(dimension * view.size());
  const Real* storage = v.data();
  space.halo().update(owned, {"velocity"});
  view.gather("velocity", v);
  EXPECT_EQ(v.data(), storage) << "the gather reallocated storage that was large enough";
  for (std::size_t i = 0; i < view.size(); ++i)
    for (int a = 0; a < dimension; ++a) EXPECT_EQ(v[dimension * i + a], 100 + unit(view.id(i), 7, a));
  expect_gathered(view, owned, halo);

  // The view stands for one layout: a changed particle set must be assigned again.
  owned.resize(owned.size() + 1);
  EXPECT_THROW(view.gather("velocity", v), Error);
  owned.ids()[owned.size() - 1] = testing::splitmix(2000000000ull + me);
  view.assign(owned, halo);
  EXPECT_EQ(view.owned(), owned.size());
  EXPECT_EQ(view.find(owned.ids()[owned.size() - 1]), owned.size() - 1) << "the index follows assign()";
}

TEST(OwnedHaloView, FirstRankOwnsNothing3D) { expect_view(3, Cut::FirstRankEmpty); }
TEST(OwnedHaloView, LastRankOwnsNothing2DPadsToThree) { expect_view(2, Cut::LastRankEmpty); }
TEST(OwnedHaloView, LastRankOwnsOnlyEmptyBlocks3D) { expect_view(3, Cut::LastRankGridOnly); }
TEST(OwnedHaloView, AllOnRankZero3D) { expect_view(3, Cut::AllOnRankZero); }

TEST(OwnedHaloView, WidthBelowTheComponentsIsAnError) {
  ParticleSet owned = seed(3, 5, 0), halo = seed(3, 2, 10);
  OwnedHaloView view;
  view.assign(owned, halo);
  std::vector<Real> x;
  EXPECT_THROW(view.gather("position", x, 2), Error);
  view.gather("position", x);
  EXPECT_EQ(x.size(), 3u * 7u);
}

}  // namespace
}  // namespace nendo
