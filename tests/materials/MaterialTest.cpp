// MPM constitutive models (spec 002 §2, §3, §12.3 item 2 and 11; validation.md §6): P = ∂ψ/∂F by
// central differences, kirchhoff = P F^T, isotropy, rest state, frame indifference, Lamé
// conventions, the snow element table, the return mappings' invariants, the fluid's pressure.
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/Error.hpp"
#include "materials/Materials.hpp"
#include "scene/MaterialSchema.hpp"

namespace nendo {
namespace {

MaterialSettings settings(const std::string& model, std::map<std::string, double> params) {
  return {model, std::move(params)};
}

MaterialSettings elastic(const std::string& model) {
  return settings(model, {{"E", 1e5}, {"nu", 0.3}, {"density", 1000}});
}

MaterialSettings snow_reference() {  // Stomakhin et al. 2013, spec 002 §12.1, validation.md §6
  return settings("snow", {{"E", 1.4e5},
                           {"nu", 0.2},
                           {"density", 400},
                           {"theta_c", 2.5e-2},
                           {"theta_s", 7.5e-3},
                           {"hardening", 10}});
}

MaterialSettings sand(double cohesion = 0) {
  return settings(
      "drucker_prager",
      {{"E", 3.5e5}, {"nu", 0.3}, {"density", 1600}, {"friction_angle", 30}, {"cohesion", cohesion}});
}

MaterialSettings water() {
  return settings("fluid", {{"bulk", 1e5}, {"gamma", 7}, {"density", 1000}, {"viscosity", 1e-3}});
}

struct Case {
  std::string name;
  MpmMaterial material;
  Real Jp;
  Real stress_scale;  // μ or K: what "small" means for a stress
};

std::vector<Case> all_cases() {
  return {{"linear", make_mpm_material(elastic("linear")), 1, 1e5 / 2.6},
          {"neo_hookean", make_mpm_material(elastic("neo_hookean")), 1, 1e5 / 2.6},
          {"fixed_corotated", make_mpm_material(elastic("fixed_corotated")), 1, 1e5 / 2.6},
          {"snow, J_P = 1", make_mpm_material(snow_reference()), 1, 1.4e5 / 2.4},
          {"snow, J_P = 0.93", make_mpm_material(snow_reference()), 0.93, 1.4e5 / 2.4},
          {"drucker_prager", make_mpm_material(sand()), 1, 3.5e5 / 2.6},
          {"fluid", make_mpm_material(water()), 1, 1e5}};
}

bool rotation_invariant(const MpmMaterial& material) {
  return !std::holds_alternative<LinearElastic>(material);
}

template <int D>
Mat<D> random_rotation(std::mt19937_64& rng) {
  std::normal_distribution<Real> normal;
  if constexpr (D == 2) {
    return Eigen::Rotation2D<Real>(std::uniform_real_distribution<Real>(-M_PI, M_PI)(rng)).toRotationMatrix();
  } else {
    return Eigen::Quaternion<Real>(normal(rng), normal(rng), normal(rng), normal(rng))
        .normalized()
        .toRotationMatrix();
  }
}

template <int D>
Mat<D> random_matrix(std::mt19937_64& rng, Real scale) {
  std::normal_distribution<Real> normal;
  Mat<D> A;
  for (int i = 0; i < D * D; ++i) A(i) = scale * normal(rng);
  return A;
}

// Near I, and rotated and moderately deformed; det F > 0.
template <int D>
std::vector<Mat<D>> deformations(std::mt19937_64& rng, int count) {
  std::vector<Mat<D>> out;
  while (static_cast<int>(out.size()) < 2 * count) {
    const Mat<D> near = Mat<D>::Identity() + random_matrix<D>(rng, 0.02);
    const Mat<D> moderate = random_rotation<D>(rng) * (Mat<D>::Identity() + random_matrix<D>(rng, 0.2));
    if (near.determinant() > 0.2) out.push_back(near);
    if (moderate.determinant() > 0.2) out.push_back(moderate);
  }
  return out;
}

template <int D, class Model>
Mat<D> finite_difference_gradient(const Model& model, const Mat<D>& F, Real Jp) {
  const Real h = 1e-6;
  Mat<D> G;
  for (int i = 0; i < D * D; ++i) {
    Mat<D> plus = F, minus = F;
    plus(i) += h;
    minus(i) -= h;
    G(i) = (model.template psi<D>(plus, Jp) - model.template psi<D>(minus, Jp)) / (2 * h);
  }
  return G;
}

template <int D>
void check_stress_identities(const Case& c, const Mat<D>& F) {
  std::visit(
      [&](const auto& model) {
        const Mat<D> P = model.template P<D>(F, c.Jp);
        const Mat<D> PFt = P * F.transpose();
        const Real scale = P.norm() + 1e-3 * c.stress_scale;
        ASSERT_TRUE(P.allFinite()) << F;
        ASSERT_LE((finite_difference_gradient<D>(model, F, c.Jp) - P).norm(), 1e-6 * scale)
            << "P = dpsi/dF, F =\n"
            << F;
        ASSERT_LE((model.template kirchhoff<D>(F, c.Jp) - PFt).norm(), 1e-12 * scale * F.norm())
            << "kirchhoff = P F^T";
        if (!rotation_invariant(c.material)) return;
        ASSERT_LE((PFt - PFt.transpose()).norm(), 1e-10 * scale * F.norm()) << "P F^T symmetric";
        std::mt19937_64 rng(3);
        const Mat<D> R = random_rotation<D>(rng);
        const Real psi = model.template psi<D>(F, c.Jp);
        ASSERT_NEAR(model.template psi<D>(R * F, c.Jp), psi, 1e-12 * (std::abs(psi) + 1e-3 * c.stress_scale))
            << "psi(RF) = psi(F)";
        ASSERT_LE((model.template P<D>(R * F, c.Jp) - R * P).norm(), 1e-10 * scale) << "P(RF) = R P(F)";
      },
      c.material);
}

template <int D>
void check_all_models() {
  std::mt19937_64 rng(2016 + D);
  const std::vector<Mat<D>> Fs = deformations<D>(rng, 200);
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(c.name + ", " + std::to_string(D) + "D");
    for (const Mat<D>& F : Fs) check_stress_identities<D>(c, F);
  }
}

TEST(MpmMaterials, StressIsTheEnergyGradientAndIsotropicIn2D) { check_all_models<2>(); }
TEST(MpmMaterials, StressIsTheEnergyGradientAndIsotropicIn3D) { check_all_models<3>(); }

template <int D>
void check_inverted_fixed_corotated() {
  std::mt19937_64 rng(7);
  const Case c{"fixed_corotated, inverted", make_mpm_material(elastic("fixed_corotated")), 1, 1e5 / 2.6};
  for (int trial = 0; trial < 200; ++trial) {
    Mat<D> F = Mat<D>::Identity() + random_matrix<D>(rng, 0.3);
    if (F.determinant() > 0) F.row(0) *= -1;
    ASSERT_LT(F.determinant(), 0);
    check_stress_identities<D>(c, F);
  }
}

TEST(MpmMaterials, FixedCorotatedHandlesInvertedF) {
  check_inverted_fixed_corotated<2>();
  check_inverted_fixed_corotated<3>();
}

template <int D>
void check_rest_state() {
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(c.name + ", " + std::to_string(D) + "D");
    std::visit(
        [&](const auto& model) {
          const Mat<D> I = Mat<D>::Identity();
          EXPECT_LE(model.template P<D>(I, c.Jp).norm(), 1e-14 * c.stress_scale);
          EXPECT_LE(model.template kirchhoff<D>(I, c.Jp).norm(), 1e-14 * c.stress_scale);
          EXPECT_LE(std::abs(model.template psi<D>(I, c.Jp)), 1e-14 * c.stress_scale);
          if (!rotation_invariant(c.material)) return;
          std::mt19937_64 rng(1);
          const Mat<D> R = random_rotation<D>(rng);
          EXPECT_LE(model.template P<D>(R, c.Jp).norm(), 1e-10 * c.stress_scale) << "rigid rotation";
          EXPECT_LE(std::abs(model.template psi<D>(R, c.Jp)), 1e-10 * c.stress_scale);
        },
        c.material);
  }
}

TEST(MpmMaterials, RestStateIsStressFree) {
  check_rest_state<2>();
  check_rest_state<3>();
}

// Spec 002 §12.3 item 2: F = I + ε, ‖ε‖ = 1e-6 gives P ≈ 2μ ε + λ tr(ε) I (Lamé conventions).
template <int D>
void check_small_strain() {
  std::mt19937_64 rng(9);
  const Lame lame = lame_parameters(1e5, 0.3);
  EXPECT_DOUBLE_EQ(lame.mu, 1e5 / 2.6);
  EXPECT_DOUBLE_EQ(lame.lambda, 1e5 * 0.3 / (1.3 * 0.4));
  for (const char* name : {"linear", "neo_hookean", "fixed_corotated"}) {
    const MpmMaterial material = make_mpm_material(elastic(name));
    for (int trial = 0; trial < 20; ++trial) {
      const Mat<D> A = random_matrix<D>(rng, 1);
      Mat<D> e = A + A.transpose();
      e *= 1e-6 / e.norm();
      const Mat<D> expected = 2 * lame.mu * e + lame.lambda * e.trace() * Mat<D>::Identity();
      const Mat<D> P = std::visit(
          [&](const auto& m) { return Mat<D>(m.template P<D>(Mat<D>::Identity() + e, 1)); }, material);
      EXPECT_LE((P - expected).norm(), 1e-5 * expected.norm()) << name;
    }
  }
}

TEST(MpmMaterials, SmallStrainLimitIsLinearElasticity) {
  check_small_strain<2>();
  check_small_strain<3>();
}

TEST(MpmMaterials, NeoHookeanRefusesNonPositiveJ) {
  const NeoHookean model(elastic("neo_hookean"));
  const Mat<3> inverted = Eigen::Vector3d(-1, 1, 1).asDiagonal().toDenseMatrix();
  EXPECT_TRUE(std::isinf(model.psi<3>(inverted, 1)));
  EXPECT_TRUE(model.P<3>(inverted, 1).array().isNaN().all());
  EXPECT_TRUE(model.kirchhoff<3>(inverted, 1).array().isNaN().all());
  EXPECT_TRUE(model.P<2>(Mat<2>::Zero(), 1).array().isNaN().all());
}

TEST(MpmMaterials, WaveSpeedsUseHardenedParameters) {
  const Lame lame = lame_parameters(1e5, 0.3);
  EXPECT_DOUBLE_EQ(FixedCorotated(elastic("fixed_corotated")).wave_speed(1000, 1),
                   std::sqrt((lame.lambda + 2 * lame.mu) / 1000));
  const Snow snow(snow_reference());
  EXPECT_NEAR(snow.wave_speed(400, 0.9), std::sqrt(std::exp(1.0) * (snow.lambda0 + 2 * snow.mu0) / 400),
              1e-12);
  EXPECT_DOUBLE_EQ(snow.hardening_factor(0.0), std::exp(10.0)) << "exponent capped at 10";
  EXPECT_DOUBLE_EQ(snow.hardening_factor(-5.0), std::exp(10.0));
  EXPECT_DOUBLE_EQ(Fluid(water()).wave_speed(1000, 1), 10.0);
}

// validation.md §6: monotone compression F = diag(s, 1, 1) in successive steps from F = I,
// Cauchy σ = P F_E^T / J with J = det F = s (the table's σ11 and σ22 hold for the total J: with
// J_E = det F_E instead, row s = 0.95 would read −5025.6, not −5157.8).
TEST(Snow, ElementTableOfStomakhinDefaults) {
  const Snow snow(snow_reference());
  EXPECT_NEAR(snow.mu0, 58333.3, 0.1);
  EXPECT_NEAR(snow.lambda0, 38888.9, 0.1);
  struct Row {
    Real s, F_E11, J_P, sigma11, sigma22;
  };
  const Row table[] = {{0.99, 0.9900, 1.00000, -1555.6, -388.9},
                       {0.95, 0.9750, 0.97436, -5157.8, -1289.5},
                       {0.8775, 0.9750, 0.90000, -11745.7, -2936.4},
                       {0.80, 0.9750, 0.82051, -28526.1, -7131.5}};
  Mat<3> F_E = Mat<3>::Identity();
  Real Jp = 1, previous = 1;
  for (const Row& row : table) {
    const Mat<3> step = Eigen::Vector3d(row.s / previous, 1, 1).asDiagonal().toDenseMatrix();
    F_E = step * F_E;  // F̂_E = (I + Δt L) F_E with L = diag(ṡ/s, 0, 0)
    snow.project<3>(F_E, Jp);
    previous = row.s;
    const Real J = row.s;
    const Mat<3> sigma = snow.P<3>(F_E, Jp) * F_E.transpose() / J;
    SCOPED_TRACE("s = " + std::to_string(row.s));
    EXPECT_NEAR(F_E(0, 0), row.F_E11, 1e-4 * row.F_E11);
    EXPECT_NEAR(Jp, row.J_P, 1e-4 * row.J_P);
    EXPECT_NEAR(sigma(0, 0), row.sigma11, 1e-4 * std::abs(row.sigma11));
    EXPECT_NEAR(sigma(1, 1), row.sigma22, 1e-4 * std::abs(row.sigma22));
    EXPECT_NEAR(sigma(2, 2), row.sigma22, 1e-4 * std::abs(row.sigma22));
    EXPECT_NEAR(F_E.determinant() * Jp, row.s, 1e-12);
  }
}

// Spec 002 §12.3 item 11 over random loading paths: σ(F_E) ∈ [1 − θ_c, 1 + θ_s] after every
// return mapping, det F = det F_E · J_P, and F_E F_P = F with F_P = F_E^{-1} F.
template <int D>
void check_snow_invariants() {
  const Snow snow(snow_reference());
  std::mt19937_64 rng(13 + D);
  for (int path = 0; path < 50; ++path) {
    Mat<D> F = Mat<D>::Identity(), F_E = F;
    Real Jp = 1;
    for (int step = 0; step < 100; ++step) {
      const Mat<D> increment = Mat<D>::Identity() + random_matrix<D>(rng, 0.01);
      F = increment * F;
      F_E = increment * F_E;
      snow.project<D>(F_E, Jp);
      const Eigen::Matrix<Real, D, 1> sigma = polar_svd<D>(F_E).sigma;
      ASSERT_GE(sigma.minCoeff(), 1 - snow.theta_c - 1e-12);
      ASSERT_LE(sigma.maxCoeff(), 1 + snow.theta_s + 1e-12);
      ASSERT_NEAR(F_E.determinant() * Jp, F.determinant(), 1e-12 * std::abs(F.determinant()));
    }
  }
  // θ = ∞ reproduces fixed corotated: project leaves F alone.
  Snow elastic_snow = snow;
  elastic_snow.theta_c = elastic_snow.theta_s = std::numeric_limits<Real>::infinity();
  Mat<D> F = Mat<D>::Identity() + random_matrix<D>(rng, 0.2);
  const Mat<D> before = F;
  Real Jp = 1;
  elastic_snow.project<D>(F, Jp);
  EXPECT_EQ(F, before);
  EXPECT_EQ(Jp, 1);
}

TEST(Snow, ReturnMappingKeepsInvariants) {
  check_snow_invariants<2>();
  check_snow_invariants<3>();
}

template <int D>
Mat<D> with_principal_strains(std::mt19937_64& rng, const Eigen::Matrix<Real, D, 1>& strains) {
  return random_rotation<D>(rng) * strains.array().exp().matrix().asDiagonal() * random_rotation<D>(rng);
}

template <int D>
void check_drucker_prager() {
  using Vec = Eigen::Matrix<Real, D, 1>;
  std::mt19937_64 rng(31 + D);
  const DruckerPrager dry(sand());
  const Real alpha = std::sqrt(2.0 / 3.0) * 2 * 0.5 / 2.5;  // φ = 30°
  EXPECT_NEAR(dry.alpha, alpha, 1e-15);
  const Real tolerance = 1e-10 * dry.mu;
  for (int trial = 0; trial < 100; ++trial) {
    // Inside the cone: compression with a small deviator. Unchanged, bit for bit.
    Vec inside = Vec::Constant(-0.01);
    inside(0) -= 0.001 * std::abs(std::normal_distribution<Real>()(rng));
    Mat<D> F = with_principal_strains<D>(rng, inside);
    ASSERT_LT(dry.yield_function<D>(F), 0);
    Mat<D> before = F;
    Real Jp = 1;
    dry.project<D>(F, Jp);
    ASSERT_EQ(F, before);
    ASSERT_EQ(Jp, 1);

    // Outside the cone (shear under compression): onto the cone surface, volume kept.
    Vec shear = Vec::Constant(-0.01);
    shear(0) = 0.02;
    shear(D - 1) = -0.05;
    F = with_principal_strains<D>(rng, shear);
    ASSERT_GT(dry.yield_function<D>(F), 0);
    before = F;
    dry.project<D>(F, Jp);
    ASSERT_NEAR(dry.yield_function<D>(F), 0, tolerance);
    ASSERT_NEAR(F.determinant(), before.determinant(), 1e-14);
    ASSERT_NEAR(Jp, 1, 1e-14);

    // Pure tension: to the apex, stress free; F becomes a rotation and J_P takes the volume.
    Vec tension;
    for (int i = 0; i < D; ++i) tension(i) = 0.001 + 0.02 * std::abs(std::normal_distribution<Real>()(rng));
    F = with_principal_strains<D>(rng, tension);
    const Real J_before = F.determinant();
    Jp = 1;
    dry.project<D>(F, Jp);
    ASSERT_LE((F.transpose() * F - Mat<D>::Identity()).norm(), 1e-14);
    ASSERT_LE(dry.P<D>(F, Jp).norm(), tolerance);
    ASSERT_NEAR(Jp, J_before, 1e-14);

    // Volume correction: compressing back by less than the volume gained stays stress free, and
    // det F = det F_E · J_P throughout.
    const Real total_before = F.determinant() * Jp;
    const Real squeeze = std::pow(0.5 * (1 + 1 / J_before), 1.0 / D);  // undoes about half the gain
    F *= squeeze;
    dry.project<D>(F, Jp);
    ASSERT_LE(dry.P<D>(F, Jp).norm(), tolerance);
    ASSERT_NEAR(F.determinant() * Jp, total_before * std::pow(squeeze, D), 1e-12);
    ASSERT_GT(Jp, 1);
  }

  // Cohesion: tension stops at the shifted apex, tr τ = k/α, with no deviator.
  const DruckerPrager cohesive(sand(2000));
  EXPECT_NEAR(cohesive.yield_shift, std::sqrt(2.0 / 3.0) * 6 * 2000 * std::cos(M_PI / 6) / 2.5, 1e-9);
  Mat<D> F = with_principal_strains<D>(rng, Vec::Constant(0.01) + 0.005 * Vec::Unit(0));
  Real Jp = 1;
  cohesive.project<D>(F, Jp);
  const Mat<D> tau = cohesive.kirchhoff<D>(F, Jp);
  EXPECT_NEAR(tau.trace(), cohesive.yield_shift / cohesive.alpha, 1e-9 * cohesive.mu);
  EXPECT_LE((tau - tau.trace() / D * Mat<D>::Identity()).norm(), tolerance);
  EXPECT_NEAR(cohesive.yield_function<D>(F), 0, tolerance);
  // ... and shear under compression ends on the shifted cone.
  Vec shear = Vec::Constant(-0.01);
  shear(0) = 0.03;
  shear(D - 1) = -0.06;
  F = with_principal_strains<D>(rng, shear);
  Jp = 1;
  cohesive.project<D>(F, Jp);
  EXPECT_NEAR(cohesive.yield_function<D>(F), 0, tolerance);
}

TEST(DruckerPrager, ReturnMappingOntoTheCone) {
  check_drucker_prager<2>();
  check_drucker_prager<3>();
}

// Trial deformation gradients and J_P for the batched return mappings, with what each should
// exercise: small strain (snow unclamped, sand inside the cone), shear under compression (snow
// clamped, sand onto the cone), tension (sand to the apex), tension with J_P > 1 (the volume
// correction), inverted F, and the identity.
template <int D>
struct Trial {
  Mat<D> F;
  Real Jp;
};

template <int D>
std::vector<Trial<D>> plastic_trials(int count) {
  using Vec = Eigen::Matrix<Real, D, 1>;
  std::mt19937_64 rng(401 + D);
  std::normal_distribution<Real> normal;
  std::vector<Trial<D>> out;
  for (int i = 0; out.size() < static_cast<std::size_t>(count); ++i) {
    Vec strains;
    for (int a = 0; a < D; ++a) strains(a) = 0.002 * normal(rng);
    switch (i % 6) {
      case 0:  // small strain
        out.push_back({with_principal_strains<D>(rng, Vec(strains.array() - 0.004)), 1});
        break;
      case 1:  // shear under compression
        strains(0) += 0.03, strains(D - 1) -= 0.06;
        out.push_back(
            {with_principal_strains<D>(rng, Vec(strains.array() - 0.01)), i % 12 == 1 ? 1.0 : 0.95});
        break;
      case 2:  // tension
        out.push_back({with_principal_strains<D>(rng, Vec(strains.cwiseAbs().array() + 0.01)), 1});
        break;
      case 3:  // compressed back after a separation
        out.push_back({with_principal_strains<D>(rng, Vec(strains.array() - 0.01)), 1.04});
        break;
      case 4: {  // inverted
        Mat<D> F = with_principal_strains<D>(rng, Vec(strains.array() + 0.05));
        F.row(0) *= -1;
        out.push_back({F, 1});
        break;
      }
      default:
        out.push_back({i % 12 == 5 ? Mat<D>::Identity() : random_rotation<D>(rng), 1});
    }
  }
  return out;
}

template <int D>
using RowMat = Eigen::Matrix<Real, D, D, Eigen::RowMajor>;

// project_batch<D> on trials, in calls of batch particles each; F and J_P out.
template <int D, class Material>
std::vector<Trial<D>> project_in_batches(const Material& material, const std::vector<Trial<D>>& trials,
                                         std::size_t batch) {
  const std::size_t n = trials.size();
  std::vector<Real> F(D * D * n), Jp(n);
  for (std::size_t p = 0; p < n; ++p) {
    Eigen::Map<RowMat<D>>(F.data() + D * D * p) = trials[p].F;
    Jp[p] = trials[p].Jp;
  }
  for (std::size_t first = 0; first < n; first += batch)
    project_run<D>(material, F.data(), Jp.data(), first, std::min(n, first + batch));
  std::vector<Trial<D>> out(n);
  for (std::size_t p = 0; p < n; ++p) out[p] = {Eigen::Map<RowMat<D>>(F.data() + D * D * p), Jp[p]};
  return out;
}

// project_batch gives project's F_E and J_P to round-off, and each particle's result is the same
// bits wherever it sits in a batch and whatever its neighbours. changed counts the particles
// whose F the return mapping changed: both kinds must occur.
template <int D, class Material>
void check_project_batch(const Material& material, int expect_unchanged_at_least) {
  static_assert(HasProjectBatch<Material, D>::value);
  const std::vector<Trial<D>> trials = plastic_trials<D>(600);
  const std::vector<Trial<D>> batched = project_in_batches<D>(material, trials, 37);
  int unchanged = 0;
  for (std::size_t p = 0; p < trials.size(); ++p) {
    Trial<D> scalar = trials[p];
    material.template project<D>(scalar.F, scalar.Jp);
    SCOPED_TRACE("trial " + std::to_string(p));
    ASSERT_LE((batched[p].F - scalar.F).norm(), 1e-12 * scalar.F.norm()) << trials[p].F;
    ASSERT_NEAR(batched[p].Jp, scalar.Jp, 1e-12 * std::abs(scalar.Jp)) << trials[p].F;
    unchanged += batched[p].F == trials[p].F ? 1 : 0;
  }
  EXPECT_GE(unchanged, expect_unchanged_at_least);
  EXPECT_LE(unchanged, 2 * static_cast<int>(trials.size()) / 3);
  std::mt19937_64 rng(3);
  for (std::size_t p = 0; p < trials.size(); p += 13) {
    const Trial<D> alone = project_in_batches<D>(material, {trials[p]}, 1)[0];
    for (std::size_t size : {std::size_t(2), std::size_t(kPolarBatch), std::size_t(kPolarBatch + 5)})
      for (std::size_t at = 0; at < size; ++at) {
        std::vector<Trial<D>> batch(size);
        for (Trial<D>& t : batch) t = trials[rng() % trials.size()];
        batch[at] = trials[p];
        const Trial<D> in_batch = project_in_batches<D>(material, batch, size)[at];
        ASSERT_EQ(std::memcmp(in_batch.F.data(), alone.F.data(), sizeof(Real) * D * D), 0)
            << p << " at " << at;
        ASSERT_EQ(std::memcmp(&in_batch.Jp, &alone.Jp, sizeof(Real)), 0) << p << " at " << at;
      }
  }
}

TEST(Snow, ProjectBatchMatchesProjectAndIsLaneIndependent) {
  const Snow snow(snow_reference());
  check_project_batch<2>(snow, 100);
  check_project_batch<3>(snow, 100);
}

TEST(DruckerPrager, ProjectBatchMatchesProjectAndIsLaneIndependent) {
  const DruckerPrager dry(sand()), cohesive(sand(2000));
  check_project_batch<2>(dry, 100);
  check_project_batch<3>(dry, 100);
  check_project_batch<2>(cohesive, 100);
  check_project_batch<3>(cohesive, 100);
}

// kirchhoff_batch (through kirchhoff_run) against kirchhoff per particle; NaN for inverted F.
template <int D>
void check_drucker_prager_kirchhoff_batch() {
  const DruckerPrager dry(sand());
  const std::vector<Trial<D>> trials = plastic_trials<D>(200);
  std::vector<Real> F(D * D * trials.size()), Jp(trials.size(), 1.0), tau(D * D * trials.size());
  for (std::size_t p = 0; p < trials.size(); ++p) Eigen::Map<RowMat<D>>(F.data() + D * D * p) = trials[p].F;
  static_assert(HasKirchhoffBatch<DruckerPrager, D>::value);
  kirchhoff_run<D>(dry, F.data(), Jp.data(), 0, trials.size(), tau.data());
  for (std::size_t p = 0; p < trials.size(); ++p) {
    const Mat<D> expected = dry.kirchhoff<D>(trials[p].F, 1);
    const Mat<D> batched = Eigen::Map<RowMat<D>>(tau.data() + D * D * p);
    if (trials[p].F.determinant() < 0) {
      ASSERT_TRUE(batched.array().isNaN().all()) << p;
      continue;
    }
    ASSERT_LE((batched - expected).norm(), 1e-11 * dry.mu) << p;
  }
}

// The return mapping with the elastic Hencky strain out (what G2P carries to the next P2G): F and
// J_P the same bits as without it, and the stress from that strain kirchhoff(F) of the new F to
// round-off (what P2G computed with a second SVD before the strain was carried).
template <int D>
void check_carried_hencky_strain(const DruckerPrager& material) {
  static_assert(CarriesHencky<DruckerPrager, D>::value);
  const std::vector<Trial<D>> trials = plastic_trials<D>(600);
  const std::size_t n = trials.size();
  std::vector<Real> F(D * D * n), Jp(n), hencky(D * D * n, -1.0), tau(D * D * n);
  for (std::size_t p = 0; p < n; ++p) {
    Eigen::Map<RowMat<D>>(F.data() + D * D * p) = trials[p].F;
    Jp[p] = trials[p].Jp;
  }
  std::vector<Real> F_plain = F, Jp_plain = Jp;
  project_run<D>(material, F_plain.data(), Jp_plain.data(), 0, n);
  project_run<D>(material, F.data(), Jp.data(), 0, n, hencky.data());
  ASSERT_EQ(std::memcmp(F.data(), F_plain.data(), sizeof(Real) * F.size()), 0);
  ASSERT_EQ(std::memcmp(Jp.data(), Jp_plain.data(), sizeof(Real) * Jp.size()), 0);
  kirchhoff_run<D>(material, F.data(), Jp.data(), 0, n, tau.data(), hencky.data());
  for (std::size_t p = 0; p < n; ++p) {
    const Mat<D> expected = material.kirchhoff<D>(Eigen::Map<const RowMat<D>>(F.data() + D * D * p), 1);
    ASSERT_TRUE(expected.allFinite()) << p;  // the return mapping leaves no inverted F
    ASSERT_LE((Eigen::Map<const RowMat<D>>(tau.data() + D * D * p) - expected).norm(), 1e-11 * material.mu)
        << p << "\n"
        << trials[p].F;
  }
}

TEST(DruckerPrager, CarriedHenckyStrainGivesTheStressOfTheNewF) {
  const DruckerPrager dry(sand()), cohesive(sand(2000));
  check_carried_hencky_strain<2>(dry);
  check_carried_hencky_strain<3>(dry);
  check_carried_hencky_strain<3>(cohesive);
}

TEST(DruckerPrager, KirchhoffBatchMatchesKirchhoff) {
  check_drucker_prager_kirchhoff_batch<2>();
  check_drucker_prager_kirchhoff_batch<3>();
}

TEST(Fluid, TaitPressureAndVolumeOnlyState) {
  const Fluid fluid(water());
  const Real K = 1e5, gamma = 7, J = 0.9;
  const Real p = K / gamma * (std::pow(J, -gamma) - 1);
  EXPECT_NEAR(fluid.pressure(J), p, 1e-12 * p);
  EXPECT_EQ(fluid.pressure(1), 0);
  std::mt19937_64 rng(4);
  // Any F with det F = 0.9: the Cauchy stress P F^T / J is −p I.
  Mat<3> F = random_rotation<3>(rng) * (Mat<3>::Identity() + random_matrix<3>(rng, 0.1));
  F *= std::cbrt(J / F.determinant());
  const Mat<3> cauchy = fluid.P<3>(F, 1) * F.transpose() / J;
  EXPECT_LE((cauchy + p * Mat<3>::Identity()).norm(), 1e-10 * p);
  EXPECT_LE((fluid.P<3>(F, 1) + p * J * F.inverse().transpose()).norm(), 1e-10 * p);
  // project keeps the volume only.
  Real Jp = 1;
  fluid.project<3>(F, Jp);
  EXPECT_LE((F - std::cbrt(J) * Mat<3>::Identity()).norm(), 1e-15);
  EXPECT_NEAR(F.determinant(), J, 1e-15);
  Mat<2> F2 = Eigen::Vector2d(1.2, 0.75).asDiagonal().toDenseMatrix();
  fluid.project<2>(F2, Jp);
  EXPECT_NEAR(F2(0, 0), std::sqrt(0.9), 1e-15);
  EXPECT_EQ(Jp, 1);
  // Viscous Cauchy stress η(L + L^T).
  Mat<3> L;
  L << 0, 2, 0, 0, 0, 0, 0, 0, 1;
  Mat<3> expected;
  expected << 0, 2e-3, 0, 2e-3, 0, 0, 0, 0, 2e-3;
  EXPECT_LE((fluid.viscous_stress<3>(L) - expected).norm(), 1e-18);
}

// The step asks a material for its rate term (Materials.hpp HasRateTerm) and names no model: a
// viscous fluid has the Kirchhoff stress J η(L + L^T), a fluid without viscosity and the solids none.
TEST(MpmMaterials, RateTermIsTheViscousFluids) {
  static_assert(HasRateTerm<Fluid>::value && !HasRateTerm<NeoHookean>::value);
  const MpmMaterial viscous = make_mpm_material(water());
  EXPECT_TRUE(rate_dependent(viscous));
  EXPECT_FALSE(rate_dependent(MpmMaterial(Fluid(1e5, 7, 0))));
  for (const Case& c : all_cases()) {
    if (!std::holds_alternative<Fluid>(c.material)) {
      EXPECT_FALSE(rate_dependent(c.material)) << c.name;
    }
  }
  Mat<3> L;
  L << 0, 2, 0, 0, 0, 0, 0, 0, 1;
  Mat<3> expected;
  expected << 0, 2e-3, 0, 2e-3, 0, 0, 0, 0, 2e-3;
  const Real J = 0.9;
  EXPECT_LE((rate_kirchhoff<3>(viscous, L, J) - J * expected).norm(), 1e-18);
  EXPECT_EQ(rate_kirchhoff<3>(make_mpm_material(elastic("neo_hookean")), L, J), Mat<3>::Zero());
  EXPECT_EQ(rate_kirchhoff<2>(make_mpm_material(sand()), Mat<2>::Ones(), J), Mat<2>::Zero());
}

TEST(MpmMaterials, MadeByNameAndRegisteredOnce) {
  EXPECT_TRUE(std::holds_alternative<Snow>(make_mpm_material(snow_reference())));
  EXPECT_TRUE(std::holds_alternative<DruckerPrager>(make_mpm_material(sand())));
  EXPECT_TRUE(std::holds_alternative<Fluid>(make_mpm_material(water())));
  EXPECT_TRUE(std::holds_alternative<LinearElastic>(make_mpm_material(elastic("linear"))));
  EXPECT_THROW(make_mpm_material(elastic("jelly")), Error);
  EXPECT_THROW(make_mpm_material(settings("neo_hookean", {{"E", 1e5}})), Error) << "nu missing";
  // Registered before main(), once, in the order of the list in Materials.cpp: no call needed.
  const std::vector<std::string> expected = {
      "linear", "neo_hookean", "fixed_corotated", "snow", "drucker_prager", "fluid", "stvk"};
  EXPECT_EQ(material_model_names(), expected);
}

}  // namespace
}  // namespace nendo
