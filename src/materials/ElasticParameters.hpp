#pragma once
// What several MPM materials share: the schema keys E, nu and density (one place per key), the
// Lamé parameters of spec 002 §2.2, and reading a parameter from a scene's MaterialSettings.
#include <string>
#include <vector>

#include "core/Types.hpp"
#include "scene/KeySchema.hpp"
#include "scene/Scene.hpp"

namespace nendo {

KeySchema youngs_modulus_key();
KeySchema poisson_ratio_key();
KeySchema density_key();
// E, nu, density: the parameters of every elastic solid.
std::vector<KeySchema> elastic_solid_keys();

// μ = E / (2(1+ν)), λ = E ν / ((1+ν)(1−2ν)), in 2D and 3D alike (spec 002 §2.2, §13.2 item 18).
struct Lame {
  Real mu = 0;
  Real lambda = 0;
};
Lame lame_parameters(Real youngs_modulus, Real poisson_ratio);
// From the settings' E and nu.
Lame lame_parameters(const MaterialSettings& settings);

// settings.params[key]; throws nendo::Error naming the model and the key when it is absent (the
// scene loader fills defaults, so this means settings built by hand without them).
Real material_parameter(const MaterialSettings& settings, const std::string& key);

}  // namespace nendo
