#pragma once
// Weakly compressible fluid (DESIGN.md materials: water) with a Tait equation of state:
//   p(J) = (K/γ)(J^{−γ} − 1),   ψ(J) = (K/γ)[(J − 1) − (J^{1−γ} − 1)/(1 − γ)]  (log J at γ = 1),
// so that ψ(1) = 0, ψ ≥ 0 and ∂ψ/∂F = ψ'(J) J F^{-T} = −p J F^{-T} = P; τ = P F^T = −p J I.
// project() replaces F by J^{1/d} I after every F update: a fluid remembers only its volume, and
// keeping the deviatoric part would let F drift (and lose conditioning) under shear for no
// physical effect. kPlastic = true means just that project() must run. Viscosity is the model's
// rate term (Materials.hpp HasRateTerm): the Kirchhoff stress J η(L + L^T) of the velocity
// gradient L, which the step adds to τ. J ≤ 0: ψ = +∞ and P, τ are NaN (as neo-Hookean). Jp is
// unused (stays 1).
#include <cmath>
#include <limits>

#include "core/Svd.hpp"
#include "materials/Cofactor.hpp"
#include "materials/ElasticHessian.hpp"
#include "materials/ElasticParameters.hpp"
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

  // ∂P/∂F in the SVD's diagonal space (spec 002 §2.5). ψ̂(σ) = ψ(J), J = Π σ_k, with
  // ψ' = −p(J), ψ'' = −p'(J) = K J^{−γ−1}, g_k = J/σ_k and J/(σ_kσ_l) = σ_m (3D) or 1 (2D):
  //   ψ̂_{,k} = ψ' g_k,  ψ̂_{,kk} = ψ'' g_k²,  ψ̂_{,kl} = (ψ'' J + ψ') J/(σ_kσ_l),
  //   a_kl = −ψ' J/(σ_kσ_l),  b_kl = ψ' J/(σ_kσ_l).   J ≤ 0: NaN, as P.
  template <int D>
  ElasticHessian<D> hessian(const Mat<D>& F, Real /*Jp*/) const {
    using H = ElasticHessian<D>;
    const PolarSvd<D> svd = polar_svd<D>(F);
    const Real J = svd.sigma.prod();
    if (!(J > 0)) return H::nan();
    const Real J_minus_gamma = std::pow(J, -gamma);
    const Real d1 = -bulk / gamma * (J_minus_gamma - 1);  // ψ'(J) = −p(J)
    const Real d2 = bulk * J_minus_gamma / J;             // ψ''(J)
    const Eigen::Matrix<Real, D, 1> g = cofactor_diagonal<D>(svd.sigma);
    H h;
    h.U = svd.U;
    h.V = svd.V;
    h.A = d2 * g * g.transpose();
    for (int p = 0; p < H::kPairs; ++p) {
      const int k = H::kFirst[p], l = H::kSecond[p];
      const Real m = pair_cofactor<D>(svd.sigma, p);
      h.A(k, l) = h.A(l, k) = (d2 * J + d1) * m;
      h.a[p] = -d1 * m;
      h.b[p] = d1 * m;
    }
    return h;
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

  // Cauchy viscous stress η(L + L^T) for the velocity gradient L.
  template <int D>
  Mat<D> viscous_stress(const Mat<D>& L) const {
    return viscosity * (L + L.transpose());
  }

  // The rate term (Materials.hpp HasRateTerm): J η(L + L^T), the Kirchhoff form of the viscous
  // stress, nonzero only with a viscosity.
  bool rate_dependent() const { return viscosity > 0; }
  template <int D>
  Mat<D> rate_kirchhoff(const Mat<D>& L, Real J) const {
    return J * viscous_stress<D>(L);
  }

  // Sound speed at rest, √(K/ρ) (= √(dp/dρ) at J = 1).
  Real wave_speed(Real density, Real /*Jp*/) const { return std::sqrt(bulk / density); }

  Real bulk;       // K
  Real gamma;      // γ
  Real viscosity;  // η
};

}  // namespace nendo
