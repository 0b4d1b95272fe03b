// ∂P/∂F of every MPM material in the SVD diagonal-space form (spec 002 §2.5) and its definiteness
// projection (§2.6): apply(δF) is the central difference of the material's own P, the form is
// symmetric, project_spd() makes it positive semi-definite where it was indefinite and leaves a
// positive definite one alone, the rest-state block coefficients, and the generic builder
// elastic_hessian_from_derivatives() against the closed forms.
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "materials/ElasticHessian.hpp"
#include "materials/Materials.hpp"

namespace nendo {
namespace {

MaterialSettings settings(const std::string& model, std::map<std::string, double> params) {
  return {model, std::move(params)};
}

MaterialSettings elastic(const std::string& model) {
  return settings(model, {{"E", 1e5}, {"nu", 0.3}, {"density", 1000}});
}

MaterialSettings snow_reference() {
  return settings("snow", {{"E", 1.4e5},
                           {"nu", 0.2},
                           {"density", 400},
                           {"theta_c", 2.5e-2},
                           {"theta_s", 7.5e-3},
                           {"hardening", 10}});
}

MaterialSettings sand() {
  return settings("drucker_prager",
                  {{"E", 3.5e5}, {"nu", 0.3}, {"density", 1600}, {"friction_angle", 30}, {"cohesion", 0}});
}

MaterialSettings water() {
  return settings("fluid", {{"bulk", 1e5}, {"gamma", 7}, {"density", 1000}, {"viscosity", 1e-3}});
}

struct Case {
  std::string name;
  MpmMaterial material;
  Real Jp;
  Real stress_scale;  // μ or K
};

std::vector<Case> all_cases() {
  return {{"linear", make_mpm_material(elastic("linear")), 1, 1e5 / 2.6},
          {"neo_hookean", make_mpm_material(elastic("neo_hookean")), 1, 1e5 / 2.6},
          {"fixed_corotated", make_mpm_material(elastic("fixed_corotated")), 1, 1e5 / 2.6},
          {"snow, J_P = 0.93", make_mpm_material(snow_reference()), 0.93, 1.4e5 / 2.4},
          {"snow, J_P = 1.02", make_mpm_material(snow_reference()), 1.02, 1.4e5 / 2.4},
          {"drucker_prager", make_mpm_material(sand()), 1, 3.5e5 / 2.6},
          {"fluid", make_mpm_material(water()), 1, 1e5}};
}

bool takes_inverted(const MpmMaterial& material) {
  return std::holds_alternative<FixedCorotated>(material) || std::holds_alternative<Snow>(material) ||
         std::holds_alternative<LinearElastic>(material);
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

template <int D>
Mat<D> with_singular_values(std::mt19937_64& rng, const Eigen::Matrix<Real, D, 1>& sigma) {
  return random_rotation<D>(rng) * sigma.asDiagonal() * random_rotation<D>(rng).transpose();
}

template <int D>
struct Deformation {
  std::string name;
  Mat<D> F;
  bool inverted;
};

// Near I; stretched and sheared (σ in [0.5, 2]); two singular values 1e-9 apart; all equal;
// inverted (det F < 0).
template <int D>
std::vector<Deformation<D>> deformations(std::mt19937_64& rng) {
  using Vec = Eigen::Matrix<Real, D, 1>;
  std::uniform_real_distribution<Real> stretch(0.5, 2);
  std::vector<Deformation<D>> out;
  for (int i = 0; i < 4; ++i) {
    out.push_back({"near identity", Mat<D>::Identity() + random_matrix<D>(rng, 0.02), false});
    Vec sigma;
    for (int k = 0; k < D; ++k) sigma(k) = stretch(rng);
    out.push_back({"stretched", with_singular_values<D>(rng, sigma), false});
    out.push_back(
        {"sheared", random_rotation<D>(rng) * (Mat<D>::Identity() + random_matrix<D>(rng, 0.3)), false});
  }
  for (int k = 0; k + 1 < D; ++k) {
    Vec sigma = Vec::LinSpaced(1.4, 0.8);
    sigma(k + 1) = sigma(k) - 1e-9;
    out.push_back({"nearly equal singular values", with_singular_values<D>(rng, sigma), false});
  }
  out.push_back({"equal singular values", with_singular_values<D>(rng, Vec::Constant(1.2)), false});
  out.push_back({"rotation", random_rotation<D>(rng), false});
  for (int i = 0; i < 3; ++i) {
    Vec sigma = Vec::LinSpaced(1.5, 1.1);
    sigma(D - 1) = -0.7 + 0.1 * i;
    out.push_back({"inverted", with_singular_values<D>(rng, sigma), true});
  }
  return out;
}

template <int D>
Real contract(const Mat<D>& X, const Mat<D>& Y) {
  return X.cwiseProduct(Y).sum();
}

template <int D, class Model>
Mat<D> finite_difference(const Model& model, const Mat<D>& F, Real Jp, const Mat<D>& dF) {
  const Real h = 1e-6;
  return (model.template P<D>(F + h * dF, Jp) - model.template P<D>(F - h * dF, Jp)) / (2 * h);
}

template <int D>
void check_against_finite_differences() {
  std::mt19937_64 rng(2002 + D);
  const std::vector<Deformation<D>> Fs = deformations<D>(rng);
  for (const Case& c : all_cases()) {
    std::visit(
        [&](const auto& model) {
          for (const Deformation<D>& def : Fs) {
            if (def.inverted && !takes_inverted(c.material)) continue;
            SCOPED_TRACE(c.name + ", " + std::to_string(D) + "D, " + def.name);
            const ElasticHessian<D> H = model.template hessian<D>(def.F, c.Jp);
            for (int trial = 0; trial < 5; ++trial) {
              Mat<D> dF = random_matrix<D>(rng, 1);
              dF /= dF.norm();
              const Mat<D> exact = H.apply(dF);
              const Mat<D> fd = finite_difference<D>(model, def.F, c.Jp, dF);
              ASSERT_TRUE(exact.allFinite());
              ASSERT_LE((exact - fd).norm(), 1e-6 * std::max(fd.norm(), 1e-3 * c.stress_scale))
                  << "F =\n"
                  << def.F << "\napply =\n"
                  << exact << "\nfinite difference =\n"
                  << fd;
              const Mat<D> dG = random_matrix<D>(rng, 1);
              const Mat<D> exact_G = H.apply(dG);
              ASSERT_NEAR(contract<D>(dG, exact), contract<D>(dF, exact_G),
                          1e-12 * std::max(dG.norm() * exact.norm(), dF.norm() * exact_G.norm()))
                  << "symmetry";
            }
          }
        },
        c.material);
  }
}

TEST(ElasticHessian, MatchesFiniteDifferencesOfPAndIsSymmetricIn2D) { check_against_finite_differences<2>(); }
TEST(ElasticHessian, MatchesFiniteDifferencesOfPAndIsSymmetricIn3D) { check_against_finite_differences<3>(); }

// computeDirect: the iterative solver's AVX-512 reductions trip GCC 12's -Wmaybe-uninitialized.
template <int D>
Eigen::SelfAdjointEigenSolver<Mat<D>> eigen_of(const Mat<D>& S) {
  Eigen::SelfAdjointEigenSolver<Mat<D>> eigen;
  eigen.computeDirect(S);
  return eigen;
}

// The largest |eigenvalue| of the diagonal-space tensor: the scale of its quadratic form.
template <int D>
Real spectral_scale(const ElasticHessian<D>& H) {
  Real scale = eigen_of<D>(H.A).eigenvalues().cwiseAbs().maxCoeff();
  for (int p = 0; p < ElasticHessian<D>::kPairs; ++p)
    scale = std::max({scale, std::abs(H.a[p]), std::abs(H.b[p])});
  return scale;
}

// Directions δF = U E Vᵀ on the eigenvectors of the diagonal-space blocks, plus random ones.
template <int D>
std::vector<Mat<D>> probe_directions(const ElasticHessian<D>& H, std::mt19937_64& rng) {
  std::vector<Mat<D>> out;
  const Eigen::SelfAdjointEigenSolver<Mat<D>> eigen = eigen_of<D>(H.A);
  for (int i = 0; i < D; ++i)
    out.push_back(H.U * Mat<D>(eigen.eigenvectors().col(i).asDiagonal()) * H.V.transpose());
  for (int p = 0; p < ElasticHessian<D>::kPairs; ++p) {
    const int k = ElasticHessian<D>::kFirst[p], l = ElasticHessian<D>::kSecond[p];
    for (int sign : {1, -1}) {
      Mat<D> E = Mat<D>::Zero();
      E(k, l) = 1;
      E(l, k) = sign;
      out.push_back(H.U * E * H.V.transpose());
    }
  }
  for (int i = 0; i < 500; ++i) out.push_back(random_matrix<D>(rng, 1));
  return out;
}

// An indefinite deformation per material: compression for the hyperelastic solids and the
// fluid (b_kl < 0), strong stretch too.
template <int D>
std::vector<Mat<D>> indefinite_candidates(std::mt19937_64& rng) {
  using Vec = Eigen::Matrix<Real, D, 1>;
  std::vector<Mat<D>> out;
  out.push_back(with_singular_values<D>(rng, Vec::Constant(0.4)));
  out.push_back(with_singular_values<D>(rng, Vec::LinSpaced(0.6, 0.3)));
  out.push_back(with_singular_values<D>(rng, Vec::LinSpaced(3.0, 1.5)));
  return out;
}

template <int D>
void check_projection() {
  std::mt19937_64 rng(26 + D);
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(c.name + ", " + std::to_string(D) + "D");
    std::visit(
        [&](const auto& model) {
          // F = I: positive definite (fluid: semi-definite, A = K 11ᵀ and a = b = 0) and unchanged.
          {
            const ElasticHessian<D> H = model.template hessian<D>(Mat<D>::Identity(), c.Jp);
            ElasticHessian<D> projected = H;
            projected.project_spd();
            const bool definite = !std::holds_alternative<Fluid>(c.material);
            for (int i = 0; i < 20; ++i) {
              const Mat<D> dF = random_matrix<D>(rng, 1);
              const Mat<D> before = H.apply(dF), after = projected.apply(dF);
              if (definite) {
                ASSERT_EQ(before, after) << "projection of a positive definite Hessian";
              } else {
                ASSERT_LE((before - after).norm(), 1e-14 * before.norm()) << "projection of a PSD Hessian";
              }
            }
          }
          if (std::holds_alternative<LinearElastic>(c.material)) return;  // constant, always SPD
          bool found_indefinite = false;
          for (const Mat<D>& F : indefinite_candidates<D>(rng)) {
            const ElasticHessian<D> H = model.template hessian<D>(F, c.Jp);
            ElasticHessian<D> projected = H;
            projected.project_spd();
            const Real scale = spectral_scale<D>(H);
            Real most_negative = 0;
            for (const Mat<D>& dF : probe_directions<D>(H, rng)) {
              const Real curvature = contract<D>(dF, H.apply(dF));
              most_negative = std::min(most_negative, curvature / dF.squaredNorm());
              const Real projected_curvature = contract<D>(dF, projected.apply(dF));
              ASSERT_GE(projected_curvature, -1e-12 * scale * dF.squaredNorm()) << "F =\n" << F;
              // Clamping eigenvalues only raises them: projected − original is PSD.
              ASSERT_GE(projected_curvature - curvature, -1e-12 * scale * dF.squaredNorm());
            }
            if (most_negative < -1e-3 * c.stress_scale) found_indefinite = true;
            for (int p = 0; p < ElasticHessian<D>::kPairs; ++p) {
              ASSERT_GE(projected.a[p], 0);
              ASSERT_GE(projected.b[p], 0);
            }
          }
          ASSERT_TRUE(found_indefinite) << "no candidate F made the unprojected Hessian indefinite";
        },
        c.material);
  }
}

TEST(ElasticHessian, ProjectionIsPositiveSemiDefiniteIn2D) { check_projection<2>(); }
TEST(ElasticHessian, ProjectionIsPositiveSemiDefiniteIn3D) { check_projection<3>(); }

// At rest (and at any rotation) every solid gives the small-strain tensor: A = 2μ I + λ 11ᵀ,
// a_kl = 2μ, b_kl = 0; the fluid A = K 11ᵀ (bulk stiffness only), a_kl = b_kl = 0.
template <int D>
void check_rest_coefficients() {
  std::mt19937_64 rng(5);
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(c.name + ", " + std::to_string(D) + "D");
    std::visit(
        [&](const auto& model) {
          using Model = std::decay_t<decltype(model)>;
          Real mu = 0, lambda = 0;
          if constexpr (std::is_same_v<Model, Fluid>) {
            lambda = model.bulk;
          } else if constexpr (std::is_same_v<Model, Snow>) {
            mu = model.hardening_factor(c.Jp) * model.mu0;
            lambda = model.hardening_factor(c.Jp) * model.lambda0;
          } else {
            mu = model.mu;
            lambda = model.lambda;
          }
          for (const Mat<D>& F : {Mat<D>(Mat<D>::Identity()), random_rotation<D>(rng)}) {
            const ElasticHessian<D> H = model.template hessian<D>(F, c.Jp);
            for (int p = 0; p < ElasticHessian<D>::kPairs; ++p) {
              EXPECT_NEAR(H.a[p], 2 * mu, 1e-12 * c.stress_scale);
              EXPECT_NEAR(H.b[p], 0, 1e-12 * c.stress_scale);
            }
            const Mat<D> expected = Mat<D>::Constant(lambda) + 2 * mu * Mat<D>::Identity();
            EXPECT_LE((H.A - expected).norm(), 1e-12 * c.stress_scale) << H.A;
          }
        },
        c.material);
  }
}

TEST(ElasticHessian, RestStateIsTheSmallStrainTensor) {
  check_rest_coefficients<2>();
  check_rest_coefficients<3>();
}

template <int D>
void check_not_defined() {
  Mat<D> F = Mat<D>::Identity();
  F(0, 0) = -1;
  const NeoHookean nh(lame_parameters(1e5, 0.3));
  const DruckerPrager dp(lame_parameters(1e5, 0.3), 30, 0);
  const Fluid fluid(1e5, 7, 0);
  const Mat<D> dF = Mat<D>::Identity();
  EXPECT_TRUE(nh.hessian<D>(F, 1).apply(dF).array().isNaN().all());
  EXPECT_TRUE(dp.hessian<D>(F, 1).apply(dF).array().isNaN().all());
  EXPECT_TRUE(fluid.hessian<D>(F, 1).apply(dF).array().isNaN().all());
  ElasticHessian<D> H = nh.hessian<D>(F, 1);
  H.project_spd();
  EXPECT_TRUE(H.apply(dF).array().isNaN().all()) << "projection keeps NaN";
}

TEST(ElasticHessian, NaNWhereStressIsNaN) {
  check_not_defined<2>();
  check_not_defined<3>();
}

// The generic builder from ψ̂_{,k} (diagonal of Uᵀ P V) and ψ̂_{,kl} (the closed-form A) gives the
// closed-form a_kl, b_kl, also with singular values 1e-9, 5e-7 (limit) and 2e-6 (division) apart.
template <int D>
void check_generic_builder() {
  using Vec = Eigen::Matrix<Real, D, 1>;
  std::mt19937_64 rng(11 + D);
  std::vector<Mat<D>> Fs;
  for (Real gap : {0.0, 1e-9, 5e-7, 2e-6, 1e-3}) {
    Vec sigma = Vec::LinSpaced(1.3, 0.7);
    sigma(1) = sigma(0) - gap;
    Fs.push_back(with_singular_values<D>(rng, sigma));
  }
  for (int i = 0; i < 5; ++i)
    Fs.push_back(random_rotation<D>(rng) * (Mat<D>::Identity() + random_matrix<D>(rng, 0.3)));
  for (const Case& c : all_cases()) {
    if (std::holds_alternative<LinearElastic>(c.material)) continue;  // not in SVD form
    SCOPED_TRACE(c.name + ", " + std::to_string(D) + "D");
    std::visit(
        [&](const auto& model) {
          for (const Mat<D>& F : Fs) {
            const PolarSvd<D> svd = polar_svd<D>(F);
            const ElasticHessian<D> closed = model.template hessian<D>(F, c.Jp);
            const Vec gradient = (svd.U.transpose() * model.template P<D>(F, c.Jp) * svd.V).diagonal();
            const ElasticHessian<D> generic = elastic_hessian_from_derivatives<D>(svd, gradient, closed.A);
            for (int p = 0; p < ElasticHessian<D>::kPairs; ++p) {
              EXPECT_NEAR(generic.a[p], closed.a[p], 1e-8 * c.stress_scale)
                  << "sigma = " << svd.sigma.transpose();
              EXPECT_NEAR(generic.b[p], closed.b[p], 1e-8 * c.stress_scale)
                  << "sigma = " << svd.sigma.transpose();
            }
          }
        },
        c.material);
  }
}

TEST(ElasticHessian, GenericBuilderAgreesWithClosedForms) {
  check_generic_builder<2>();
  check_generic_builder<3>();
}

}  // namespace
}  // namespace nendo
