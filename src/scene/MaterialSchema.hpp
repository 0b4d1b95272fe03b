#pragma once
// The registry of material models a scene may name, with their parameters. The registry starts
// empty: the models register their schemas (register_mpm_material_schemas() in
// src/materials/Materials.hpp) before any scene is parsed.
#include <string>
#include <vector>

#include "scene/KeySchema.hpp"

namespace nendo {

struct MaterialModelSchema {
  std::string name;
  std::string description;
  std::vector<KeySchema> parameters;  // every one a number (ValueType::Real)
};

// Throws nendo::Error when the name is taken or a parameter is not a number.
void register_material_model(MaterialModelSchema model);

const std::vector<MaterialModelSchema>& material_models();
const MaterialModelSchema* find_material_model(const std::string& name);
std::vector<std::string> material_model_names();

}  // namespace nendo
