#include "methods/fem/StvkElement.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <limits>

namespace nendo::fem {
namespace {

using Vec = Eigen::Matrix<Real, 3, 1>;
using Gradients = Eigen::Matrix<Real, 3, 4>;  // column a = ∇N_a

Voigt strain_voigt(const Mat3& E) {  // engineering shear (spec §2)
  Voigt e;
  e << E(0, 0), E(1, 1), E(2, 2), 2 * E(0, 1), 2 * E(0, 2), 2 * E(1, 2);
  return e;
}

Mat3 stress_tensor(const Voigt& s) {  // stresses carry no factor 2
  Mat3 S;
  S << s[0], s[3], s[4], s[3], s[1], s[5], s[4], s[5], s[2];
  return S;
}

Mat3 edge_matrix(const Real (&x)[4][3]) {
  Mat3 D;
  for (int a = 0; a < 3; ++a)
    for (int i = 0; i < 3; ++i) D(i, a) = x[a + 1][i] - x[0][i];
  return D;
}

// ∇N_a = (row a of D_m^{-1})ᵀ for a = 1..3, ∇N_0 = −Σ∇N_a (spec §2).
Gradients shape_gradients(const RestShape& rest) {
  Gradients G;
  G.rightCols<3>() = rest.dm_inverse.transpose();
  G.col(0) = -G.rightCols<3>().rowwise().sum();
  return G;
}

// f_a = −V_0 P ∇N_a with P = F S (spec §3).
void write_forces(const RestShape& rest, const Mat3& F, const Voigt& s, Real (&f)[4][3]) {
  const Eigen::Matrix<Real, 3, 4> forces = -rest.volume * F * stress_tensor(s) * shape_gradients(rest);
  for (int a = 0; a < 4; ++a)
    for (int i = 0; i < 3; ++i) f[a][i] = forces(i, a);
}

// The positive semi-definite part of a symmetric 3×3 matrix (negative eigenvalues set to 0).
Mat3 positive_part(const Mat3& S) {
  const Eigen::SelfAdjointEigenSolver<Mat3> eigen(S);
  const Vec clamped = eigen.eigenvalues().cwiseMax(0.0);
  return eigen.eigenvectors() * clamped.asDiagonal() * eigen.eigenvectors().transpose();
}

}  // namespace

RestShape rest_shape(const Real* x0, const Real* x1, const Real* x2, const Real* x3) {
  Mat3 Dm;
  const Real* corners[3] = {x1, x2, x3};
  for (int a = 0; a < 3; ++a)
    for (int i = 0; i < 3; ++i) Dm(i, a) = corners[a][i] - x0[i];
  RestShape rest;
  rest.dm_inverse = Dm.inverse();
  rest.volume = std::abs(Dm.determinant()) / 6;
  return rest;
}

Mat3 deformation_gradient(const RestShape& rest, const Real (&x)[4][3]) {
  return edge_matrix(x) * rest.dm_inverse;
}

Voigt green_strain(const Mat3& F) { return strain_voigt(0.5 * (F.transpose() * F - Mat3::Identity())); }

Voigt biot_strain(const Mat3& F) {
  const Eigen::SelfAdjointEigenSolver<Mat3> eigen(F.transpose() * F);
  const Vec stretches = eigen.eigenvalues().cwiseMax(0.0).cwiseSqrt();
  const Mat3 U = eigen.eigenvectors() * stretches.asDiagonal() * eigen.eigenvectors().transpose();
  return strain_voigt(U - Mat3::Identity());
}

Voigt green_strain_rate(const Mat3& F, const Mat3& Fdot) {
  return strain_voigt(0.5 * (F.transpose() * Fdot + Fdot.transpose() * F));
}

Real strain_energy(const RestShape& rest, const Stiffness& D, const Real (&x)[4][3]) {
  return strain_energy(rest, D, green_strain(deformation_gradient(rest, x)));
}

Real strain_energy(const RestShape& rest, const Stiffness& D, const Voigt& green) {
  return rest.volume * 0.5 * green.dot(D * green);
}

Voigt element_forces(const RestShape& rest, const Stiffness& D, const Real (&x)[4][3], Real (&f)[4][3]) {
  const Mat3 F = deformation_gradient(rest, x);
  return element_forces(rest, D, F, green_strain(F), f);
}

Voigt element_forces(const RestShape& rest, const Stiffness& D, const Mat3& F, const Voigt& green,
                     Real (&f)[4][3]) {
  const Voigt s = D * green;
  write_forces(rest, F, s, f);
  return s;
}

// δx = ε max|x| at each corner gives |δF| ≤ ε max|x| Σ_b |∇N_b|; then |δE| ≤ |F| |δF| + ε |F|²,
// |δS| ≤ |D| |δE| and |δf_a| ≤ V_0 |F| |δS| |∇N_a| (Frobenius norms; the small-strain δF S term left out).
void element_force_round_off(const RestShape& rest, const Stiffness& D, const Real (&x)[4][3],
                             Real (&round_off)[4]) {
  constexpr Real eps = std::numeric_limits<Real>::epsilon();
  const Gradients G = shape_gradients(rest);
  Real largest = 0;
  for (int a = 0; a < 4; ++a)
    for (int i = 0; i < 3; ++i) largest = std::max(largest, std::abs(x[a][i]));
  const Real F = deformation_gradient(rest, x).norm();
  const Real dF = eps * largest * G.colwise().norm().sum();
  const Real dS = D.norm() * (F * dF + eps * F * F);
  for (int a = 0; a < 4; ++a) round_off[a] = rest.volume * F * dS * G.col(a).norm();
}

// Viscous stress of [OH-4] in the standard form (spec §3): S_v = φ tr(Ė) I + 2ψ Ė; in Voigt the
// shear entries of 2ψĖ are ψ times the engineering shear rates.
Voigt element_forces(const RestShape& rest, const Stiffness& D, Real phi, Real psi, const Real (&x)[4][3],
                     const Real (&v)[4][3], Real (&f)[4][3]) {
  const Mat3 F = deformation_gradient(rest, x);
  const Voigt rate = green_strain_rate(F, deformation_gradient(rest, v));
  Voigt s = D * green_strain(F);
  s.head<3>().array() += phi * rate.head<3>().sum() + 2 * psi * rate.head<3>().array();
  s.tail<3>() += psi * rate.tail<3>();
  write_forces(rest, F, s, f);
  return s;
}

// [OH-5], [OH-6] literally, with node indices 0..3 for O'Brien's 1..4. ε_OH = FᵀF − I = 2E and
// σ_OH = D Voigt(ε_OH) = 2S (spec §3), so this must equal element_forces.
void obrien_forces(const Real (&rest_x)[4][3], const Stiffness& D, const Real (&x)[4][3], Real (&f)[4][3]) {
  Eigen::Matrix<Real, 4, 4> M;
  Eigen::Matrix<Real, 3, 4> P;
  for (int j = 0; j < 4; ++j) {
    M.col(j) << rest_x[j][0], rest_x[j][1], rest_x[j][2], 1;
    P.col(j) << x[j][0], x[j][1], x[j][2];
  }
  const Eigen::Matrix<Real, 4, 4> beta = M.inverse();
  const Mat3 dx_du = P * beta.leftCols<3>();  // column i = P β δ_i
  const Mat3 epsilon = dx_du.transpose() * dx_du - Mat3::Identity();
  const Mat3 sigma = stress_tensor(D * strain_voigt(epsilon));
  const Vec e1 =
      Vec(rest_x[1][0], rest_x[1][1], rest_x[1][2]) - Vec(rest_x[0][0], rest_x[0][1], rest_x[0][2]);
  const Vec e2 =
      Vec(rest_x[2][0], rest_x[2][1], rest_x[2][2]) - Vec(rest_x[0][0], rest_x[0][1], rest_x[0][2]);
  const Vec e3 =
      Vec(rest_x[3][0], rest_x[3][1], rest_x[3][2]) - Vec(rest_x[0][0], rest_x[0][1], rest_x[0][2]);
  const Real vol = std::abs(e1.cross(e2).dot(e3)) / 6;  // Bey children may be negatively oriented
  for (int i = 0; i < 4; ++i) {
    Vec sum = Vec::Zero();
    for (int j = 0; j < 4; ++j) {
      Real weight = 0;
      for (int k = 0; k < 3; ++k)
        for (int l = 0; l < 3; ++l) weight += beta(j, l) * beta(i, k) * sigma(k, l);
      sum += P.col(j) * weight;
    }
    for (int c = 0; c < 3; ++c) f[i][c] = -(vol / 2) * sum[c];
  }
}

// Column (b, k) of ∂²W/∂x² is V_0 dP ∇N_a for the variation dF = e_k ∇N_bᵀ of F, with
// dP = dF S + F dS, dS = D Voigt(sym(Fᵀ dF)). The material part F dS is Jᵀ D J (PSD for SPD D);
// only the geometric part dF S can be indefinite, so `definite` replaces S there by its positive
// part: the result is PSD and equals the exact tangent wherever S ≽ 0.
Mat12 element_hessian(const RestShape& rest, const Stiffness& D, const Real (&x)[4][3], bool definite) {
  const Mat3 F = deformation_gradient(rest, x);
  const Mat3 S = stress_tensor(D * green_strain(F));
  const Mat3 S_geometric = definite ? positive_part(S) : S;
  const Gradients G = shape_gradients(rest);
  Mat12 H;
  for (int b = 0; b < 4; ++b) {
    const Vec geometric = S_geometric * G.col(b);
    for (int k = 0; k < 3; ++k) {
      const Mat3 FT_dF = F.row(k).transpose() * G.col(b).transpose();
      const Mat3 dS = stress_tensor(D * strain_voigt(0.5 * (FT_dF + FT_dF.transpose())));
      Mat3 dP = F * dS;
      dP.row(k) += geometric.transpose();
      const Eigen::Matrix<Real, 3, 4> column = rest.volume * dP * G;  // (i, a) → row 3a + i
      H.col(3 * b + k) = Eigen::Map<const Eigen::Matrix<Real, 12, 1>>(column.data());
    }
  }
  return H;
}

}  // namespace nendo::fem
