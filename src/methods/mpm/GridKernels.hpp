#pragma once
// The particle–grid pieces every MPM stage is made of, for dimension D and kernel Kernel
// (QuadraticSpline or CubicSpline): a particle's stencil in its block's window (spec 002 §5.2),
// the separable scatter of a particle's contribution into the window, and the separable gather
// of a gradient ∇v_p = Σ_i v_i ∇w_ipᵀ. The transfers (Transfers.hpp) and the implicit system
// (ImplicitSystem.hpp) are written with them.
#include <Eigen/Dense>
#include <type_traits>

#include "core/BSpline.hpp"
#include "core/Lanes4.hpp"
#include "decomposition/BlockGeometry.hpp"
#include "decomposition/GhostExchange.hpp"

namespace nendo {

template <int D, class Kernel>
struct GridKernels {
  static constexpr int N = Kernel::kNodes;
  using Mat = Eigen::Matrix<Real, D, D>;
  using Vec = Eigen::Matrix<Real, D, 1>;
  using MatMap = Eigen::Map<Eigen::Matrix<Real, D, D, Eigen::RowMajor>>;
  using VecMap = Eigen::Map<Vec>;

  // The kernel of one particle along each axis: weights w, gradients dw, and the offsets
  // o = x_i − x_p of its N nodes, wo = w·o; corner: the window index of the first node.
  struct Stencil {
    Real w[D][N], dw[D][N], o[D][N], wo[D][N];
    int corner[D];
  };

  static Stencil stencil(const BlockGeometry& g, const BlockCoord& block, const Real* x) {
    Stencil s;
    const Real inv_h = 1 / g.dx;
    for (int a = 0; a < D; ++a) {
      const AxisWeights<N> axis = Kernel::axis((x[a] - g.origin[a]) * inv_h, inv_h);
      s.corner[a] =
          static_cast<int>(axis.base - std::int64_t(block[a]) * g.block + GhostExchange::kWindowLower);
      for (int i = 0; i < N; ++i) {
        s.w[a][i] = axis.w[i];
        s.dw[a][i] = axis.dw[i];
        s.o[a][i] = static_cast<Real>(axis.base + i) * g.dx + g.origin[a] - x[a];
        s.wo[a][i] = s.w[a][i] * s.o[a][i];
      }
    }
    return s;
  }

  // Whether stencil_lanes serves this kernel: 3D, a kernel with lane weights (quadratic).
  static constexpr bool kLanes = D == 3 && std::is_same_v<Kernel, QuadraticSpline>;
  using Lanes = ParticleLanes;
  static constexpr int kLaneCount = kParticleLanes;

  // The stencils of up to kLaneCount particles that share their first node, and so every node: one
  // particle per lane, the same operations as stencil(), so the same bits.
  struct StencilLanes {
    Lanes w[D][N], dw[D][N], wo[D][N];
    Lanes x[D];          // the positions
    std::size_t corner;  // the window index of the first node
  };

  // The window index of particle x's first stencil node (kLanes kernels): particles with equal
  // corners share a StencilLanes.
  static std::size_t corner(const BlockGeometry& g, const BlockCoord& block, int ex, int ey, const Real* x) {
    static_assert(D == 3, "kLanes kernels are 3D");
    const Real inv_h = 1 / g.dx;
    std::size_t c[D];
    for (int a = 0; a < D; ++a)
      c[a] = static_cast<std::size_t>(Kernel::base((x[a] - g.origin[a]) * inv_h) -
                                      std::int64_t(block[a]) * g.block + GhostExchange::kWindowLower);
    return c[0] + ex * (c[1] + ey * c[2]);
  }

  // The stencils of particles x + D index[l], l < count (≤ kLaneCount), which share the corner `corner` of
  // the block's window; lanes from count on repeat lane 0.
  static StencilLanes stencil_lanes(const BlockGeometry& g, std::size_t corner, const Real* x,
                                    const std::uint32_t* index, int count) {
    StencilLanes s;
    s.corner = corner;
    const Real inv_h = 1 / g.dx;
    std::size_t at[kLaneCount];
    for (int l = 0; l < kLaneCount; ++l) at[l] = D * std::size_t(index[l < count ? l : 0]);
    for (int a = 0; a < D; ++a) {
      const Lanes& xa = s.x[a] = gather_lanes(x + a, at);
      const std::int64_t base = Kernel::base((x[D * index[0] + a] - g.origin[a]) * inv_h);
      const Lanes u = (xa - g.origin[a]) * inv_h;
      Kernel::weights(u - static_cast<Real>(base), inv_h, s.w[a], s.dw[a]);
      for (int i = 0; i < N; ++i)
        s.wo[a][i] = s.w[a][i] * (static_cast<Real>(base + i) * g.dx + g.origin[a] - xa);
    }
    return s;
  }

  // gather_velocity for the particles of a StencilLanes: each node's velocity is read once for
  // all lanes. The same operations per lane as gather_velocity, so the same bits. v[c], B[c][a],
  // L[c][a]: the lanes of row c, column a. In two sweeps over the nodes (v and B, then L), so that
  // the sums stay in registers (AVX-512: 32; two sweeps add 9 multiply-adds per row).
  static void gather_velocity_lanes(const Real* window, int ex, int ey, const StencilLanes& s, Lanes (&v)[3],
                                    Lanes (&B)[3][3], Lanes (&L)[3][3]) {
    static_assert(D == 3, "3 components per node");
    const Lanes zero = {};
    for (int c = 0; c < 3; ++c) {
      v[c] = zero;
      for (int a = 0; a < 3; ++a) B[c][a] = L[c][a] = zero;
    }
    for_each_row_lanes(window, ex, ey, s, s.wo, [&](int j, int k, const Lanes(&Sw)[3], const Lanes(&So)[3]) {
      const Lanes wjk = s.w[1][j] * s.w[2][k], o1 = s.wo[1][j] * s.w[2][k], o2 = s.w[1][j] * s.wo[2][k];
      for (int c = 0; c < 3; ++c) {
        v[c] += wjk * Sw[c];
        B[c][0] += wjk * So[c];
        B[c][1] += o1 * Sw[c];
        B[c][2] += o2 * Sw[c];
      }
    });
    for_each_row_lanes(window, ex, ey, s, s.dw, [&](int j, int k, const Lanes(&Sw)[3], const Lanes(&Sd)[3]) {
      const Lanes wjk = s.w[1][j] * s.w[2][k], d1 = s.dw[1][j] * s.w[2][k], d2 = s.w[1][j] * s.dw[2][k];
      for (int c = 0; c < 3; ++c) {
        L[c][0] += wjk * Sd[c];
        L[c][1] += d1 * Sw[c];
        L[c][2] += d2 * Sw[c];
      }
    });
  }

  // fn(j, k, Sw, Sy) for each row (j, k) of a StencilLanes: Sw[c] = Σ_i w_0[i] v_c, Sy[c] = Σ_i y[0][i] v_c
  // over the row's nodes, y = wo or dw.
  template <class Fn>
  static void for_each_row_lanes(const Real* window, int ex, int ey, const StencilLanes& s,
                                 const Lanes (&y)[D][N], Fn&& fn) {
    for (int k = 0; k < N; ++k)
      for (int j = 0; j < N; ++j) {
        const Real* node = window + 3 * (s.corner + ex * (std::size_t(j) + ey * std::size_t(k)));
        Lanes Sw[3] = {}, Sy[3] = {};
        for (int i = 0; i < N; ++i)
          for (int c = 0; c < 3; ++c) {
            const Real vi = node[3 * i + c];
            Sw[c] += s.w[0][i] * vi;
            Sy[c] += y[0][i] * vi;
          }
        fn(j, k, Sw, Sy);
      }
  }

  // The first node of row (j, k) of a particle's stencil in its block's window.
  static std::size_t row_offset(const Stencil& s, int ex, int ey, int j, int k) {
    if constexpr (D == 3)
      return std::size_t(s.corner[0]) +
             ex * (std::size_t(s.corner[1] + j) + ey * std::size_t(s.corner[2] + k));
    return std::size_t(s.corner[0]) + ex * std::size_t(s.corner[1] + j);
  }

  // Adds to the D components at `first` of each stencil node (c components per node) the
  // separable sum
  //   w_ip a + Σ_axes (Π_{b≠axis} w_b) e_axis[i_axis]
  // (and w_ip m to component 0 when m is given). With a = m v_p and e_a[i] = w_a[i] o_a[i] (m D⁻¹B)_{:,a}
  // − Δt dw_a[i] τ_{:,a} this is the APIC momentum plus Δt times the stress force of spec §6.1 and
  // §8 eq. (189); the products are formed row by row instead of node by node.
  static void splat(Real* window, int c, int ex, int ey, const Stencil& s, const Vec& a, const Vec (&e)[D][N],
                    int first, const Real* mass) {
    for (int k = 0; k < (D == 3 ? N : 1); ++k)
      for (int j = 0; j < N; ++j) {
        Real wjk = s.w[1][j];
        Vec row_sum = a * wjk + e[1][j];  // 2D: w1 a + e1[j]
        if constexpr (D == 3) {
          wjk *= s.w[2][k];
          row_sum = a * wjk + s.w[2][k] * e[1][j] + s.w[1][j] * e[2][k];
        }
        Real* node = window + c * row_offset(s, ex, ey, j, k);
        for (int i = 0; i < N; ++i, node += c) {
          if (mass) node[0] += s.w[0][i] * wjk * *mass;
          for (int d = 0; d < D; ++d) node[first + d] += s.w[0][i] * row_sum[d] + wjk * e[0][i][d];
        }
      }
  }

  // splat for 3D with mass and momentum only (c = 4, first = 1), a node's four components in one
  // 4-wide update, w_i (m w_jk, row sum) + w_jk (0, e_0[i]), with splat's e_a[i] = w_a[i] o_a[i]
  // (scale B)_{:,a} − Δt dw_a[i] τ_{:,a} formed in the same lanes (B, τ: row-major d×d).
  static void splat_mass_momentum(Real* window, int ex, int ey, const Stencil& s, Real m, const Vec& a,
                                  const Real* B, Real scale, const Real* tau, Real dt) {
    static_assert(D == 3, "4 components per node: mass and 3 momentum components");
    const Lanes4 ma = {m, a[0], a[1], a[2]};
    Lanes4 e[D][N];
    for (int axis = 0; axis < D; ++axis) {
      const Lanes4 affine = scale * Lanes4{0, B[axis], B[3 + axis], B[6 + axis]};
      const Lanes4 stress = dt * Lanes4{0, tau[axis], tau[3 + axis], tau[6 + axis]};
      for (int i = 0; i < N; ++i) e[axis][i] = s.wo[axis][i] * affine - s.dw[axis][i] * stress;
    }
    for (int k = 0; k < N; ++k)
      for (int j = 0; j < N; ++j) {
        const Real wjk = s.w[1][j] * s.w[2][k];
        const Lanes4 row = wjk * ma + s.w[2][k] * e[1][j] + s.w[1][j] * e[2][k];
        Real* node = window + 4 * row_offset(s, ex, ey, j, k);
        for (int i = 0; i < N; ++i)
          store4(node + 4 * i, load4(node + 4 * i) + s.w[0][i] * row + wjk * e[0][i]);
      }
  }

  // Adds Q ∇w_ip to the D components at `first` of each stencil node: the force of a stress-like
  // Q (spec §8: Q = V⁰ P F̂ᵀ gives −f_i; §10.1: Q = V⁰ δP Fᵀ gives (K δu)_i).
  static void splat_gradient(Real* window, int c, int ex, int ey, const Stencil& s, const Mat& Q, int first) {
    Vec e[D][N];
    for (int a = 0; a < D; ++a)
      for (int i = 0; i < N; ++i) e[a][i] = s.dw[a][i] * Q.col(a);
    splat(window, c, ex, ey, s, Vec::Zero(), e, first, nullptr);
  }

  // Σ_i u_i ∇w_ipᵀ of the D components at `first` of a window field with c components per node
  // (spec §7.2 with u = v: the velocity gradient; §10.1 with u = δu: δF_p F_pⁿ⁻¹).
  static Mat gradient(const Real* window, int c, int ex, int ey, const Stencil& s, int first) {
    Mat L = Mat::Zero();
    for (int k = 0; k < (D == 3 ? N : 1); ++k)
      for (int j = 0; j < N; ++j) {
        const Real* node = window + c * row_offset(s, ex, ey, j, k) + first;
        Vec Sw = Vec::Zero(), Sd = Vec::Zero();
        for (int i = 0; i < N; ++i, node += c) {
          const Eigen::Map<const Vec> ui(node);
          Sw += s.w[0][i] * ui;
          Sd += s.dw[0][i] * ui;
        }
        const Real w2 = D == 3 ? s.w[D - 1][k] : 1;
        L.col(0) += (s.w[1][j] * w2) * Sd;
        L.col(1) += (s.dw[1][j] * w2) * Sw;
        if constexpr (D == 3) L.col(2) += (s.w[1][j] * s.dw[2][k]) * Sw;
      }
    return L;
  }

  // APIC's G2P sums of a 3D velocity window (3 components per node, read 4 at a time: the window
  // holds one value past its last node): v = Σ w v_i, B = Σ w v_i oᵀ, L = Σ v_i ∇wᵀ (spec §6.1,
  // §7.2), contracted along x first.
  static void gather_velocity(const Real* window, int ex, int ey, const Stencil& s, Vec& v, Mat& B, Mat& L) {
    static_assert(D == 3, "3 components per node");
    using Vec4 = Eigen::Matrix<Real, 4, 1>;
    Vec4 sv = Vec4::Zero(), b0 = sv, b1 = sv, b2 = sv, l0 = sv, l1 = sv, l2 = sv;
    for (int k = 0; k < N; ++k)
      for (int j = 0; j < N; ++j) {
        const Real* node = window + 3 * row_offset(s, ex, ey, j, k);
        Vec4 Sw = Vec4::Zero(), So = Sw, Sd = Sw;
        for (int i = 0; i < N; ++i) {
          const Vec4 vi = Eigen::Map<const Vec4>(node + 3 * i);
          Sw += s.w[0][i] * vi;
          So += s.wo[0][i] * vi;
          Sd += s.dw[0][i] * vi;
        }
        const Real wjk = s.w[1][j] * s.w[2][k];
        sv += wjk * Sw;
        b0 += wjk * So;
        b1 += (s.wo[1][j] * s.w[2][k]) * Sw;
        b2 += (s.w[1][j] * s.wo[2][k]) * Sw;
        l0 += wjk * Sd;
        l1 += (s.dw[1][j] * s.w[2][k]) * Sw;
        l2 += (s.w[1][j] * s.dw[2][k]) * Sw;
      }
    v = sv.template head<3>();
    B.col(0) = b0.template head<3>(), B.col(1) = b1.template head<3>(), B.col(2) = b2.template head<3>();
    L.col(0) = l0.template head<3>(), L.col(1) = l1.template head<3>(), L.col(2) = l2.template head<3>();
  }

  // Σ_i w_ip u_i of the D components at `first` of a window field with c components per node.
  static Vec interpolate(const Real* window, int c, int ex, int ey, const Stencil& s, int first) {
    Vec u = Vec::Zero();
    for (int k = 0; k < (D == 3 ? N : 1); ++k)
      for (int j = 0; j < N; ++j) {
        const Real* node = window + c * row_offset(s, ex, ey, j, k) + first;
        Vec Sw = Vec::Zero();
        for (int i = 0; i < N; ++i, node += c) Sw += s.w[0][i] * Eigen::Map<const Vec>(node);
        u += (s.w[1][j] * (D == 3 ? s.w[D - 1][k] : 1)) * Sw;
      }
    return u;
  }

  // Calls f(window node, weight index (i, j, k)) for the N^D nodes of a stencil.
  template <class F>
  static void for_each_node(int ex, int ey, const Stencil& s, F&& f) {
    for (int k = 0; k < (D == 3 ? N : 1); ++k)
      for (int j = 0; j < N; ++j) {
        const std::size_t row = row_offset(s, ex, ey, j, k);
        for (int i = 0; i < N; ++i) f(row + i, i, j, k);
      }
  }
};

}  // namespace nendo
