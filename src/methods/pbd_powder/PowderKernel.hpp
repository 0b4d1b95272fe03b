#pragma once
// The SPH kernels of position based fluids (Müller, Charypar, Gross 2003; spec 003 §3.2): Poly6 for
// the density, the Spiky gradient for the corrections, in 3D and (with their 2D normalisations) 2D.
// Mass is implicit (m = 1, spec Eq. 2), so densities are in kernel units.
#include <cmath>

#include "core/Types.hpp"

namespace nendo::pbd {

class PowderKernel {
 public:
  PowderKernel(Real h, int dimension) : h_(h), h2_(h * h) {
    const Real pi = M_PI;
    // ∫ W = 1 over the ball (disc) of radius h.
    poly6_ = dimension == 3 ? 315 / (64 * pi * std::pow(h, 9)) : 4 / (pi * std::pow(h, 8));
    spiky_ = dimension == 3 ? -45 / (pi * std::pow(h, 6)) : -30 / (pi * std::pow(h, 5));
  }

  Real h() const { return h_; }
  Real h2() const { return h2_; }
  // W_poly6 at squared distance r2 < h².
  Real w(Real r2) const {
    const Real q = h2_ - r2;
    return poly6_ * q * q * q;
  }
  // W_spiky(|r|), whose gradient is below (tests).
  Real spiky(Real r) const {
    const Real q = r < h_ ? h_ - r : 0;
    return -spiky_ / 3 * q * q * q;
  }
  // ∇W_spiky(r) = factor(|r|) r for 0 < |r| < h; 0 at r = 0.
  Real gradient_factor(Real r) const {
    if (r <= 0) return 0;
    const Real q = h_ - r;
    return spiky_ * q * q / r;
  }

 private:
  Real h_, h2_, poly6_, spiky_;
};

// The packed-lattice reference values of spec 003 §5 for spacing Δx and this kernel: ρ_0 (Eq. 2 at
// an interior site of the simple cubic (square) lattice), the mean neighbour distance d̄_0 inside h
// and D_0, the denominator of Eq. (4) there.
struct LatticeReference {
  Real rest_density = 0;   // ρ_0
  Real mean_distance = 0;  // d̄_0
  Real denominator = 0;    // D_0
  Real surface = 0;  // |Σ_j |∇W_ij| (x_i − x_j)| of a site on a flat top (the lattice's y ≤ 0 half)
};

inline LatticeReference lattice_reference(const PowderKernel& kernel, Real spacing, int dimension) {
  const int reach = static_cast<int>(std::ceil(kernel.h() / spacing));
  LatticeReference out;
  Real grad[3] = {0, 0, 0}, grad_sq = 0, distance = 0;
  int neighbours = 0;
  out.rest_density = kernel.w(0);
  for (int k = dimension == 3 ? -reach : 0; k <= (dimension == 3 ? reach : 0); ++k)
    for (int j = -reach; j <= reach; ++j)
      for (int i = -reach; i <= reach; ++i) {
        const Real r[3] = {i * spacing, j * spacing, k * spacing};
        const Real r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
        if (r2 == 0 || r2 >= kernel.h2()) continue;
        out.rest_density += kernel.w(r2);
        const Real length = std::sqrt(r2), g = kernel.gradient_factor(length);
        for (int a = 0; a < 3; ++a) grad[a] += g * r[a];
        grad_sq += g * g * r2;
        distance += length, ++neighbours;
        if (j > 0) out.surface += std::fabs(g) * r[1];  // the neighbours below a top site, mirrored
      }
  const Real rho0 = out.rest_density;
  out.mean_distance = neighbours > 0 ? distance / neighbours : spacing;
  out.denominator = (grad[0] * grad[0] + grad[1] * grad[1] + grad[2] * grad[2] + grad_sq) / (rho0 * rho0);
  return out;
}

}  // namespace nendo::pbd
