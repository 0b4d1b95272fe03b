#pragma once
// Weakly compressible fluid (DESIGN.md materials: water) with a Tait equation of state:
//   p(J) = (K/γ)(J^{−γ} − 1),   ψ(J) = (K/γ)[(J − 1) − (J^{1−γ} − 1)/(1 − γ)]  (log J at γ = 1),
// so that ψ(1) = 0, ψ ≥ 0 and ∂ψ/∂F = ψ'(J) J F^{-T} = −p J F^{-T} = P; τ = P F^T = −p J I.
// project() replaces F by J^{1/d} I after every F update: a fluid remembers only its volume, and
// keeping the deviatoric part would let F drift (and lose conditioning) under shear for no
// physical effect. kPlastic = true means just that project() must run. Viscosity is a rate term
// the method adds itself: viscous_stress(L) is the Cauchy stress η(L + L^T) for the velocity
// gradient L. J ≤ 0: ψ = +∞ and P, τ are NaN (as neo-Hookean). Jp is unused (stays 1).
#include <cmath>
#include <limits>

#include "core/Svd.hpp"
#include "methods/mpm/materials/Cofactor.hpp"
#include "methods/mpm/materials/ElasticParameters.hpp"
#include "scene/MaterialSchema.hpp"

namespace nendo {

struct Fluid {
  static constexpr const char* kName = "fluid";
  static constexpr bool kPlastic = true;

  static MaterialModelSchema schema() {
    return {
        kName,
        "weakly compressible fluid (Tait equation of state) in MPM",
        {KeySchema::real("bulk", "bulk modulus").measured_in("Pa").mandatory().above(0),
         KeySchema::real("gamma", "Tait exponent").defaults_to("7").at_least(1), density_key(),
         KeySchema::real("viscosity", "dynamic viscosity").measured_in("Pa s").defaults_to("0").at_least(0)}};
  }

  explicit Fluid(const MaterialSettings& settings)
      : Fluid(material_parameter(settings, "bulk"), material_parameter(settings, "gamma"),
              material_parameter(settings, "viscosity")) {}
  Fluid(Real bulk_, Real gamma_, Real viscosity_) : bulk(bulk_), gamma(gamma_), viscosity(viscosity_) {}

  Real pressure(Real J) const { return bulk / gamma * (std::pow(J, -gamma) - 1); }

  template <int D>
  Real psi(const Mat<D>& F, Real /*Jp*/) const {
    const Real J = F.determinant();
    if (!(J > 0)) return std::numeric_limits<Real>::infinity();
    const Real log_J = std::log(J);
    const Real integral = gamma == 1 ? log_J : std::expm1((1 - gamma) * log_J) / (1 - gamma);
    return bulk / gamma * ((J - 1) - integral);
  }

  template <int D>
  Mat<D> P(const Mat<D>& F, Real /*Jp*/) const {
    const Real J = F.determinant();
    if (!(J > 0)) return Mat<D>::Constant(std::numeric_limits<Real>::quiet_NaN());
    return -pressure(J) * cofactor<D>(F);
  }

  template <int D>
  Mat<D> kirchhoff(const Mat<D>& F, Real /*Jp*/) const {
    const Real J = F.determinant();
    if (!(J > 0)) return Mat<D>::Constant(std::numeric_limits<Real>::quiet_NaN());
    return (-pressure(J) * J) * Mat<D>::Identity();
  }

  template <int D>
  void project(Mat<D>& F, Real& /*Jp*/) const {
    const Real J = F.determinant();
    const Real stretch = D == 3 ? std::cbrt(J) : std::sqrt(J);
    F = stretch * Mat<D>::Identity();
  }

  // Cauchy viscous stress η(L + L^T) for the velocity gradient L (added by the method).
  template <int D>
  Mat<D> viscous_stress(const Mat<D>& L) const {
    return viscosity * (L + L.transpose());
  }

  // Sound speed at rest, √(K/ρ) (= √(dp/dρ) at J = 1).
  Real wave_speed(Real density, Real /*Jp*/) const { return std::sqrt(bulk / density); }

  Real bulk;       // K
  Real gamma;      // γ
  Real viscosity;  // η
};

}  // namespace nendo
