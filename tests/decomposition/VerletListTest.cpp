// VerletList with Space::migrate_if_moved: while the layout is kept, the owned particles' rows,
// filtered by the support on current positions, are exactly the particles within the support
// (checked against all particles gathered from every rank), in ascending id order; the layout is
// kept while motion stays within the slack and changed, on every rank alike, once it does not.
#include <gtest/gtest.h>

#include <numeric>

#include "GlobalView.hpp"
#include "core/Mpi.hpp"
#include "decomposition/Space.hpp"
#include "decomposition/VerletList.hpp"

namespace nendo {
namespace {

using testing::all_gather;
using testing::unit;

constexpr Real kSupport = 0.05, kSkin = 0.02, kCell = 0.1;  // support + skin ≤ cell − skin

// 1 200 particles in a 0.6 × 0.3 × 0.3 box (about 8 within the support), all seeded on rank 0:
// with 4 ranks some own nothing at times.
ParticleSet seed(MPI_Comm comm) {
  ParticleSet ps(3);
  if (mpi::rank(comm) != 0) return ps;
  ps.resize(1200);
  for (std::size_t p = 0; p < ps.size(); ++p) {
    ps.ids()[p] = testing::splitmix(p);
    const Real extent[3] = {0.6, 0.3, 0.3};
    for (int a = 0; a < 3; ++a) ps.positions()[3 * p + a] = extent[a] * unit(p, a);
  }
  return ps;
}

BlockGeometry geometry() {
  BlockGeometry g;
  g.dimension = 3, g.dx = kCell, g.block = 3;
  return g;
}

struct Global {
  std::vector<ParticleId> id;
  std::vector<Real> x;
};

Global everyone(const Space& space) {
  const ParticleSet& ps = space.particles();
  return {all_gather(space.comm(), std::vector<ParticleId>(ps.ids(), ps.ids() + ps.size())),
          all_gather(space.comm(), std::vector<Real>(ps.positions(), ps.positions() + 3 * ps.size()))};
}

// Moves every particle by `step` along a direction of its own (a rigid drift plus noise).
void move(Space& space, int round, Real step) {
  ParticleSet& ps = space.particles();
  for (std::size_t p = 0; p < ps.size(); ++p)
    for (int a = 0; a < 3; ++a) ps.positions()[3 * p + a] += step * (2 * unit(ps.ids()[p], 7 + a, round) - 1);
}

// The rows of the owned particles at the current positions, filtered by the support, against the
// gathered truth.
void expect_rows_exact(Space& space, const VerletList& list, const std::vector<Real>& x,
                       const std::vector<ParticleId>& id, std::size_t owned) {
  const Global all = everyone(space);
  ASSERT_EQ(list.rows(), owned);
  for (std::size_t r = 0; r < list.rows(); ++r) {
    const std::uint32_t i = list.row(r);
    std::vector<ParticleId> found, expected;
    for (const std::uint32_t* k = list.begin(r); k != list.end(r); ++k) {
      Real d2 = 0;
      for (int a = 0; a < 3; ++a) d2 += (x[3 * i + a] - x[3 * *k + a]) * (x[3 * i + a] - x[3 * *k + a]);
      if (d2 < kSupport * kSupport) found.push_back(id[*k]);
    }
    for (std::size_t q = 0; q < all.id.size(); ++q) {
      Real d2 = 0;
      for (int a = 0; a < 3; ++a) d2 += (x[3 * i + a] - all.x[3 * q + a]) * (x[3 * i + a] - all.x[3 * q + a]);
      if (d2 < kSupport * kSupport && all.id[q] != id[i]) expected.push_back(all.id[q]);
    }
    std::sort(expected.begin(), expected.end());
    ASSERT_EQ(found, expected) << "row of particle " << id[i];
  }
}

TEST(VerletList, RowsHoldEveryPairWithinTheSupportWhileTheLayoutIsKept) {
  const MPI_Comm comm = MPI_COMM_WORLD;
  Space space(comm, geometry(), seed(comm));
  space.distribute();
  ASSERT_TRUE(space.migrate_if_moved(kSkin / 2));  // the first call lays out
  VerletList list;
  std::uint64_t built_for = 0;
  int kept = 0, relaid = 0;
  for (int round = 0; round < 12; ++round) {
    ParticleSet& own = space.particles();
    const ParticleSet& halo = space.halo().particles();
    const std::size_t n_own = own.size(), n = n_own + halo.size();
    std::vector<Real> x(3 * n);
    std::vector<ParticleId> id(n);
    std::copy_n(own.positions(), 3 * n_own, x.begin());
    std::copy_n(halo.positions(), 3 * halo.size(), x.begin() + 3 * n_own);
    std::copy_n(own.ids(), n_own, id.begin());
    std::copy_n(halo.ids(), halo.size(), id.begin() + n_own);
    if (built_for != space.layout_version()) {
      std::vector<std::uint32_t> rows(n_own), candidates(n);
      std::iota(rows.begin(), rows.end(), 0u), std::iota(candidates.begin(), candidates.end(), 0u);
      list.build(x.data(), id.data(), rows, candidates, kSupport + kSkin);
      built_for = space.layout_version();
    }
    expect_rows_exact(space, list, x, id, n_own);
    for (std::size_t r = 0; r < list.rows(); ++r)
      ASSERT_TRUE(std::is_sorted(list.begin(r), list.end(r),
                                 [&](std::uint32_t a, std::uint32_t b) { return id[a] < id[b]; }));
    move(space, round, kSkin / 7);  // a layout lasts a few rounds
    if (space.migrate_if_moved(kSkin / 2)) {
      ++relaid;
    } else {
      ++kept;
      space.halo().update(space.particles(), {"position"});
    }
  }
  // The decision is collective: every rank counts the same.
  const std::vector<int> counts = all_gather(comm, std::vector<int>{kept, relaid});
  for (std::size_t r = 2; r < counts.size(); r += 2) {
    EXPECT_EQ(counts[r], kept);
    EXPECT_EQ(counts[r + 1], relaid);
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(relaid, 0);
}

TEST(VerletList, ALayoutIsRedoneWhenTheParticleCountChanges) {
  const MPI_Comm comm = MPI_COMM_WORLD;
  Space space(comm, geometry(), seed(comm));
  space.distribute();
  space.migrate_if_moved(kSkin / 2);
  const std::uint64_t version = space.layout_version();
  EXPECT_FALSE(space.migrate_if_moved(kSkin / 2));
  EXPECT_EQ(space.layout_version(), version);
  if (mpi::rank(comm) == mpi::size(comm) - 1) space.particles().resize(space.particles().size() + 1);
  EXPECT_TRUE(space.migrate_if_moved(kSkin / 2));  // on every rank, though one rank changed
  EXPECT_GT(space.layout_version(), version);
}

}  // namespace
}  // namespace nendo
