#include "scene/MaterialSchema.hpp"

#include <utility>

#include "core/Error.hpp"

namespace nendo {

namespace {

KeySchema youngs_modulus() {
  return KeySchema::real("E", "Young's modulus").measured_in("Pa").mandatory().above(0);
}

KeySchema poisson_ratio() {
  return KeySchema::real("nu", "Poisson's ratio").mandatory().above(-1).below(0.5);
}

KeySchema density() {
  return KeySchema::real("density", "rest density").measured_in("kg/m^3").mandatory().above(0);
}

MaterialModelSchema elastic(std::string name, std::string description) {
  return {std::move(name), std::move(description), {youngs_modulus(), poisson_ratio(), density()}};
}

MaterialModelSchema snow() {
  MaterialModelSchema model =
      elastic("snow", "fixed-corotated elasticity with Stomakhin et al. snow plasticity (spec 002)");
  model.parameters.push_back(KeySchema::real("theta_c",
                                             "critical compression: singular values of F are "
                                             "clamped to at least 1 - theta_c")
                                 .defaults_to("2.5e-2")
                                 .above(0));
  model.parameters.push_back(KeySchema::real("theta_s",
                                             "critical stretch: singular values of F are "
                                             "clamped to at most 1 + theta_s")
                                 .defaults_to("7.5e-3")
                                 .above(0));
  model.parameters.push_back(
      KeySchema::real("hardening", "hardening coefficient xi: the Lame parameters scale by exp(xi (1 - Jp))")
          .defaults_to("10")
          .at_least(0));
  return model;
}

MaterialModelSchema drucker_prager() {
  MaterialModelSchema model = elastic("drucker_prager", "Drucker-Prager elastoplasticity for sand (MPM)");
  model.parameters.push_back(KeySchema::real("friction_angle", "internal friction angle")
                                 .measured_in("degree")
                                 .defaults_to("30")
                                 .at_least(0)
                                 .below(90));
  model.parameters.push_back(
      KeySchema::real("cohesion", "cohesion; 0 is dry sand").measured_in("Pa").defaults_to("0").at_least(0));
  return model;
}

MaterialModelSchema fluid() {
  return {
      "fluid",
      "weakly compressible fluid (Tait equation of state) in MPM",
      {KeySchema::real("bulk", "bulk modulus").measured_in("Pa").mandatory().above(0),
       KeySchema::real("gamma", "Tait exponent").defaults_to("7").at_least(1), density(),
       KeySchema::real("viscosity", "dynamic viscosity").measured_in("Pa s").defaults_to("0").at_least(0)}};
}

std::vector<MaterialModelSchema> built_in_models() {
  return {elastic("linear", "linear elasticity (small strain)"),
          elastic("neo_hookean", "neo-Hookean hyperelasticity"),
          elastic("fixed_corotated", "fixed-corotated hyperelasticity (spec 002)"),
          snow(),
          drucker_prager(),
          fluid()};
}

std::vector<MaterialModelSchema>& registry() {
  static std::vector<MaterialModelSchema> models = built_in_models();
  return models;
}

}  // namespace

void register_material_model(MaterialModelSchema model) {
  if (find_material_model(model.name)) {
    throw Error("material model '" + model.name + "' is already registered");
  }
  for (const KeySchema& parameter : model.parameters) {
    if (parameter.type != ValueType::Real) {
      throw Error("material model '" + model.name + "': parameter '" + parameter.name + "' must be a number");
    }
  }
  registry().push_back(std::move(model));
}

const std::vector<MaterialModelSchema>& material_models() { return registry(); }

const MaterialModelSchema* find_material_model(const std::string& name) {
  for (const MaterialModelSchema& model : registry()) {
    if (model.name == name) return &model;
  }
  return nullptr;
}

std::vector<std::string> material_model_names() {
  std::vector<std::string> names;
  for (const MaterialModelSchema& model : registry()) names.push_back(model.name);
  return names;
}

}  // namespace nendo
