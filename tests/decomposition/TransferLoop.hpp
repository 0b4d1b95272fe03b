#pragma once
// A minimal particle-grid loop over the spine, for the determinism tests: quadratic B-spline P2G of
// mass and momentum into block windows, scatter-add, grid velocity, gather, G2P, advection,
// migration and periodic re-balancing. The physics is the MPM transfer of spec 002 §6 without
// stress; what matters is that every floating-point sum goes through the spine's reductions.
#include <cmath>
#include <vector>

#include "decomposition/Space.hpp"

namespace nendo::testing {

struct Weights {
  std::int64_t base[3];
  Real w[3][3];
};

inline Weights quadratic_weights(const BlockGeometry& g, const Real* x) {
  Weights q{};
  for (int a = 0; a < 3; ++a) {
    if (a >= g.dimension) {
      q.base[a] = 0, q.w[a][0] = 1, q.w[a][1] = q.w[a][2] = 0;
      continue;
    }
    const Real u = (x[a] - g.origin[a]) / g.dx;
    q.base[a] = static_cast<std::int64_t>(std::floor(u - 0.5));
    const Real f = u - static_cast<Real>(q.base[a]);
    q.w[a][0] = 0.5 * (1.5 - f) * (1.5 - f);
    q.w[a][1] = 0.75 - (f - 1) * (f - 1);
    q.w[a][2] = 0.5 * (f - 0.5) * (f - 0.5);
  }
  return q;
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
  const int ex = ghost.window_extent(0), ey = ghost.window_extent(1);
  const int span = (dim == 3) ? 3 : 1;

  std::vector<Real> windows(blocks.count() * ghost.window_nodes() * c, 0.0);
  for (std::size_t b = 0; b < blocks.count(); ++b) {
    const BlockCoord cb = decode_block_key(blocks.keys[b]);
    Real* win = windows.data() + b * ghost.window_nodes() * c;
    for (std::size_t p = blocks.begin(b); p < blocks.end(b); ++p) {
      const Weights q = quadratic_weights(g, x + dim * p);
      for (int k = 0; k < span; ++k)
        for (int j = 0; j < 3; ++j)
          for (int i = 0; i < 3; ++i) {
            const int wx = static_cast<int>(q.base[0] + i - std::int64_t(cb[0]) * g.block + 1);
            const int wy = static_cast<int>(q.base[1] + j - std::int64_t(cb[1]) * g.block + 1);
            const int wz = dim == 3 ? static_cast<int>(q.base[2] + k - std::int64_t(cb[2]) * g.block + 1) : 0;
            const Real w = q.w[0][i] * q.w[1][j] * (dim == 3 ? q.w[2][k] : 1.0);
            Real* node = win + c * (wx + ex * (wy + ey * wz));
            node[0] += w * m[p];
            for (int a = 0; a < dim; ++a) node[1 + a] += w * m[p] * v[dim * p + a];
          }
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
      const Weights q = quadratic_weights(g, x + dim * p);
      Real vp[3] = {0, 0, 0};
      for (int k = 0; k < span; ++k)
        for (int j = 0; j < 3; ++j)
          for (int i = 0; i < 3; ++i) {
            const int wx = static_cast<int>(q.base[0] + i - std::int64_t(cb[0]) * g.block + 1);
            const int wy = static_cast<int>(q.base[1] + j - std::int64_t(cb[1]) * g.block + 1);
            const int wz = dim == 3 ? static_cast<int>(q.base[2] + k - std::int64_t(cb[2]) * g.block + 1) : 0;
            const Real w = q.w[0][i] * q.w[1][j] * (dim == 3 ? q.w[2][k] : 1.0);
            const Real* node = win + dim * (wx + ex * (wy + ey * wz));
            for (int a = 0; a < dim; ++a) vp[a] += w * node[a];
          }
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
