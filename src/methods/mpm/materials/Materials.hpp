#pragma once
// The MPM material models. Adding one = its file (a struct with kName, kPlastic, schema(), a
// constructor from MaterialSettings, psi/P/kirchhoff/project<D>, wave_speed) + one entry below.
#include <variant>

#include "methods/mpm/materials/DruckerPrager.hpp"
#include "methods/mpm/materials/FixedCorotated.hpp"
#include "methods/mpm/materials/Fluid.hpp"
#include "methods/mpm/materials/LinearElastic.hpp"
#include "methods/mpm/materials/NeoHookean.hpp"
#include "methods/mpm/materials/Snow.hpp"
#include "scene/Scene.hpp"

namespace nendo {

using MpmMaterial = std::variant<LinearElastic, NeoHookean, FixedCorotated, Snow, DruckerPrager, Fluid>;

// The model named by settings.model; throws nendo::Error for a name no type in MpmMaterial has.
MpmMaterial make_mpm_material(const MaterialSettings& settings);

// register_material_model(T::schema()) for every T in MpmMaterial, in that order, so that scenes
// may name them (and docs/scene-reference.md lists them). A second call does nothing.
void register_mpm_material_schemas();

}  // namespace nendo
