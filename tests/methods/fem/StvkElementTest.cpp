// Spec 004 §8 test 2 (element correctness) and the strain measures of §4.4.
#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <Eigen/Geometry>
#include <cmath>
#include <vector>

#include "methods/fem/StvkElement.hpp"
#include "methods/fem/TetHierarchy.hpp"

namespace nendo::fem {
namespace {

using Positions = Real[4][3];
using Vec = Eigen::Matrix<Real, 3, 1>;

constexpr Real kYoung = 1e7, kPoisson = 0.3;
constexpr Real kLambda = kYoung * kPoisson / ((1 + kPoisson) * (1 - 2 * kPoisson));
constexpr Real kMu = kYoung / (2 * (1 + kPoisson));

struct Tet {
  Real x[4][3];
};

// A generic rest tet (positive orientation) and its mirror image (negative, like half of Bey's children).
Tet rest_tet(bool mirrored = false) {
  Tet t{{{0.01, -0.02, 0.03}, {0.11, 0.01, -0.01}, {0.03, 0.09, 0.02}, {-0.01, 0.02, 0.12}}};
  if (mirrored) std::swap(t.x[2], t.x[3]);
  return t;
}

RestShape rest_of(const Tet& t) { return rest_shape(t.x[0], t.x[1], t.x[2], t.x[3]); }

// x = A X + c with a fixed "random" A near the identity, plus a small non-affine wobble.
Tet deformed(const Tet& rest, const Mat3& A, Real wobble = 0) {
  const Real noise[4][3] = {{0.3, -0.7, 0.2}, {-0.4, 0.1, 0.9}, {0.6, 0.5, -0.3}, {-0.2, -0.8, 0.4}};
  Tet t;
  for (int a = 0; a < 4; ++a) {
    const Vec x = A * Vec(rest.x[a][0], rest.x[a][1], rest.x[a][2]) + Vec(0.5, -0.2, 0.1);
    for (int i = 0; i < 3; ++i) t.x[a][i] = x[i] + wobble * noise[a][i];
  }
  return t;
}

Mat3 moderate_deformation() {
  Mat3 A;
  A << 1.08, 0.05, -0.03, -0.04, 0.94, 0.06, 0.02, -0.07, 1.11;
  return A;
}

Mat3 rotation() { return Eigen::AngleAxis<Real>(0.9, Vec(1, -2, 0.5).normalized()).toRotationMatrix(); }

Real max_abs(const Positions& f) {
  Real m = 0;
  for (int a = 0; a < 4; ++a)
    for (int i = 0; i < 3; ++i) m = std::max(m, std::abs(f[a][i]));
  return m;
}

// Plain loops for the 12×12 checks: GCC 12 reports false -W(maybe-)uninitialized inside Eigen's
// AVX-512 reductions and eigensolver for that size under -march=native.
Real max_abs(const Mat12& M) {
  Real m = 0;
  for (int j = 0; j < 12; ++j)
    for (int i = 0; i < 12; ++i) m = std::max(m, std::abs(M(i, j)));
  return m;
}

// Whether the symmetric M admits a Cholesky factorisation (M ≻ 0).
bool is_positive_definite(const Mat12& M) {
  Real L[12][12] = {};
  for (int j = 0; j < 12; ++j) {
    Real pivot = M(j, j);
    for (int k = 0; k < j; ++k) pivot -= L[j][k] * L[j][k];
    if (!(pivot > 0)) return false;
    L[j][j] = std::sqrt(pivot);
    for (int i = j + 1; i < 12; ++i) {
      Real sum = M(i, j);
      for (int k = 0; k < j; ++k) sum -= L[i][k] * L[j][k];
      L[i][j] = sum / L[j][j];
    }
  }
  return true;
}

Real quadratic_form(const Mat12& M, const Real (&d)[4][3]) {
  Real q = 0;
  for (int r = 0; r < 12; ++r)
    for (int c = 0; c < 12; ++c) q += d[r / 3][r % 3] * M(r, c) * d[c / 3][c % 3];
  return q;
}

Mat3 stress_tensor(const Voigt& s) {
  Mat3 S;
  S << s[0], s[3], s[4], s[3], s[1], s[5], s[4], s[5], s[2];
  return S;
}

Mat3 basis_strain(int m) {  // B^m of spec §4.3
  const int i[6] = {0, 1, 2, 0, 0, 1}, j[6] = {0, 1, 2, 1, 2, 2};
  Mat3 B = Mat3::Zero();
  B(i[m], j[m]) += m < 3 ? 1 : 0.5;
  if (m >= 3) B(j[m], i[m]) += 0.5;
  return B;
}

std::vector<Stiffness> materials() {
  return {isotropic_stiffness(kLambda, kMu), fibre_stiffness(kLambda, kMu, {1, 2, -0.5}, 9 * kYoung)};
}

TEST(StvkElement, RigidMotionGivesNoForce) {
  for (bool mirrored : {false, true}) {
    const Tet rest = rest_tet(mirrored);
    const RestShape shape = rest_of(rest);
    const Tet moved = deformed(rest, rotation());
    for (const Stiffness& D : materials()) {
      Real f[4][3];
      element_forces(shape, D, moved.x, f);
      EXPECT_LT(max_abs(f), 1e-10 * kYoung * std::pow(shape.volume, 2.0 / 3));
      EXPECT_LT(strain_energy(shape, D, moved.x), 1e-20 * kYoung * shape.volume);
    }
  }
}

TEST(StvkElement, RestShapeUsesTheUnsignedVolume) {
  const RestShape positive = rest_of(rest_tet(false)), negative = rest_of(rest_tet(true));
  EXPECT_GT(positive.volume, 0);
  EXPECT_NEAR(negative.volume, positive.volume, 1e-15);
  const Tet rest = rest_tet(true);
  Real x[4][3];
  for (int a = 0; a < 4; ++a)
    for (int i = 0; i < 3; ++i) x[a][i] = 2 * rest.x[a][i];
  EXPECT_TRUE(deformation_gradient(negative, x).isApprox(2 * Mat3::Identity(), 1e-13));
}

// An affine map of a homogeneous mesh is an equilibrium: interior nodes feel no net force. Level 1
// of the hierarchy mixes both orientations, so |det D_m| must be used consistently.
TEST(StvkElement, AffinePatchHasNoNetInteriorForce) {
  TetMesh box;
  const int n = 3;
  for (int k = 0; k <= n; ++k)
    for (int j = 0; j <= n; ++j)
      for (int i = 0; i <= n; ++i) box.vertices.insert(box.vertices.end(), {Real(i), Real(j), Real(k)});
  auto id = [&](int i, int j, int k) { return i + (n + 1) * (j + (n + 1) * k); };
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        std::array<int, 3> axes = {0, 1, 2};
        do {
          std::array<int, 3> at = {i, j, k};
          box.tets.push_back(id(i, j, k));
          for (int s = 0; s < 3; ++s) {
            ++at[axes[s]];
            box.tets.push_back(id(at[0], at[1], at[2]));
          }
        } while (std::next_permutation(axes.begin(), axes.end()));
      }
  const TetHierarchy h = build_hierarchy(box, 1);
  const Mat3 A = moderate_deformation();
  for (const Stiffness& D : materials())
    for (int l = 0; l <= 1; ++l) {
      std::vector<Real> force(3 * h.node_count(), 0);
      Real largest = 0;
      for (Index t = h.level_begin[l]; t < h.level_begin[l + 1]; ++t) {
        Tet rest;
        for (int a = 0; a < 4; ++a)
          for (int i = 0; i < 3; ++i) rest.x[a][i] = h.rest_position(h.corners(t)[a])[i];
        const Tet x = deformed(rest, A);
        Real f[4][3];
        element_forces(rest_of(rest), D, x.x, f);
        largest = std::max(largest, max_abs(f));
        for (int a = 0; a < 4; ++a)
          for (int i = 0; i < 3; ++i) force[3 * h.corners(t)[a] + i] += f[a][i];
      }
      int interior = 0;
      for (Index node = 0; node < h.node_level_end[l]; ++node) {
        const Real* X = h.rest_position(node);
        bool on_boundary = false;
        for (int i = 0; i < 3; ++i) on_boundary |= X[i] == 0 || X[i] == n;
        if (on_boundary) continue;
        ++interior;
        for (int i = 0; i < 3; ++i)
          EXPECT_LT(std::abs(force[3 * node + i]), 1e-12 * largest) << "node " << node;
      }
      EXPECT_EQ(interior, l == 0 ? 8 : 125);
      EXPECT_GT(largest, 0);
    }
}

TEST(StvkElement, ForcesAreMinusTheEnergyGradient) {
  for (bool mirrored : {false, true})
    for (const Stiffness& D : materials()) {
      const Tet rest = rest_tet(mirrored);
      const RestShape shape = rest_of(rest);
      Tet x = deformed(rest, moderate_deformation(), 2e-3);
      Real f[4][3];
      element_forces(shape, D, x.x, f);
      const Real h = 1e-7;
      Real error = 0;
      for (int a = 0; a < 4; ++a)
        for (int i = 0; i < 3; ++i) {
          const Real x0 = x.x[a][i];
          x.x[a][i] = x0 + h;
          const Real plus = strain_energy(shape, D, x.x);
          x.x[a][i] = x0 - h;
          const Real minus = strain_energy(shape, D, x.x);
          x.x[a][i] = x0;
          error = std::max(error, std::abs(f[a][i] + (plus - minus) / (2 * h)));
        }
      EXPECT_LT(error, 1e-6 * max_abs(f));
      EXPECT_GT(max_abs(f), 0);
    }
}

// The round-off floor of the implicit step (FemBackwardEuler): far from the origin and at small
// strain, moving the corners by one unit in the last place changes the forces by 1e-8 of
// themselves (measured: 1e-8 N of 0.5 N); element_force_round_off bounds it (1e-7 N).
TEST(StvkElement, ForceRoundOffBoundsTheEffectOfRoundedPositions) {
  const Tet rest = rest_tet();
  const RestShape shape = rest_of(rest);
  Mat3 A = Mat3::Identity();
  A(0, 0) += 2e-5, A(1, 2) += 1e-5;
  Tet x = deformed(rest, A);
  for (auto& corner : x.x)
    for (Real& c : corner) c += 50;  // a node 50 m from the origin, tets 0.1 m across
  for (const Stiffness& D : materials()) {
    Real f[4][3], round_off[4];
    element_forces(shape, D, x.x, f);
    element_force_round_off(shape, D, x.x, round_off);
    Real worst[4] = {0, 0, 0, 0};
    for (int pattern = 1; pattern < 1 << 12; pattern = 3 * pattern + 1) {
      Tet moved = x;
      for (int k = 0; k < 12; ++k) {
        Real& c = moved.x[k / 3][k % 3];
        c = std::nextafter(c, (pattern >> k) & 1 ? 1e9 : -1e9);
      }
      Real g[4][3];
      element_forces(shape, D, moved.x, g);
      for (int a = 0; a < 4; ++a)
        worst[a] = std::max(worst[a], std::hypot(g[a][0] - f[a][0], g[a][1] - f[a][1], g[a][2] - f[a][2]));
    }
    for (int a = 0; a < 4; ++a) {
      const Real force = std::hypot(f[a][0], f[a][1], f[a][2]);
      EXPECT_LE(worst[a], round_off[a]) << "corner " << a;
      EXPECT_GT(worst[a], 1e3 * 1e-12 * force) << "corner " << a;  // a floor of 1e-12 |f| is far too low
    }
  }
}

TEST(StvkElement, ObrienHodginsFormEqualsTheStandardForm) {
  for (bool mirrored : {false, true})
    for (const Stiffness& D : materials())
      for (Real wobble : {0.0, 5e-3}) {
        const Tet rest = rest_tet(mirrored);
        const Tet x = deformed(rest, moderate_deformation() * rotation(), wobble);
        Real f[4][3], g[4][3];
        element_forces(rest_of(rest), D, x.x, f);
        obrien_forces(rest.x, D, x.x, g);
        Real difference = 0;
        for (int a = 0; a < 4; ++a)
          for (int i = 0; i < 3; ++i) difference = std::max(difference, std::abs(f[a][i] - g[a][i]));
        EXPECT_LT(difference, 1e-12 * max_abs(f));
      }
}

TEST(StvkElement, HessianIsTheDerivativeOfMinusTheForces) {
  for (bool mirrored : {false, true})
    for (const Stiffness& D : materials()) {
      const Tet rest = rest_tet(mirrored);
      const RestShape shape = rest_of(rest);
      Tet x = deformed(rest, moderate_deformation() * rotation(), 2e-3);
      const Mat12 H = element_hessian(shape, D, x.x);
      const Real h = 1e-7;
      Mat12 numeric = Mat12::Zero();
      for (int b = 0; b < 4; ++b)
        for (int k = 0; k < 3; ++k) {
          Real plus[4][3], minus[4][3];
          const Real x0 = x.x[b][k];
          x.x[b][k] = x0 + h;
          element_forces(shape, D, x.x, plus);
          x.x[b][k] = x0 - h;
          element_forces(shape, D, x.x, minus);
          x.x[b][k] = x0;
          for (int a = 0; a < 4; ++a)
            for (int i = 0; i < 3; ++i) numeric(3 * a + i, 3 * b + k) = -(plus[a][i] - minus[a][i]) / (2 * h);
        }
      EXPECT_LT(max_abs(H - numeric), 1e-6 * max_abs(H));
      EXPECT_LT(max_abs(H - H.transpose()), 1e-12 * max_abs(H));
    }
}

TEST(StvkElement, DefiniteHessianIsPositiveUnderCompressionAndExactUnderTension) {
  const Stiffness D = isotropic_stiffness(kLambda, kMu);
  const Tet rest = rest_tet();
  const RestShape shape = rest_of(rest);
  Real f[4][3];

  const Tet compressed = deformed(rest, 0.75 * moderate_deformation() * rotation());
  const Voigt s_compressed = element_forces(shape, D, compressed.x, f);
  ASSERT_LT(Eigen::SelfAdjointEigenSolver<Mat3>(stress_tensor(s_compressed)).eigenvalues().maxCoeff(), 0);
  const Mat12 exact = element_hessian(shape, D, compressed.x);
  const Mat12 definite = element_hessian(shape, D, compressed.x, true);
  // Translations are null vectors: shift by a tiny multiple of the scale before factorising.
  const Mat12 shift = 1e-12 * max_abs(exact) * Mat12::Identity();
  EXPECT_TRUE(is_positive_definite(definite + shift));
  EXPECT_FALSE(is_positive_definite(exact + shift));
  // StVK's tangent is indefinite here: an infinitesimal rotation (d = W x) releases compression.
  Real spin[4][3];
  Mat3 W;
  W << 0, -0.4, 0.9, 0.4, 0, -0.2, -0.9, 0.2, 0;
  for (int a = 0; a < 4; ++a) Eigen::Map<Vec>{spin[a]} = W * Eigen::Map<const Vec>(compressed.x[a]);
  const Real released = quadratic_form(exact, spin);
  EXPECT_LT(released, 0);
  // With S ≺ 0 clamped to 0 a rotation costs nothing (Ė = 0 to first order): 0 up to round-off.
  EXPECT_GE(quadratic_form(definite, spin), 1e-12 * released);

  const Tet stretched = deformed(rest, 1.2 * moderate_deformation() * rotation());
  const Voigt s_stretched = element_forces(shape, D, stretched.x, f);
  ASSERT_GT(Eigen::SelfAdjointEigenSolver<Mat3>(stress_tensor(s_stretched)).eigenvalues().minCoeff(), 0);
  const Mat12 H = element_hessian(shape, D, stretched.x);
  EXPECT_LT(max_abs(element_hessian(shape, D, stretched.x, true) - H), 1e-12 * max_abs(H));
}

TEST(StvkElement, BiotStrainOfTheSampledMapsIsTheirAmplitude) {
  const Mat3 R = rotation();
  for (int m = 0; m < 6; ++m)
    for (Real alpha : {0.3, -0.2, 1e-3}) {
      const Mat3 F = Mat3::Identity() + alpha * basis_strain(m);
      const Voigt expected = alpha * Voigt::Unit(m);
      EXPECT_LT((biot_strain(F) - expected).cwiseAbs().maxCoeff(), 1e-12) << "m " << m << " alpha " << alpha;
      EXPECT_LT((biot_strain(R * F) - expected).cwiseAbs().maxCoeff(), 1e-12)
          << "m " << m << " alpha " << alpha;
    }
}

TEST(StvkElement, GreenStrainOfAStretchAndItsRate) {
  const Mat3 stretch_matrix = Vec(1.1, 0.9, 1.3).asDiagonal();
  const Voigt stretch = green_strain(stretch_matrix);
  EXPECT_NEAR(stretch[0], 0.5 * (1.21 - 1), 1e-15);
  EXPECT_NEAR(stretch[1], 0.5 * (0.81 - 1), 1e-15);
  EXPECT_NEAR(stretch[2], 0.5 * (1.69 - 1), 1e-15);
  EXPECT_LT(stretch.tail<3>().cwiseAbs().maxCoeff(), 1e-15);
  EXPECT_LT((green_strain(rotation() * stretch_matrix) - stretch).cwiseAbs().maxCoeff(), 1e-14);

  const Mat3 F = moderate_deformation() * rotation();
  Mat3 Fdot;
  Fdot << 0.3, -1.2, 0.4, 0.7, 0.2, -0.5, -0.9, 0.6, 0.1;
  const Real dt = 1e-4;
  const Voigt numeric = (green_strain(F + dt * Fdot) - green_strain(F - dt * Fdot)) / (2 * dt);
  EXPECT_LT((green_strain_rate(F, Fdot) - numeric).cwiseAbs().maxCoeff(), 1e-10);
}

TEST(StvkElement, StiffnessesAreTheirConstitutiveLaws) {
  Mat3 E;
  E << 0.02, -0.01, 0.005, -0.01, -0.03, 0.015, 0.005, 0.015, 0.01;
  Voigt e;  // Voigt order with engineering shear (spec §2)
  e << E(0, 0), E(1, 1), E(2, 2), 2 * E(0, 1), 2 * E(0, 2), 2 * E(1, 2);
  const Mat3 S = stress_tensor(isotropic_stiffness(kLambda, kMu) * e);
  const Mat3 lame = kLambda * E.trace() * Mat3::Identity() + 2 * kMu * E;
  EXPECT_LT((S - lame).cwiseAbs().maxCoeff(), 1e-9 * lame.cwiseAbs().maxCoeff());

  // The fibre adds ½k_f (âᵀEâ)² to the energy density ½eᵀDe (spec §7 Fig. 3).
  const Vec3 fibre = {2, -1, 0.5};
  const Vec a = Vec(fibre[0], fibre[1], fibre[2]).normalized();
  const Real k = 9 * kYoung;
  const Real added = e.dot((fibre_stiffness(kLambda, kMu, fibre, k) - isotropic_stiffness(kLambda, kMu)) * e);
  EXPECT_NEAR(added, k * std::pow(a.dot(E * a), 2), 1e-12 * k * std::pow(a.dot(E * a), 2));
}

TEST(StvkElement, ViscousStressFollowsTheStrainRate) {
  const Stiffness D = isotropic_stiffness(kLambda, kMu);
  const Tet rest = rest_tet();
  const RestShape shape = rest_of(rest);
  const Real phi = 3.0, psi = 2.0;
  Real f[4][3], g[4][3], v[4][3];

  // A spinning body (v = W x, W skew) has Ė = 0: only the elastic stress.
  const Tet x = deformed(rest, moderate_deformation());
  Mat3 W;
  W << 0, -0.4, 0.9, 0.4, 0, -0.2, -0.9, 0.2, 0;
  for (int a = 0; a < 4; ++a) Eigen::Map<Vec>{v[a]} = W * Eigen::Map<const Vec>(x.x[a]);
  const Voigt elastic = element_forces(shape, D, x.x, f);
  EXPECT_LT((element_forces(shape, D, phi, psi, x.x, v, g) - elastic).cwiseAbs().maxCoeff(),
            1e-12 * elastic.cwiseAbs().maxCoeff());
  for (int a = 0; a < 4; ++a)
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(f[a][i], g[a][i], 1e-12 * max_abs(f));

  // At rest shape, a uniform dilation rate r gives S = (3φ + 2ψ) r I; a shear rate γ̇ gives ψ γ̇.
  Mat3 L = 0.1 * Mat3::Identity();
  L(0, 1) = L(1, 0) = 0.05;  // engineering shear rate 0.1
  for (int a = 0; a < 4; ++a) Eigen::Map<Vec>{v[a]} = L * Eigen::Map<const Vec>(rest.x[a]);
  // (A unit D keeps the round-off of F = I elastic stress far below the tolerance.)
  const Voigt s = element_forces(shape, isotropic_stiffness(1, 1), phi, psi, rest.x, v, g);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(s[i], (3 * phi + 2 * psi) * 0.1, 1e-12);
  EXPECT_NEAR(s[3], psi * 0.1, 1e-12);
  EXPECT_NEAR(s[4], 0, 1e-12);
  EXPECT_NEAR(s[5], 0, 1e-12);
}

}  // namespace
}  // namespace nendo::fem
