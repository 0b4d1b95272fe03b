// Spec 003 §9 tests 1-4 on the constraint kernels alone: kernel integrals and gradients, the
// lattice calibration, finite-difference checks of ∇F_i and ∇R_i, and the effect of one
// projection.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "methods/pbd_powder/PowderConstraints.hpp"

namespace nendo::pbd {
namespace {

// A power of two, so that lattice differences are exact and neighbours at exactly h = 2Δx (which
// Eq. 5's "within h" excludes, as the calibration of §5 does) are excluded exactly.
constexpr Real kSpacing = 1.0 / 256;

ConstraintParams params_for(int dimension, Real relaxation = 0) {
  ConstraintParams c;
  c.kernel = PowderKernel(2 * kSpacing, dimension);
  const LatticeReference ref = lattice_reference(c.kernel, kSpacing, dimension);
  c.rest_density = ref.rest_density;
  c.epsilon = relaxation * ref.denominator;
  c.rest_distance = ref.mean_distance;
  return c;
}

// Test 1: ∫ W_poly6 dV = 1 by the midpoint rule on a fine lattice, in 3D and 2D.
TEST(PowderKernel, Poly6IntegratesToOne) {
  for (int dimension : {2, 3}) {
    const PowderKernel kernel(1.0, dimension);
    const int n = dimension == 3 ? 200 : 2000;
    const Real step = 2.0 / n;
    Real sum = 0;
    for (int k = 0; k < (dimension == 3 ? n : 1); ++k)
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
          const Real x = -1 + (i + 0.5) * step, y = -1 + (j + 0.5) * step, z = -1 + (k + 0.5) * step;
          const Real r2 = x * x + y * y + (dimension == 3 ? z * z : 0);
          if (r2 < 1) sum += kernel.w(r2);
        }
    EXPECT_NEAR(sum * std::pow(step, dimension), 1.0, 1e-3) << dimension << "D";
  }
}

TEST(PowderKernel, SpikyGradientIsTheDerivativeOfSpiky) {
  const PowderKernel kernel(0.01, 3);
  for (Real r : {0.001, 0.003, 0.005, 0.0071, 0.0099}) {
    const Real e = 1e-7 * kernel.h();
    const Real numeric = (kernel.spiky(r + e) - kernel.spiky(r - e)) / (2 * e);
    const Real analytic = kernel.gradient_factor(r) * r;  // the radial component of ∇W
    EXPECT_NEAR(analytic, numeric, 1e-6 * std::fabs(numeric)) << "r " << r;
  }
  EXPECT_EQ(kernel.gradient_factor(0), 0.0);
}

// Test 2: ρ_0 Δx³ = 1.009775 and d̄_0 = (6 + 12√2 + 8√3)/26 Δx for h = 2Δx (spec §5; the spec
// rounds d̄_0 to 1.41640, it is 1.416422), and D_0 = 0.37339 / (ρ_0² Δx⁸) (the spec's Δx² is a
// slip: Σ|∇W|² scales as Δx⁻⁸).
TEST(PowderCalibration, LatticeValuesOfTheSpec) {
  const PowderKernel kernel(2 * kSpacing, 3);
  const LatticeReference ref = lattice_reference(kernel, kSpacing, 3);
  EXPECT_NEAR(ref.rest_density * std::pow(kSpacing, 3), 1.009775, 1e-6);
  EXPECT_NEAR(ref.mean_distance / kSpacing, (6 + 12 * std::sqrt(2.0) + 8 * std::sqrt(3.0)) / 26, 1e-12);
  EXPECT_NEAR(ref.mean_distance / kSpacing, 1.41640, 3e-5);
  EXPECT_NEAR(ref.denominator * ref.rest_density * ref.rest_density * std::pow(kSpacing, 8), 0.37339, 1e-5);
}

// A cube of n³ lattice points of spacing s (3 reals each), and every point's neighbours within h.
struct Cloud {
  std::vector<Real> p;
  std::vector<std::vector<std::uint32_t>> neighbours;
  void find(Real h) {
    const std::size_t n = p.size() / 3;
    neighbours.assign(n, {});
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        Real r2 = 0;
        for (int a = 0; a < 3; ++a) r2 += (p[3 * i + a] - p[3 * j + a]) * (p[3 * i + a] - p[3 * j + a]);
        if (i != j && r2 < h * h) neighbours[i].push_back(static_cast<std::uint32_t>(j));
      }
  }
  const std::uint32_t* begin(std::size_t i) const { return neighbours[i].data(); }
  const std::uint32_t* end(std::size_t i) const { return neighbours[i].data() + neighbours[i].size(); }
};

Cloud lattice_cube(int n, Real spacing) {
  Cloud c;
  for (int k = 0; k < n; ++k)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) c.p.insert(c.p.end(), {i * spacing, j * spacing, k * spacing});
  return c;
}

// The free-surface normal o_i = Σ_j |∇W_ij| (x_i − x_j) of rest_when: stopped (issue 28): zero
// inside a lattice cube, straight up with the reference's length on its top face, and tilted 45°
// on a top edge.
TEST(PowderCalibration, FreeSurfaceNormalOfALatticeCube) {
  const PowderKernel kernel(2 * kSpacing, 3);
  const LatticeReference ref = lattice_reference(kernel, kSpacing, 3);
  Cloud cube = lattice_cube(7, kSpacing);
  cube.find(kernel.h());
  auto outward = [&](int i, int j, int k) {
    const std::size_t at = static_cast<std::size_t>(i + 7 * (j + 7 * k));
    std::array<Real, 3> o{0, 0, 0};
    for (const std::uint32_t* n = cube.begin(at); n != cube.end(at); ++n) {
      Real d[3], r2 = 0;
      for (int a = 0; a < 3; ++a) d[a] = cube.p[3 * at + a] - cube.p[3 * *n + a], r2 += d[a] * d[a];
      const Real g = std::fabs(kernel.gradient_factor(std::sqrt(r2)));
      for (int a = 0; a < 3; ++a) o[a] += g * d[a];
    }
    return o;
  };
  const auto inside = outward(3, 3, 3), top = outward(3, 6, 3), edge = outward(3, 6, 6);
  for (int a = 0; a < 3; ++a) EXPECT_NEAR(inside[a], 0, 1e-9 * ref.surface);
  EXPECT_GT(ref.surface, 0);
  EXPECT_NEAR(top[1], ref.surface, 1e-12 * ref.surface);
  EXPECT_NEAR(top[0], 0, 1e-12 * ref.surface);
  EXPECT_NEAR(top[2], 0, 1e-12 * ref.surface);
  EXPECT_NEAR(edge[1], edge[2], 1e-12 * ref.surface);
  EXPECT_NEAR(edge[0], 0, 1e-12 * ref.surface);
}

TEST(PowderCalibration, InteriorLatticeParticleIsAtRest) {
  const ConstraintParams c = params_for(3, 0.01);
  Cloud cube = lattice_cube(7, kSpacing);
  cube.find(c.kernel.h());
  const std::uint32_t centre = 3 + 7 * 3 + 49 * 3;
  const DensityConstraint f =
      density_constraint(c, cube.p.data(), centre, cube.begin(centre), cube.end(centre));
  EXPECT_NEAR(f.value, 0.0, 1e-12);
  EXPECT_NEAR(f.lambda, 0.0, 1e-12 / f.density);
  const RestConstraint r = rest_constraint(c, cube.p.data(), centre, cube.begin(centre), cube.end(centre));
  EXPECT_NEAR(r.value, 0.0, 1e-12 * kSpacing * 26);
  std::vector<Real> lambda(cube.p.size() / 3, 0.0);
  for (std::size_t i = 0; i < lambda.size(); ++i)
    lambda[i] =
        density_constraint(c, cube.p.data(), static_cast<std::uint32_t>(i), cube.begin(i), cube.end(i))
            .lambda;
  Real dp[3] = {0, 0, 0};
  density_correction(c, cube.p.data(), lambda.data(), centre, cube.begin(centre), cube.end(centre), dp);
  for (int a = 0; a < 3; ++a) dp[a] += r.scale * r.gradient[a];
  for (int a = 0; a < 3; ++a) EXPECT_LT(std::fabs(dp[a]), 1e-12 * kSpacing);
}

// Test 3. PBF takes ∇W from the Spiky kernel while ρ uses Poly6, so the denominator of λ_i is
// Σ_k |∇_{p_k} F^s_i|² for F^s_i, the constraint with the Spiky density Σ_j W_spiky/ρ_0: that is
// checked against central differences of F^s_i (ε = 0: λ = −F/denominator). For R_i the
// differences of the implementation's own R_i give Σ_k |∇R_i|² (s_i = −R/that) and ∇_{p_i} R_i.
TEST(PowderConstraints, GradientsMatchFiniteDifferences) {
  const ConstraintParams c = params_for(3);
  std::mt19937_64 random(3);
  std::uniform_real_distribution<Real> u(0, 2.2 * kSpacing);
  for (int trial = 0; trial < 5; ++trial) {
    Cloud cloud;
    for (int k = 0; k < 30; ++k) cloud.p.insert(cloud.p.end(), {u(random), u(random), u(random)});
    cloud.find(c.kernel.h());
    const std::uint32_t i = 0;
    // Every particle whose position F_0 and R_0 depend on: 0 and its neighbours.
    std::vector<std::uint32_t> movers = {0};
    movers.insert(movers.end(), cloud.begin(0), cloud.end(0));
    const Real e = 1e-6 * kSpacing;
    auto spiky_constraint = [&](const std::vector<Real>& p) {
      Real rho = c.kernel.spiky(0);
      for (const std::uint32_t* k = cloud.begin(i); k != cloud.end(i); ++k) {
        Real r2 = 0;
        for (int a = 0; a < 3; ++a) r2 += (p[3 * i + a] - p[3 * *k + a]) * (p[3 * i + a] - p[3 * *k + a]);
        rho += c.kernel.spiky(std::sqrt(r2));
      }
      return rho / c.rest_density - 1;
    };
    Real sum_f = 0, sum_r = 0, grad_r_self[3] = {0, 0, 0};
    for (std::uint32_t k : movers)
      for (int a = 0; a < 3; ++a) {
        std::vector<Real> plus = cloud.p, minus = cloud.p;
        plus[3 * k + a] += e, minus[3 * k + a] -= e;
        const Real df = (spiky_constraint(plus) - spiky_constraint(minus)) / (2 * e);
        const Real dr = (rest_constraint(c, plus.data(), i, cloud.begin(i), cloud.end(i)).value -
                         rest_constraint(c, minus.data(), i, cloud.begin(i), cloud.end(i)).value) /
                        (2 * e);
        sum_f += df * df, sum_r += dr * dr;
        if (k == i) grad_r_self[a] = dr;
      }
    const DensityConstraint f = density_constraint(c, cloud.p.data(), i, cloud.begin(i), cloud.end(i));
    const RestConstraint r = rest_constraint(c, cloud.p.data(), i, cloud.begin(i), cloud.end(i));
    ASSERT_GT(cloud.neighbours[0].size(), 3u);
    EXPECT_NEAR(-f.value / f.lambda, sum_f, 1e-6 * sum_f) << "trial " << trial;
    EXPECT_NEAR(-r.value / r.scale, sum_r, 1e-6 * sum_r) << "trial " << trial;
    for (int a = 0; a < 3; ++a) EXPECT_NEAR(r.gradient[a], grad_r_self[a], 1e-6 * std::sqrt(sum_r));
  }
}

// Test 4: one Jacobi iteration of Eq. (3) on a lattice compressed by 5 % reduces Σ F_i² over
// the interior; for an isolated pair, one Jacobi application of Eq. (6)'s distance term (each
// particle moved by its own R) gives R = 0.
TEST(PowderConstraints, OneProjectionReducesTheConstraintError) {
  const ConstraintParams c = params_for(3, 0.01);
  Cloud cube = lattice_cube(9, 0.95 * kSpacing);
  cube.find(c.kernel.h());
  const std::size_t n = cube.p.size() / 3;
  auto interior = [&](std::size_t i) {
    for (int a = 0; a < 3; ++a) {
      const long index = std::lround(cube.p[3 * i + a] / (0.95 * kSpacing));
      if (index < 2 || index > 6) return false;
    }
    return true;
  };
  auto error = [&](const std::vector<Real>& p) {
    Real sum = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (interior(i)) {
        const Real f =
            density_constraint(c, p.data(), static_cast<std::uint32_t>(i), cube.begin(i), cube.end(i)).value;
        sum += f * f;
      }
    return sum;
  };
  std::vector<Real> lambda(n);
  for (std::size_t i = 0; i < n; ++i)
    lambda[i] =
        density_constraint(c, cube.p.data(), static_cast<std::uint32_t>(i), cube.begin(i), cube.end(i))
            .lambda;
  std::vector<Real> moved = cube.p;
  for (std::size_t i = 0; i < n; ++i)
    density_correction(c, cube.p.data(), lambda.data(), static_cast<std::uint32_t>(i), cube.begin(i),
                       cube.end(i), &moved[3 * i]);
  const Real before = error(cube.p), after = error(moved);
  EXPECT_GT(before, 0.0);
  EXPECT_LT(after, 0.5 * before);

  Cloud pair;
  pair.p = {0, 0, 0, 1.9 * kSpacing, 0.1 * kSpacing, 0};
  pair.find(c.kernel.h());
  const RestConstraint r0 = rest_constraint(c, pair.p.data(), 0, pair.begin(0), pair.end(0));
  const RestConstraint r1 = rest_constraint(c, pair.p.data(), 1, pair.begin(1), pair.end(1));
  EXPECT_GT(std::fabs(r0.value), 0.1 * kSpacing);
  for (int a = 0; a < 3; ++a)
    pair.p[a] += r0.scale * r0.gradient[a], pair.p[3 + a] += r1.scale * r1.gradient[a];
  EXPECT_NEAR(rest_constraint(c, pair.p.data(), 0, pair.begin(0), pair.end(0)).value, 0.0, 1e-15);
}

}  // namespace
}  // namespace nendo::pbd
