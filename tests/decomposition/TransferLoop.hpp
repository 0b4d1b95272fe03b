#pragma once
// A minimal particle-grid loop over the spine, for the determinism tests: quadratic B-spline P2G of
// mass and momentum into block windows, scatter-add, grid velocity, gather, G2P, advection,
// migration and periodic re-balancing. The physics is the MPM transfer of spec 002 §6 without
// stress; what matters is that every floating-point sum goes through the spine's reductions.
#include <cmath>
#include <vector>

#include "core/BSpline.hpp"
#include "decomposition/Space.hpp"

namespace nendo::testing {

// Calls visit(window node index, weight) for the 3^d nodes of the particle at x in block cb.
template <class Visit>
void for_each_window_node(const BlockGeometry& g, const GhostExchange& ghost, const BlockCoord& cb,
                          const Real* x, Visit visit) {
  const QuadraticWeights q = quadratic_weights(g.dimension, g.dx, g.origin, x);
  const int ex = ghost.window_extent(0), ey = ghost.window_extent(1);
  const int span = g.dimension == 3 ? 3 : 1;
  int corner[3] = {0, 0, 0};
  for (int a = 0; a < g.dimension; ++a)
    corner[a] = static_cast<int>(q.base[a] - std::int64_t(cb[a]) * g.block + GhostExchange::kWindowLower);
  for (int k = 0; k < span; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 3; ++i)
        visit(corner[0] + i + ex * (corner[1] + j + ey * (corner[2] + k)), q.w[0][i] * q.w[1][j] * q.w[2][k]);
}

// Grid values after one step: [grid block][node][mass, momentum...].
struct StepResult {
  std::vector<Real> grid;
};

inline StepResult transfer_step(Space& space, Real dt, const Vec3& gravity) {
  const BlockGeometry& g = space.geometry();
  const int dim = g.dimension;
  const int c = 1 + dim;
  GhostExchange& ghost = space.ghost();
  ParticleSet& ps = space.particles();
  const ParticleBlocks& blocks = space.blocks();
  Real* x = ps.positions();
  Real* v = ps.real("velocity");
  const Real* m = ps.real("mass");

  std::vector<Real> windows(blocks.count() * ghost.window_nodes() * c, 0.0);
  for (std::size_t b = 0; b < blocks.count(); ++b) {
    const BlockCoord cb = decode_block_key(blocks.keys[b]);
    Real* win = windows.data() + b * ghost.window_nodes() * c;
    for (std::size_t p = blocks.begin(b); p < blocks.end(b); ++p) {
      for_each_window_node(g, ghost, cb, x + dim * p, [&](int n, Real w) {
        Real* node = win + c * n;
        node[0] += w * m[p];
        for (int a = 0; a < dim; ++a) node[1 + a] += w * m[p] * v[dim * p + a];
      });
    }
  }
  StepResult result;
  ghost.scatter_add(windows, c, result.grid);

  std::vector<Real> velocity(ghost.grid_blocks() * ghost.nodes_per_block() * dim, 0.0);
  for (std::size_t n = 0; n < ghost.grid_blocks() * ghost.nodes_per_block(); ++n) {
    const Real mass = result.grid[c * n];
    if (mass == 0.0) continue;
    for (int a = 0; a < dim; ++a) velocity[dim * n + a] = result.grid[c * n + 1 + a] / mass + dt * gravity[a];
  }
  std::vector<Real> vwin;
  ghost.gather(velocity, dim, vwin);

  for (std::size_t b = 0; b < blocks.count(); ++b) {
    const BlockCoord cb = decode_block_key(blocks.keys[b]);
    const Real* win = vwin.data() + b * ghost.window_nodes() * dim;
    for (std::size_t p = blocks.begin(b); p < blocks.end(b); ++p) {
      Real vp[3] = {0, 0, 0};
      for_each_window_node(g, ghost, cb, x + dim * p, [&](int n, Real w) {
        for (int a = 0; a < dim; ++a) vp[a] += w * win[dim * n + a];
      });
      for (int a = 0; a < dim; ++a) {
        v[dim * p + a] = vp[a];
        x[dim * p + a] += dt * vp[a];
      }
    }
  }
  space.migrate();
  return result;
}

}  // namespace nendo::testing
