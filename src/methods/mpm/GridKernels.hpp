#pragma once
// The particle–grid pieces every MPM stage is made of, for dimension D and kernel Kernel
// (QuadraticSpline or CubicSpline): a particle's stencil in its block's window (spec 002 §5.2),
// the separable scatter of a particle's contribution into the window, and the separable gather
// of a gradient ∇v_p = Σ_i v_i ∇w_ipᵀ. The transfers (Transfers.hpp) and the implicit system
// (ImplicitSystem.hpp) are written with them.
#include <Eigen/Dense>

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
