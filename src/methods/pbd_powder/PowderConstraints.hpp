#pragma once
// The constraints of spec 003 §4 for one particle i against its neighbour list, on positions p
// (3 reals per particle): the density constraint F_i and its λ_i (Eqs. 1, 2, 4), the correction
// Δp_i of Eq. (3), and the rest-state distance constraint R_i with s_i ∇_{p_i} R_i (Eqs. 5-7).
// Jacobi: each reads the current iterate and writes only particle i's values. Neighbour sums run
// in the list's order, which the caller makes independent of the rank count.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "methods/pbd_powder/PowderKernel.hpp"

namespace nendo::pbd {

struct ConstraintParams {
  PowderKernel kernel{1, 3};
  Real rest_density = 1;      // ρ_0
  Real epsilon = 0;           // ε of λ (§5.4)
  Real rest_distance = 0;     // d of Eq. (5)
  bool unilateral = false;    // F_i ≥ 0 (B4)
  Real scorr_k = 0;           // artificial pressure −k (W/W(Δq))^4; 0: off
  Real scorr_inverse_w = 0;   // 1 / W(Δq)
  Real contact_distance = 0;  // particles closer than this are pushed apart (extension, A1); 0: off
};

struct DensityConstraint {
  Real density = 0;  // ρ_i (Eq. 2, self included)
  Real value = 0;    // F_i (Eq. 1)
  Real lambda = 0;   // λ_i (Eq. 4 with ε)
};

struct RestConstraint {
  Real value = 0;                // R_i (Eq. 5)
  Real scale = 0;                // s_i (Eq. 7)
  Real gradient[3] = {0, 0, 0};  // ∇_{p_i} R_i = Σ_j n_ij
};

// F_i, λ_i and, when `rest` is given, R_i and s_i (Eqs. 5, 7) in one pass over the neighbours.
// Pairs closer than 1e-9 h have
// no direction and are left out of R_i. `contacts` (may be null) receives the number of
// neighbours closer than c.contact_distance.
inline DensityConstraint density_constraint(const ConstraintParams& c, const Real* p, std::uint32_t i,
                                            const std::uint32_t* begin, const std::uint32_t* end,
                                            RestConstraint* rest = nullptr, int* contacts = nullptr) {
  const PowderKernel& kernel = c.kernel;
  const Real* pi = p + 3 * i;
  const Real shortest2 = 1e-18 * kernel.h2();
  Real rho = kernel.w(0), g[3] = {0, 0, 0}, g2 = 0;
  Real R = 0, G[3] = {0, 0, 0};
  int count = 0, touching = 0;
  const Real contact2 = c.contact_distance * c.contact_distance;
  for (const std::uint32_t* k = begin; k != end; ++k) {
    const Real* pj = p + 3 * *k;
    const Real d[3] = {pi[0] - pj[0], pi[1] - pj[1], pi[2] - pj[2]};
    const Real r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    if (r2 >= kernel.h2()) continue;
    const Real r = std::sqrt(r2), w = kernel.w(r2), f = kernel.gradient_factor(r);
    rho += w;
    for (int a = 0; a < 3; ++a) g[a] += f * d[a];
    g2 += f * f * r2;
    if (rest && r2 > shortest2) {
      R += r - c.rest_distance;
      for (int a = 0; a < 3; ++a) G[a] += d[a] / r;
      ++count;
    }
    if (r2 < contact2 && r2 > shortest2) ++touching;
  }
  if (contacts) *contacts = touching;
  DensityConstraint out;
  out.density = rho;
  out.value = rho / c.rest_density - 1;
  if (c.unilateral && out.value < 0) out.value = 0;
  // Σ_k |∇_{p_k} F_i|² = (|Σ_j ∇W_ij|² + Σ_j |∇W_ij|²) / ρ_0² (spec §4.1)
  const Real denominator = (g[0] * g[0] + g[1] * g[1] + g[2] * g[2] + g2) / (c.rest_density * c.rest_density);
  out.lambda = denominator + c.epsilon > 0 ? -out.value / (denominator + c.epsilon) : 0;
  if (rest) {
    *rest = RestConstraint{};
    rest->value = R;
    std::copy_n(G, 3, rest->gradient);
    if (count > 0)
      rest->scale = -R / (G[0] * G[0] + G[1] * G[1] + G[2] * G[2] + count);  // Σ_k |∇_{p_k} R_i|²
  }
  return out;
}

inline RestConstraint rest_constraint(const ConstraintParams& c, const Real* p, std::uint32_t i,
                                      const std::uint32_t* begin, const std::uint32_t* end) {
  RestConstraint rest;
  density_constraint(c, p, i, begin, end, &rest);
  return rest;
}

// The corrections of one Jacobi round for particle i in one pass, the pair terms recomputed from
// p (the positions of the λ pass) rather than stored: Eq. (3) with the optional s_corr, and, when
// c.contact_distance > 0 and i has contacts, the contact extension. weights[stride k] is λ_k,
// weights[stride k + 1] the contact count of k. Scalar on purpose: 8-lane vector versions of this
// and of the λ pass (gathers, or loads into lane arrays) were 28 % slower on this machine
// (Sapphire Rapids under a VM: the gathers dominate).
inline void pair_corrections(const ConstraintParams& c, const Real* p, const Real* weights, int stride,
                             std::uint32_t i, const std::uint32_t* begin, const std::uint32_t* end,
                             Real* dp) {
  const PowderKernel& kernel = c.kernel;
  const Real* pi = p + 3 * i;
  const Real li = weights[stride * i], contacts_i = c.contact_distance > 0 ? weights[stride * i + 1] : 0;
  const bool contacts = contacts_i > 0;
  const Real h2 = kernel.h2(), shortest = 1e-9 * kernel.h();
  Real sum[3] = {0, 0, 0}, push[3] = {0, 0, 0};
  for (const std::uint32_t* k = begin; k != end; ++k) {
    const Real* pj = p + 3 * *k;
    const Real d[3] = {pi[0] - pj[0], pi[1] - pj[1], pi[2] - pj[2]};
    const Real r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    if (r2 >= h2) continue;
    const Real r = std::sqrt(r2), f = kernel.gradient_factor(r);
    Real scale = li + weights[stride * *k];
    if (c.scorr_k > 0) {
      const Real q = kernel.w(r2) * c.scorr_inverse_w, q2 = q * q;
      scale -= c.scorr_k * q2 * q2;
    }
    for (int a = 0; a < 3; ++a) sum[a] += scale * (f * d[a]);
    if (contacts && r < c.contact_distance && r > shortest) {
      const Real g = 0.5 * (c.contact_distance - r) / r / std::max(contacts_i, weights[stride * *k + 1]);
      for (int a = 0; a < 3; ++a) push[a] += g * d[a];
    }
  }
  const Real inverse = 1 / c.rest_density;
  for (int a = 0; a < 3; ++a) dp[a] += sum[a] * inverse + push[a];
}
// Eq. (3) alone, with the optional s_corr: Δp_i = (1/ρ_0) Σ_j (λ_i + λ_j + s_corr) ∇W(p_i − p_j),
// added to dp; λ_j is lambda[j].
inline void density_correction(const ConstraintParams& c, const Real* p, const Real* lambda, std::uint32_t i,
                               const std::uint32_t* begin, const std::uint32_t* end, Real* dp) {
  ConstraintParams no_contacts = c;
  no_contacts.contact_distance = 0;
  pair_corrections(no_contacts, p, lambda, 1, i, begin, end, dp);
}

}  // namespace nendo::pbd
