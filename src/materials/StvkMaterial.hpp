#pragma once
// The fem method's material model `stvk` (spec 004 §3, §7): the linear law on Green strain, S = D e,
// isotropic from E and nu, plus an optional fibre term k_f v vᵀ along (fibre_x, fibre_y, fibre_z)
// (Fig. 3's anisotropic beam).
#include <Eigen/Core>

#include "core/Types.hpp"
#include "scene/MaterialSchema.hpp"
#include "scene/Scene.hpp"

namespace nendo::fem {

// D, symmetric, in the Voigt order of engineering strain e = (E11, E22, E33, 2E12, 2E13, 2E23).
using Stiffness = Eigen::Matrix<Real, 6, 6>;

inline constexpr const char* kStvkModel = "stvk";

// The isotropic D of Lamé λ, μ; D_iso + k_f v vᵀ for a fibre direction a (spec §7 Fig. 3).
Stiffness isotropic_stiffness(Real lambda, Real mu);
Stiffness fibre_stiffness(Real lambda, Real mu, const Vec3& fibre, Real k_fibre);

// D of a scene material of model stvk.
Stiffness stvk_stiffness(const MaterialSettings& material);
// The longitudinal wave speed sqrt((λ + 2μ + k_f) / ρ), for the explicit step bound (spec §7).
Real stvk_wave_speed(const MaterialSettings& material);
// Its parameters (registered with the MPM models by Materials.cpp).
MaterialModelSchema stvk_schema();

}  // namespace nendo::fem
