#pragma once
// The MPM material models. Adding one = its file (a struct with kName, kPlastic, schema(), a
// constructor from MaterialSettings, psi/P/kirchhoff/project<D>, hessian<D> (∂P/∂F as an
// ElasticHessian, spec 002 §2.5), wave_speed; optionally a rate term, HasRateTerm) + one entry
// below.
#include <Eigen/Core>
#include <algorithm>
#include <cstddef>
#include <type_traits>
#include <utility>
#include <variant>

#include "materials/DruckerPrager.hpp"
#include "materials/FixedCorotated.hpp"
#include "materials/Fluid.hpp"
#include "materials/LinearElastic.hpp"
#include "materials/NeoHookean.hpp"
#include "materials/Snow.hpp"
#include "scene/Scene.hpp"

namespace nendo {

template <class Material, int D, class = void>
struct HasKirchhoffBatch : std::false_type {};
template <class Material, int D>
struct HasKirchhoffBatch<Material, D,
                         std::void_t<decltype(std::declval<const Material&>().template kirchhoff_batch<D>(
                             (const Real*)nullptr, (const Real*)nullptr, std::size_t(0), (Real*)nullptr))>>
    : std::true_type {};

template <class Material, int D, class = void>
struct HasProjectBatch : std::false_type {};
template <class Material, int D>
struct HasProjectBatch<Material, D,
                       std::void_t<decltype(std::declval<const Material&>().template project_batch<D>(
                           (Real*)nullptr, (Real*)nullptr, std::size_t(0)))>> : std::true_type {};

// Materials whose Kirchhoff stress is linear in the elastic Hencky strain ε = log V_E, which their
// return mapping leaves in a particle field (Drucker–Prager): kirchhoff_of_hencky(ε, count, τ).
template <class Material, int D, class = void>
struct CarriesHencky : std::false_type {};
template <class Material, int D>
struct CarriesHencky<Material, D,
                     std::void_t<decltype(std::declval<const Material&>().template kirchhoff_of_hencky<D>(
                         (const Real*)nullptr, std::size_t(0), (Real*)nullptr))>> : std::true_type {};

// Materials with a rate term (Fluid's viscosity): rate_kirchhoff<D>(L, J), a Kirchhoff stress of
// the velocity gradient L = ∇v and J = det F_E, which the step adds to the elastic τ one step
// behind (G2P computes it, the next P2G adds it), and rate_dependent(), whether the material's
// parameters make it nonzero (only then do particles carry it).
template <class Material, class = void>
struct HasRateTerm : std::false_type {};
template <class Material>
struct HasRateTerm<Material, std::void_t<decltype(std::declval<const Material&>().rate_dependent())>>
    : std::true_type {};

using MpmMaterial = std::variant<LinearElastic, NeoHookean, FixedCorotated, Snow, DruckerPrager, Fluid>;

// Whether the material has a nonzero rate term (HasRateTerm).
inline bool rate_dependent(const MpmMaterial& material) {
  return std::visit(
      [](const auto& m) {
        if constexpr (HasRateTerm<std::decay_t<decltype(m)>>::value)
          return m.rate_dependent();
        else
          return false;
      },
      material);
}

// The material's rate term for the velocity gradient L and J = det F_E; zero for a material
// without one (HasRateTerm).
template <int D>
Mat<D> rate_kirchhoff(const MpmMaterial& material, const Mat<D>& L, Real J) {
  return std::visit(
      [&](const auto& m) -> Mat<D> {
        if constexpr (HasRateTerm<std::decay_t<decltype(m)>>::value)
          return m.template rate_kirchhoff<D>(L, J);
        else
          return Mat<D>::Zero();
      },
      material);
}

// The model named by settings.model; throws nendo::Error for a name no type in MpmMaterial has.
MpmMaterial make_mpm_material(const MaterialSettings& settings);

// Kirchhoff stress τ = P Fᵀ of particles [begin, end) into tau (d×d row-major each), from their F
// and J_P: from the Hencky strain the last return mapping left (hencky, d×d each) for a material
// that CarriesHencky, else through the material's kirchhoff_batch when it has one (FixedCorotated:
// a vectorised polar decomposition), else one particle at a time.
template <int D, class Material>
void kirchhoff_run(const Material& material, const Real* F, const Real* Jp, std::size_t begin,
                   std::size_t end, Real* tau, const Real* hencky = nullptr) {
  using RowMat = Eigen::Matrix<Real, D, D, Eigen::RowMajor>;
  if constexpr (CarriesHencky<Material, D>::value) {
    if (hencky)
      return material.template kirchhoff_of_hencky<D>(hencky + D * D * begin, end - begin,
                                                      tau + D * D * begin);
  }
  if constexpr (HasKirchhoffBatch<Material, D>::value) {
    material.template kirchhoff_batch<D>(F + D * D * begin, Jp + begin, end - begin, tau + D * D * begin);
  } else {
    for (std::size_t p = begin; p < end; ++p)
      Eigen::Map<RowMat>(tau + D * D * p) =
          material.template kirchhoff<D>(Eigen::Map<const RowMat>(F + D * D * p), Jp[p]);
  }
}

// The return mapping (project, spec 002 §3.2) of particles [begin, end) in place, on their trial
// F (d×d row-major each) and J_P: through the material's project_batch when it has one (snow,
// Drucker–Prager: a vectorised SVD), else one particle at a time. With hencky, each particle's new
// elastic Hencky strain there (d×d each): from a material that CarriesHencky, zero from the others.
template <int D, class Material>
void project_run(const Material& material, Real* F, Real* Jp, std::size_t begin, std::size_t end,
                 Real* hencky = nullptr) {
  using RowMat = Eigen::Matrix<Real, D, D, Eigen::RowMajor>;
  if constexpr (CarriesHencky<Material, D>::value) {
    if (hencky)
      return material.template project_batch<D>(F + D * D * begin, Jp + begin, end - begin,
                                                hencky + D * D * begin);
  } else if (hencky) {
    std::fill(hencky + D * D * begin, hencky + D * D * end, 0.0);
  }
  if constexpr (HasProjectBatch<Material, D>::value) {
    material.template project_batch<D>(F + D * D * begin, Jp + begin, end - begin);
  } else {
    for (std::size_t p = begin; p < end; ++p) {
      Mat<D> Fp = Eigen::Map<const RowMat>(F + D * D * p);
      material.template project<D>(Fp, Jp[p]);
      Eigen::Map<RowMat>(F + D * D * p) = Fp;
    }
  }
}

}  // namespace nendo
