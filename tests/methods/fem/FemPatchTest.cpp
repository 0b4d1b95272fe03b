// The linear-tetrahedron patch test of validation.md §5 on the fem element: a unit cube of Kuhn
// tets (level 2 of a refined cube, interior nodes moved off the lattice), rollers on x = 0, y = 0,
// z = 0, the face x = 1 pulled to u_x = 1e-3, the rest free. Newton on the StVK energy must find the
// uniform uniaxial-stress state exactly: every node on the affine field of the analytic solution
// to 1e-10 (for StVK the lateral strain follows from S_yy = 0 on Green strains; it is −3.0e-4 to
// first order, as the linear reference says), σ_xx = 0.200 to first order.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <random>
#include <vector>

#include "methods/fem/StvkElement.hpp"
#include "methods/fem/TetHierarchy.hpp"

namespace nendo::fem {
namespace {

TetMesh kuhn_cube() {
  TetMesh m;
  for (int k = 0; k < 8; ++k)
    for (int a = 0; a < 3; ++a) m.vertices.push_back((k >> a) & 1);
  // The 6 tets around the diagonal 0-7: paths 0 → e_a → e_a + e_b → 7.
  const int paths[6][2] = {{1, 2}, {1, 4}, {2, 1}, {2, 4}, {4, 1}, {4, 2}};
  for (const auto& p : paths) {
    for (int v : {0, p[0], p[0] | p[1], 7}) m.tets.push_back(v);
  }
  return m;
}

TEST(FemPatch, UniaxialStressIsExactOnADistortedMesh) {
  const Real E = 200, nu = 0.3, pull = 1e-3;
  const Real lambda = E * nu / ((1 + nu) * (1 - 2 * nu)), mu = E / (2 * (1 + nu));
  const TetHierarchy h = build_hierarchy(kuhn_cube(), 2);
  const Index begin = h.level_begin[2], end = h.level_begin[3];
  const std::size_t n = static_cast<std::size_t>(h.node_level_end[2]);
  std::vector<Real> X(h.rest.begin(), h.rest.begin() + 3 * n);
  const auto on = [&](std::size_t v, int a, Real value) { return std::abs(X[3 * v + a] - value) < 1e-12; };
  std::mt19937 random(7);
  std::uniform_real_distribution<Real> jitter(-0.08, 0.08);
  for (std::size_t v = 0; v < n; ++v) {
    bool interior = true;
    for (int a = 0; a < 3; ++a) interior = interior && !on(v, a, 0) && !on(v, a, 1);
    if (interior)
      for (int a = 0; a < 3; ++a) X[3 * v + a] += jitter(random);
  }
  // The analytic StVK state: stretch 1 + pull along x, S_yy = S_zz = 0 → E_yy = −λ E_xx / (2(λ + μ)).
  const Real Exx = ((1 + pull) * (1 + pull) - 1) / 2, Eyy = -lambda * Exx / (2 * (lambda + mu));
  const Real lateral = std::sqrt(1 + 2 * Eyy) - 1;
  EXPECT_NEAR(lateral, -3.0e-4, 1e-6);
  // Constraints: u_a = 0 on the plane a = 0, u_x = pull on x = 1.
  std::vector<Real> x = X;
  std::vector<int> free_dof(3 * n, 1);
  for (std::size_t v = 0; v < n; ++v)
    for (int a = 0; a < 3; ++a) {
      if (on(v, a, 0)) free_dof[3 * v + a] = 0;
      if (a == 0 && on(v, 0, 1)) free_dof[3 * v] = 0, x[3 * v] = 1 + pull;
    }
  const Stiffness D = isotropic_stiffness(lambda, mu);
  std::vector<RestShape> rest;
  for (Index t = begin; t < end; ++t) {
    const Corners c = h.corners(t);
    rest.push_back(rest_shape(&X[3 * c[0]], &X[3 * c[1]], &X[3 * c[2]], &X[3 * c[3]]));
  }
  for (int iteration = 0; iteration < 10; ++iteration) {
    Eigen::VectorXd force = Eigen::VectorXd::Zero(3 * n);
    Eigen::MatrixXd K = Eigen::MatrixXd::Zero(3 * n, 3 * n);
    for (Index t = begin; t < end; ++t) {
      const Corners c = h.corners(t);
      Real xe[4][3], f[4][3];
      for (int a = 0; a < 4; ++a)
        for (int d = 0; d < 3; ++d) xe[a][d] = x[3 * c[a] + d];
      element_forces(rest[t - begin], D, xe, f);
      const Mat12 k = element_hessian(rest[t - begin], D, xe);
      for (int a = 0; a < 4; ++a)
        for (int d = 0; d < 3; ++d) {
          force[3 * c[a] + d] += f[a][d];
          for (int b = 0; b < 4; ++b)
            for (int e = 0; e < 3; ++e) K(3 * c[a] + d, 3 * c[b] + e) += k(3 * a + d, 3 * b + e);
        }
    }
    for (std::size_t i = 0; i < 3 * n; ++i)
      if (!free_dof[i]) {
        force[i] = 0;
        K.row(i).setZero(), K.col(i).setZero(), K(i, i) = 1;
      }
    if (force.norm() < 1e-13 * E) break;
    const Eigen::VectorXd step = K.ldlt().solve(force);
    for (std::size_t i = 0; i < 3 * n; ++i) x[i] += step[i];
  }
  Real worst = 0;
  for (std::size_t v = 0; v < n; ++v) {
    const Real expected[3] = {X[3 * v] * (1 + pull), X[3 * v + 1] * (1 + lateral),
                              X[3 * v + 2] * (1 + lateral)};
    for (int a = 0; a < 3; ++a) worst = std::max(worst, std::abs(x[3 * v + a] - expected[a]));
  }
  EXPECT_LT(worst, 1e-10);
  // σ_xx = F S Fᵀ / J: the uniaxial stress, E × strain to first order (StVK departs from the
  // linear reference's 0.200 at the order of the strain, 1e-3, times a few).
  const Real Sxx = lambda * (Exx + 2 * Eyy) + 2 * mu * Exx;
  const Real sigma = (1 + pull) * (1 + pull) * Sxx / ((1 + pull) * (1 + lateral) * (1 + lateral));
  EXPECT_NEAR(sigma, 0.200, 0.200 * 3 * pull);
}

}  // namespace
}  // namespace nendo::fem
