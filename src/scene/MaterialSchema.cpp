#include "scene/MaterialSchema.hpp"

#include <utility>

#include "core/Error.hpp"

namespace nendo {

namespace {

// Empty until the models register themselves: the MPM materials with
// register_mpm_material_schemas() (src/materials/Materials.hpp), each model's keys in
// its own file. Whatever parses scenes calls that first (src/app/main.cpp, the scene tests).
std::vector<MaterialModelSchema>& registry() {
  static std::vector<MaterialModelSchema> models;
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
