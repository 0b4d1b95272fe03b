#pragma once
// The linear tetrahedron of spec 004 §3: O'Brien & Hodgins 1999 written in the standard form
// (StVK, "a linear law on Green strain"): E = ½(FᵀF − I), S = D e (Voigt e = (E11, E22, E33, 2E12,
// 2E13, 2E23)), f_a = −V_0 F S ∇N_a. Small fixed-size functions for the hot loop; no allocation.
#include <Eigen/Dense>
#include <array>

#include "core/Types.hpp"
#include "materials/StvkMaterial.hpp"  // Stiffness, the material's D

namespace nendo::fem {

using Mat3 = Eigen::Matrix<Real, 3, 3>;
using Voigt = Eigen::Matrix<Real, 6, 1>;
using Mat12 = Eigen::Matrix<Real, 12, 12>;

// Rest data of one tet: D_m^{-1} and V_0 = |det D_m| / 6 (children may have det D_m < 0).
struct RestShape {
  Mat3 dm_inverse;
  Real volume = 0;
};
RestShape rest_shape(const Real* x0, const Real* x1, const Real* x2, const Real* x3);

// F = D_s D_m^{-1} from the 4 corner positions x[4][3]; Ḟ likewise from velocities.
Mat3 deformation_gradient(const RestShape& rest, const Real (&x)[4][3]);
Voigt green_strain(const Mat3& F);                         // Voigt, engineering shear
Voigt biot_strain(const Mat3& F);                          // Voigt(U − I), U = sqrt(FᵀF) (spec §4.4)
Voigt green_strain_rate(const Mat3& F, const Mat3& Fdot);  // Ė = ½(FᵀḞ + ḞᵀF), Voigt

// Elastic energy V_0 ½ eᵀ D e.
Real strain_energy(const RestShape& rest, const Stiffness& D, const Real (&x)[4][3]);
Real strain_energy(const RestShape& rest, const Stiffness& D, const Voigt& green);
// Nodal forces f[a] = −V_0 F S ∇N_a, S = D e + φ tr(Ė) I + 2ψ Ė (spec §6.2 step 3); φ = ψ = 0
// (or no velocities) for the elastic part alone. Returns the Voigt S used.
Voigt element_forces(const RestShape& rest, const Stiffness& D, const Real (&x)[4][3], Real (&f)[4][3]);
// The same from F and its Green strain, computed once for the level selection and the forces.
Voigt element_forces(const RestShape& rest, const Stiffness& D, const Mat3& F, const Voigt& green,
                     Real (&f)[4][3]);
Voigt element_forces(const RestShape& rest, const Stiffness& D, Real phi, Real psi, const Real (&x)[4][3],
                     const Real (&v)[4][3], Real (&f)[4][3]);
// What rounding alone makes of element_forces at x, per corner (for the round-off floor of an
// implicit solve): the corners carry ε|x| in absolute coordinates and E = ½(FᵀF − I) cancels terms
// of size |F|², so at small strain the forces are small differences of far larger terms.
void element_force_round_off(const RestShape& rest, const Stiffness& D, const Real (&x)[4][3],
                             Real (&round_off)[4]);
// The same through O'Brien & Hodgins' [OH-5], [OH-6] (β matrix, ε = 2E, σ = 2S): for tests.
void obrien_forces(const Real (&rest_x)[4][3], const Stiffness& D, const Real (&x)[4][3], Real (&f)[4][3]);
// ∂²W/∂x² (12×12, node-major: row 3a + i), the exact StVK tangent; `definite` projects the
// stress term's negative part away (the fixed-corotated style clamp used by Newton far from
// equilibrium): S replaced by its positive part in the geometric stiffness.
Mat12 element_hessian(const RestShape& rest, const Stiffness& D, const Real (&x)[4][3],
                      bool definite = false);

}  // namespace nendo::fem
