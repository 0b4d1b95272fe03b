#pragma once
// The fem method's material model `stvk` (spec 004 §3, §7): the linear law on Green strain, S = D e,
// isotropic from E and nu, plus an optional fibre term k_f v vᵀ along (fibre_x, fibre_y, fibre_z)
// (Fig. 3's anisotropic beam).
#include "methods/fem/StvkElement.hpp"
#include "scene/Scene.hpp"

namespace nendo::fem {

inline constexpr const char* kStvkModel = "stvk";

// D of a scene material of model stvk.
Stiffness stvk_stiffness(const MaterialSettings& material);
// The longitudinal wave speed sqrt((λ + 2μ + k_f) / ρ), for the explicit step bound (spec §7).
Real stvk_wave_speed(const MaterialSettings& material);

}  // namespace nendo::fem
