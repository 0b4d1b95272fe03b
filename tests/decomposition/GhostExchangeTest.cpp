// GhostExchange: the (B+3)^d node windows of the particle blocks and the grid blocks they reach.
// scatter_add() sums windows into the owners' grid blocks, gather() copies grid values back into
// windows; the grid blocks are exactly the particle blocks dilated by one block, each owned once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "GlobalView.hpp"
#include "TransferLoop.hpp"
#include "decomposition/GhostExchange.hpp"
#include "decomposition/ParticleMigration.hpp"

namespace nendo {
namespace {

using testing::all_gather;
using testing::Cut;
using testing::hash;
using testing::unit;

BlockGeometry geometry(int dimension, int block) {
  BlockGeometry g;
  g.dimension = dimension;
  g.dx = 0.05;
  g.block = block;
  g.origin = {-0.13, 0.07, 0.02};
  return g;
}

// A blob of particles around the origin, with a mass field.
ParticleSet seed(int dimension, std::size_t count, std::uint64_t first_index) {
  ParticleSet ps(dimension);
  ps.add_field("mass", FieldType::Real, 1);
  ps.resize(count);
  for (std::size_t p = 0; p < count; ++p) {
    const std::uint64_t index = first_index + p;
    ps.ids()[p] = index;
    for (int a = 0; a < dimension; ++a) ps.positions()[dimension * p + a] = 0.3 * (2 * unit(index, a) - 1);
    ps.real("mass")[p] = 0.5 + unit(index, 9);
  }
  return ps;
}

enum class Layout { Balanced, FirstRankEmpty, LastRankEmpty, LastRankGridOnly, AllOnRankZero };

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::Balanced:
      return "Balanced";
    case Layout::FirstRankEmpty:
      return "FirstRankEmpty";
    case Layout::LastRankEmpty:
      return "LastRankEmpty";
    case Layout::LastRankGridOnly:
      return "LastRankGridOnly";
    case Layout::AllOnRankZero:
      return "AllOnRankZero";
  }
  return "?";
}

Partition make_partition(const ParticleBlocks& blocks, const std::vector<BlockKey>& all_keys, Layout layout) {
  const int ranks = mpi::size(MPI_COMM_WORLD);
  switch (layout) {
    case Layout::Balanced: {
      std::vector<std::uint64_t> weights;
      for (std::size_t b = 0; b < blocks.count(); ++b) weights.push_back(blocks.particles(b));
      return Partition::balanced(MPI_COMM_WORLD, blocks.keys, weights);
    }
    case Layout::FirstRankEmpty:
      return testing::cut_keys(all_keys, ranks, Cut::FirstRankEmpty);
    case Layout::LastRankEmpty:
      return testing::cut_keys(all_keys, ranks, Cut::LastRankEmpty);
    case Layout::LastRankGridOnly:
      return testing::cut_keys(all_keys, ranks, Cut::LastRankGridOnly);
    case Layout::AllOnRankZero:
      break;
  }
  return Partition(ranks);
}

struct Scene {
  BlockGeometry g;
  ParticleSet particles;
  ParticleBlocks blocks;
  Partition partition;
  std::vector<BlockKey> all_particle_blocks;  // global, sorted
};

Scene make_scene(int dimension, int block, std::size_t per_rank, Layout layout) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int me = mpi::rank(comm), ranks = mpi::size(comm);
  Scene s{geometry(dimension, block), seed(dimension, per_rank, 1'000'000ull * me), {}, Partition(ranks), {}};
  ParticleMigration migration(comm);
  s.blocks = migration.migrate(s.particles, s.g, s.partition);  // all on rank 0, sorted into blocks
  s.all_particle_blocks = all_gather(comm, s.blocks.keys);
  s.partition = make_partition(s.blocks, s.all_particle_blocks, layout);
  s.blocks = migration.migrate(s.particles, s.g, s.partition);
  return s;
}

// Global node index of node `local` of grid block `key`, and of window node `w` of source block `key`.
std::array<std::int64_t, 3> block_node(const BlockGeometry& g, BlockKey key, const int* local) {
  const BlockCoord c = decode_block_key(key);
  std::array<std::int64_t, 3> n{0, 0, 0};
  for (int a = 0; a < g.dimension; ++a) n[a] = std::int64_t(c[a]) * g.block + local[a];
  return n;
}
std::array<std::int64_t, 3> window_node(const BlockGeometry& g, BlockKey key, const int* w) {
  const BlockCoord c = decode_block_key(key);
  std::array<std::int64_t, 3> n{0, 0, 0};
  for (int a = 0; a < g.dimension; ++a)
    n[a] = std::int64_t(c[a]) * g.block - GhostExchange::kWindowLower + w[a];
  return n;
}

// Visits (flat index, per-axis index) of a box of extents e, x fastest.
template <class Visit>
void for_each_node(const int* e, Visit visit) {
  int i[3];
  std::size_t flat = 0;
  for (i[2] = 0; i[2] < e[2]; ++i[2])
    for (i[1] = 0; i[1] < e[1]; ++i[1])
      for (i[0] = 0; i[0] < e[0]; ++i[0]) visit(flat++, i);
}

void block_extents(const GhostExchange& ghost, int* e) {
  for (int a = 0; a < 3; ++a) e[a] = ghost.geometry().block_extent(a);
}
void window_extents(const GhostExchange& ghost, int* e) {
  for (int a = 0; a < 3; ++a) e[a] = ghost.window_extent(a);
}

// --- the properties ---------------------------------------------------------------------------

// Grid blocks are owned once, by their partition owner, and together are the particle blocks
// dilated by one block.
void expect_grid_blocks_are_the_dilation(const Scene& s, const GhostExchange& ghost,
                                         const std::string& what) {
  const int me = mpi::rank(MPI_COMM_WORLD), d = s.g.dimension;
  const auto& keys = ghost.grid_keys();
  auto all = all_gather(MPI_COMM_WORLD, keys);
  EXPECT_EQ(ghost.source_keys(), s.blocks.keys) << what;
  EXPECT_EQ(ghost.source_blocks(), s.blocks.count()) << what;
  EXPECT_EQ(ghost.grid_blocks(), keys.size()) << what;
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end())) << what;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(s.partition.owner(keys[i]), me) << what << ": grid block not in this rank's range";
    EXPECT_EQ(ghost.grid_slot(keys[i]), static_cast<long>(i)) << what;
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << what << ": a grid block is owned twice";
  std::set<BlockKey> dilation;
  for (BlockKey key : s.all_particle_blocks)
    for (int k = 0; k < neighbour_count(d); ++k)
      dilation.insert(encode_block_key(add(decode_block_key(key), neighbour_offset(d, k))));
  EXPECT_EQ(std::set<BlockKey>(all.begin(), all.end()), dilation) << what;
  for (BlockKey key : dilation)
    if (s.partition.owner(key) != me) {
      EXPECT_EQ(ghost.grid_slot(key), -1) << what;
    }
}

// Mass spread to the grid with quadratic B-spline weights sums to the particles' mass.
void expect_mass_is_conserved(const Scene& s, const GhostExchange& ghost, const std::string& what) {
  const BlockGeometry& g = s.g;
  const int d = g.dimension;
  int we[3];
  window_extents(ghost, we);
  std::vector<Real> windows(ghost.source_blocks() * ghost.window_nodes(), 0.0);
  const Real* x = s.particles.positions();
  const Real* m = s.particles.real("mass");
  Real particle_mass = 0;
  for (std::size_t b = 0; b < s.blocks.count(); ++b) {
    const BlockCoord cb = decode_block_key(s.blocks.keys[b]);
    for (std::size_t p = s.blocks.begin(b); p < s.blocks.end(b); ++p) {
      particle_mass += m[p];
      const QuadraticWeights q = quadratic_weights(g.dimension, g.dx, g.origin, x + d * p);
      for (int k = 0; k < (d == 3 ? 3 : 1); ++k)
        for (int j = 0; j < 3; ++j)
          for (int i = 0; i < 3; ++i) {
            int w[3] = {i, j, k};
            for (int a = 0; a < d; ++a)
              w[a] = static_cast<int>(q.base[a] + w[a] - std::int64_t(cb[a]) * g.block +
                                      GhostExchange::kWindowLower);
            bool inside = true;
            for (int a = 0; a < 3; ++a) inside = inside && w[a] >= 0 && w[a] < we[a];
            if (!inside) {
              ADD_FAILURE() << what << ": particle " << s.particles.ids()[p] << " reaches outside its window";
              continue;
            }
            windows[b * ghost.window_nodes() + w[0] + we[0] * (w[1] + we[1] * w[2])] +=
                m[p] * q.w[0][i] * q.w[1][j] * (d == 3 ? q.w[2][k] : 1.0);
          }
    }
  }
  std::vector<Real> grid;
  ghost.scatter_add(windows, 1, grid);
  EXPECT_EQ(grid.size(), ghost.grid_blocks() * ghost.nodes_per_block()) << what;
  Real local[2] = {particle_mass, 0}, total[2];
  for (Real v : grid) local[1] += v;
  MPI_Allreduce(local, total, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (total[0] == 0) {
    EXPECT_EQ(total[1], 0.0) << what;
  } else {
    EXPECT_NEAR(total[1] / total[0], 1.0, 1e-12) << what << ": grid mass " << total[1] << " vs " << total[0];
  }
}

// scatter_add() of windows holding 1 (component 0) and a per-source integer (component 1): a node
// receives the number of windows covering it and the sum of their integers.
void expect_scatter_adds_every_covering_window(const Scene& s, const GhostExchange& ghost,
                                               const std::string& what) {
  const BlockGeometry& g = s.g;
  const int d = g.dimension, B = g.block;
  auto label = [](BlockKey key) { return static_cast<Real>(1 + hash(key, 3) % 1000); };
  std::vector<Real> windows(ghost.source_blocks() * ghost.window_nodes() * 2);
  for (std::size_t b = 0; b < ghost.source_blocks(); ++b)
    for (int n = 0; n < ghost.window_nodes(); ++n) {
      windows[2 * (b * ghost.window_nodes() + n)] = 1.0;
      windows[2 * (b * ghost.window_nodes() + n) + 1] = label(ghost.source_keys()[b]);
    }
  std::vector<Real> grid;
  ghost.scatter_add(windows, 2, grid);
  ASSERT_EQ(grid.size(), ghost.grid_blocks() * ghost.nodes_per_block() * 2) << what;

  // Expected, from the global set of particle blocks: source s covers nodes [sB - 1, sB + B + 1].
  const std::set<BlockKey> sources(s.all_particle_blocks.begin(), s.all_particle_blocks.end());
  int e[3];
  block_extents(ghost, e);
  std::size_t wrong = 0;
  for (std::size_t gb = 0; gb < ghost.grid_blocks(); ++gb) {
    const BlockKey key = ghost.grid_keys()[gb];
    const BlockCoord c = decode_block_key(key);
    for_each_node(e, [&](std::size_t flat, const int* local) {
      const auto n = block_node(g, key, local);
      Real count = 0, sum = 0;
      for (int k = 0; k < neighbour_count(d); ++k) {
        const BlockCoord sc = add(c, neighbour_offset(d, k));
        bool covers = true;
        for (int a = 0; a < d; ++a) {
          const std::int64_t first = std::int64_t(sc[a]) * B - 1, last = std::int64_t(sc[a]) * B + B + 1;
          covers = covers && first <= n[a] && n[a] <= last;
        }
        const BlockKey sk = encode_block_key(sc);
        if (covers && sources.count(sk)) count += 1, sum += label(sk);
      }
      const Real* got = grid.data() + 2 * (gb * ghost.nodes_per_block() + flat);
      if ((got[0] != count || got[1] != sum) && ++wrong <= 5) {
        ADD_FAILURE() << what << ": node (" << n[0] << ", " << n[1] << ", " << n[2] << ") got " << got[0]
                      << ", " << got[1] << "; expected " << count << ", " << sum;
      }
    });
  }
  EXPECT_EQ(wrong, 0u) << what;
}

// An affine field on the grid, gathered into windows, is that field at every window node.
Real affine(const BlockGeometry& g, const std::array<std::int64_t, 3>& n, int c) {
  const Real coefficient[3][3] = {{1.5, -2.0, 0.25}, {-0.75, 3.0, 1.0}, {0.5, 0.125, -4.0}};
  Real v = 10.0 * (c + 1);
  for (int a = 0; a < g.dimension; ++a)
    v += coefficient[c][a] * (g.origin[a] + static_cast<Real>(n[a]) * g.dx);
  return v;
}

void expect_gather_fills_windows_exactly(const Scene& s, const GhostExchange& ghost,
                                         const std::string& what) {
  const BlockGeometry& g = s.g;
  constexpr int C = 3;
  int e[3], we[3];
  block_extents(ghost, e);
  window_extents(ghost, we);
  std::vector<Real> grid(ghost.grid_blocks() * ghost.nodes_per_block() * C);
  for (std::size_t gb = 0; gb < ghost.grid_blocks(); ++gb)
    for_each_node(e, [&](std::size_t flat, const int* local) {
      const auto n = block_node(g, ghost.grid_keys()[gb], local);
      for (int c = 0; c < C; ++c) grid[C * (gb * ghost.nodes_per_block() + flat) + c] = affine(g, n, c);
    });
  std::vector<Real> windows{42.0};  // gather() replaces whatever was there
  ghost.gather(grid, C, windows);
  ASSERT_EQ(windows.size(), ghost.source_blocks() * ghost.window_nodes() * C) << what;
  std::size_t wrong = 0;
  for (std::size_t b = 0; b < ghost.source_blocks(); ++b)
    for_each_node(we, [&](std::size_t flat, const int* w) {
      const auto n = window_node(g, ghost.source_keys()[b], w);
      for (int c = 0; c < C; ++c) {
        const Real got = windows[C * (b * ghost.window_nodes() + flat) + c];
        if (got != affine(g, n, c) && ++wrong <= 5) {
          ADD_FAILURE() << what << ": window node (" << n[0] << ", " << n[1] << ", " << n[2] << ") component "
                        << c << " is " << got << ", expected " << affine(g, n, c);
        }
      }
    });
  EXPECT_EQ(wrong, 0u) << what;
}

// The split exchange (start_*, work on interior blocks, finish_*) gives bitwise what the blocking
// one gives, though the interior windows (grid blocks) hold NaN when the exchange starts and are
// filled only afterwards: so no other rank needs them, and the boundary ones are packed at start.
void expect_split_exchange_matches_blocking(const GhostExchange& ghost, const std::string& what) {
  const std::size_t S = ghost.source_blocks(), G = ghost.grid_blocks();
  const std::size_t wn = ghost.window_nodes(), gn = ghost.nodes_per_block();
  auto sorted = [](std::vector<std::size_t> v) { return std::sort(v.begin(), v.end()), v; };
  std::vector<std::size_t> all_sources(S), all_grid(G);
  for (std::size_t i = 0; i < S; ++i) all_sources[i] = i;
  for (std::size_t i = 0; i < G; ++i) all_grid[i] = i;
  ASSERT_EQ(sorted(ghost.source_order()), all_sources) << what;
  ASSERT_EQ(sorted(ghost.grid_order()), all_grid) << what;
  if (mpi::size(MPI_COMM_WORLD) == 1) {
    EXPECT_EQ(ghost.boundary_sources(), 0u) << what << ": one rank has no boundary";
    EXPECT_EQ(ghost.boundary_grid_blocks(), 0u) << what;
  }
  const Real nan = std::numeric_limits<Real>::quiet_NaN();
  auto bitwise_equal = [](const std::vector<Real>& a, const std::vector<Real>& b) {
    return a.size() == b.size() &&
           (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(Real)) == 0);
  };
  constexpr int C = 2;
  std::vector<Real> windows(S * wn * C);
  for (std::size_t b = 0; b < S; ++b)
    for (std::size_t n = 0; n < wn * C; ++n)
      windows[b * wn * C + n] = 0.25 + unit(hash(ghost.source_keys()[b], 5) + n, 1);
  std::vector<Real> expected, got;
  ghost.scatter_add(windows, C, expected);
  std::vector<Real> partial = windows;
  for (std::size_t i = ghost.boundary_sources(); i < S; ++i)
    std::fill_n(partial.begin() + ghost.source_order()[i] * wn * C, wn * C, nan);
  ghost.start_scatter(partial, C);
  for (std::size_t i = ghost.boundary_sources(); i < S; ++i) {
    const std::size_t at = ghost.source_order()[i] * wn * C;
    std::copy_n(windows.begin() + at, wn * C, partial.begin() + at);
  }
  ghost.finish_scatter(partial, C, got);
  EXPECT_TRUE(bitwise_equal(got, expected)) << what << ": split scatter_add differs";

  std::vector<Real> grid = expected, expected_windows, got_windows;
  ghost.gather(grid, C, expected_windows);
  std::vector<Real> partial_grid = grid;
  for (std::size_t i = ghost.boundary_grid_blocks(); i < G; ++i)
    std::fill_n(partial_grid.begin() + ghost.grid_order()[i] * gn * C, gn * C, nan);
  ghost.start_gather(partial_grid, C);
  partial_grid = grid;
  ghost.finish_gather(partial_grid, C, got_windows);
  EXPECT_TRUE(bitwise_equal(got_windows, expected_windows)) << what << ": split gather differs";
}

void expect_ghost_exchange(int dimension, int block, std::size_t per_rank, Layout layout) {
  const Scene s = make_scene(dimension, block, per_rank, layout);
  const std::string what =
      std::to_string(dimension) + "D B=" + std::to_string(block) + " " + layout_name(layout);
  const int ranks = mpi::size(MPI_COMM_WORLD);
  const int without_particles = testing::count_ranks(MPI_COMM_WORLD, s.particles.size() == 0);
  GhostExchange ghost(MPI_COMM_WORLD, s.g);
  ghost.build(s.blocks, s.partition);
  const int without_grid = testing::count_ranks(MPI_COMM_WORLD, ghost.grid_blocks() == 0);
  if (ranks > 1 && layout != Layout::Balanced) {
    EXPECT_GT(without_particles, 0) << what;
  }
  if (ranks > 1 && (layout == Layout::LastRankEmpty || layout == Layout::FirstRankEmpty)) {
    EXPECT_GT(without_grid, 0) << what << ": a rank should own nothing at all";
  }
  if (ranks > 1 && layout == Layout::LastRankGridOnly && mpi::rank(MPI_COMM_WORLD) == ranks - 1) {
    EXPECT_EQ(s.particles.size(), 0u) << what << ": the last rank should own no particles";
    EXPECT_GT(ghost.grid_blocks(), 0u) << what << ": the last rank should own grid blocks";
  }
  EXPECT_EQ(ghost.window_nodes(),
            dimension == 3 ? (block + 3) * (block + 3) * (block + 3) : (block + 3) * (block + 3));
  EXPECT_EQ(ghost.nodes_per_block(), dimension == 3 ? block * block * block : block * block);

  expect_grid_blocks_are_the_dilation(s, ghost, what);
  expect_mass_is_conserved(s, ghost, what);
  expect_scatter_adds_every_covering_window(s, ghost, what);
  expect_gather_fills_windows_exactly(s, ghost, what);
  expect_split_exchange_matches_blocking(ghost, what);
  expect_mass_is_conserved(s, ghost, what + " (plan reused)");
}

TEST(GhostExchange, Balanced3D) { expect_ghost_exchange(3, 4, 500, Layout::Balanced); }
TEST(GhostExchange, Balanced2D) { expect_ghost_exchange(2, 4, 400, Layout::Balanced); }
TEST(GhostExchange, SmallestBlock2D) { expect_ghost_exchange(2, 3, 300, Layout::Balanced); }
TEST(GhostExchange, FirstRankOwnsNothing3D) { expect_ghost_exchange(3, 4, 400, Layout::FirstRankEmpty); }
TEST(GhostExchange, LastRankOwnsNothing2D) { expect_ghost_exchange(2, 4, 400, Layout::LastRankEmpty); }
TEST(GhostExchange, LastRankOwnsOnlyGridBlocks3D) {
  expect_ghost_exchange(3, 4, 400, Layout::LastRankGridOnly);
}
TEST(GhostExchange, LastRankOwnsOnlyGridBlocks2D) {
  expect_ghost_exchange(2, 3, 300, Layout::LastRankGridOnly);
}
TEST(GhostExchange, AllOnRankZero3D) { expect_ghost_exchange(3, 4, 200, Layout::AllOnRankZero); }
TEST(GhostExchange, NoParticlesAnywhere) { expect_ghost_exchange(3, 4, 0, Layout::Balanced); }

// One exchange object rebuilt for a new partition: the new plan replaces the old one entirely.
TEST(GhostExchange, RebuildForAnotherPartition) {
  GhostExchange ghost(MPI_COMM_WORLD, geometry(3, 4));
  for (Layout layout :
       {Layout::Balanced, Layout::FirstRankEmpty, Layout::LastRankGridOnly, Layout::Balanced}) {
    const Scene s = make_scene(3, 4, 300, layout);
    ghost.build(s.blocks, s.partition);
    const std::string what = std::string("rebuilt for ") + layout_name(layout);
    expect_grid_blocks_are_the_dilation(s, ghost, what);
    expect_scatter_adds_every_covering_window(s, ghost, what);
    expect_gather_fills_windows_exactly(s, ghost, what);
    expect_split_exchange_matches_blocking(ghost, what);
  }
}

TEST(GhostExchange, BlocksSmallerThanThreeCellsAreRefused) {
  EXPECT_THROW(GhostExchange(MPI_COMM_WORLD, geometry(3, 2)), Error);
  EXPECT_THROW(GhostExchange(MPI_COMM_WORLD, geometry(2, 1)), Error);
}

}  // namespace
}  // namespace nendo
