#include "materials/ElasticParameters.hpp"

#include "core/Error.hpp"

namespace nendo {

KeySchema youngs_modulus_key() {
  return KeySchema::real("E", "Young's modulus").measured_in("Pa").mandatory().above(0);
}

KeySchema poisson_ratio_key() {
  return KeySchema::real("nu", "Poisson's ratio").mandatory().above(-1).below(0.5);
}

KeySchema density_key() {
  return KeySchema::real("density", "rest density").measured_in("kg/m^3").mandatory().above(0);
}

std::vector<KeySchema> elastic_solid_keys() {
  return {youngs_modulus_key(), poisson_ratio_key(), density_key()};
}

Lame lame_parameters(Real youngs_modulus, Real poisson_ratio) {
  return {youngs_modulus / (2 * (1 + poisson_ratio)),
          youngs_modulus * poisson_ratio / ((1 + poisson_ratio) * (1 - 2 * poisson_ratio))};
}

Lame lame_parameters(const MaterialSettings& settings) {
  return lame_parameters(material_parameter(settings, "E"), material_parameter(settings, "nu"));
}

Real material_parameter(const MaterialSettings& settings, const std::string& key) {
  const auto found = settings.params.find(key);
  if (found == settings.params.end()) {
    throw Error("material model '" + settings.model + "': parameter '" + key + "' is missing");
  }
  return found->second;
}

}  // namespace nendo
