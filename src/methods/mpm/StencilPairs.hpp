#pragma once
// A window-local table of the stiffness blocks between grid nodes that one B-spline stencil
// couples: for each window node, its (2N − 1)^D neighbours, one D×D block each. Quadrature points
// (particles, or the coarse level's cell points) add K_rq for every pair of their stencil's nodes;
// the assembly then takes each node's touched blocks as one block row for PETSc (inserting every
// point's (N^D)² blocks directly cost 25 s per assembly at 200 k particles in 3-D). Shared by the
// fine assembly (MpmImplicitSystem::assemble) and multigrid's coarse level (ImplicitCoarseGrid).
#include <Eigen/Dense>
#include <cstddef>
#include <vector>

#include "core/Types.hpp"

namespace nendo {

template <int D, int N>
class StencilPairs {
 public:
  static constexpr int R = 2 * N - 1, O = D == 3 ? R * R * R : R * R, S = D == 3 ? N * N * N : N * N;
  static constexpr int DD = D * D;
  using Vec = Eigen::Matrix<Real, D, 1>;
  using Tangent = Eigen::Matrix<Real, DD, DD>;

  // window_nodes nodes, every block zero; the table stays zero between windows (take()).
  void reset(std::size_t window_nodes) {
    blocks_.assign(window_nodes * O * DD, 0.0), touched_.assign(window_nodes * O, 0);
  }
  // A stencil node's position (i, j, k) in pair-offset units.
  static int offset(int i, int j, int k) { return i + R * (j + R * k); }

  // One quadrature point: for its S stencil nodes (window node, offset, weight gradient g),
  // K_rq[α][τ] = Σ_σ T_r[α][(τσ)] g_qσ with T_r[α][(τσ)] = Σ_β C_(αβ),(τσ) g_rβ (spec §10.7).
  void add(const std::size_t* node, const int* offset, const Vec* g, const Tangent& C) {
    for (int r = 0; r < S; ++r) {
      Eigen::Matrix<Real, D, DD> T = Eigen::Matrix<Real, D, DD>::Zero();
      for (int a = 0; a < D; ++a)
        for (int be = 0; be < D; ++be) T.row(a) += g[r][be] * C.row(a * D + be);
      // The pair (r, q) sits at offset q − r from r: index (q − r) + (N − 1) per axis.
      const std::size_t base = node[r] * O + (O - 1) / 2 - offset[r];
      for (int q = 0; q < S; ++q) {
        Real* out = blocks_.data() + (base + offset[q]) * DD;
        for (int a = 0; a < D; ++a)
          for (int t = 0; t < D; ++t) {
            Real sum = 0;
            for (int si = 0; si < D; ++si) sum += T(a, t * D + si) * g[q][si];
            out[a * D + t] += sum;
          }
        touched_[base + offset[q]] = 1;
      }
    }
  }

  // Pair o of window node w (row-major D×D), and node w's own block.
  Real* block(std::size_t w, int o) { return blocks_.data() + (w * O + o) * DD; }
  Real* diagonal(std::size_t w) { return block(w, (O - 1) / 2); }
  // Whether pair o of node w was added to since it was last taken; taking clears the mark (the
  // caller zeroes the block it reads).
  bool take(std::size_t w, int o) {
    char& touched = touched_[w * O + o];
    const bool was = touched != 0;
    touched = 0;
    return was;
  }
  // The window node that pair o of node w reaches, in a window of extents ex × ey (× any).
  static std::size_t neighbour(std::size_t w, int o, std::ptrdiff_t ex, std::ptrdiff_t ey) {
    const int di = o % R - (N - 1), dj = (o / R) % R - (N - 1), dk = D == 3 ? o / (R * R) - (N - 1) : 0;
    return w + di + ex * (dj + ey * dk);
  }

 private:
  std::vector<Real> blocks_;
  std::vector<char> touched_;
};

}  // namespace nendo
