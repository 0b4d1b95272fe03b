#include "methods/fem/StvkMaterial.hpp"

#include <cmath>

#include "methods/mpm/materials/ElasticParameters.hpp"
#include "scene/MaterialSchema.hpp"

namespace nendo::fem {

Stiffness stvk_stiffness(const MaterialSettings& material) {
  const Lame lame = lame_parameters(material);
  const Real k_fibre = material_parameter(material, "fibre_stiffness");
  if (k_fibre == 0) return isotropic_stiffness(lame.lambda, lame.mu);
  const Vec3 fibre = {material_parameter(material, "fibre_x"), material_parameter(material, "fibre_y"),
                      material_parameter(material, "fibre_z")};
  return fibre_stiffness(lame.lambda, lame.mu, fibre, k_fibre);
}

Real stvk_wave_speed(const MaterialSettings& material) {
  const Lame lame = lame_parameters(material);
  const Real modulus = lame.lambda + 2 * lame.mu + material_parameter(material, "fibre_stiffness");
  return std::sqrt(modulus / material_parameter(material, "density"));
}

}  // namespace nendo::fem

namespace nendo {

namespace {

void register_stvk() {
  std::vector<KeySchema> keys = elastic_solid_keys();
  keys.push_back(KeySchema::real("fibre_stiffness",
                                 "k_f of the fibre term k_f v v^T added to the isotropic D (spec 004 Fig. 3; "
                                 "9 E in the paper's reconstruction)")
                     .measured_in("Pa")
                     .defaults_to("0")
                     .at_least(0));
  keys.push_back(KeySchema::real("fibre_x", "fibre direction, x component (normalised)").defaults_to("1"));
  keys.push_back(KeySchema::real("fibre_y", "fibre direction, y component").defaults_to("0"));
  keys.push_back(KeySchema::real("fibre_z", "fibre direction, z component").defaults_to("0"));
  register_material_model({fem::kStvkModel,
                           "St. Venant-Kirchhoff (the fem method's linear law on Green strain), optionally "
                           "fibre-reinforced",
                           std::move(keys)});
}

// Registered before main() (the methods library is linked whole: nendo_whole_archive in CMake).
[[maybe_unused]] const bool registered = (register_stvk(), true);

}  // namespace

}  // namespace nendo
