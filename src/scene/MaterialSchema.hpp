#pragma once
// The registry of material models a scene may name, with their parameters. The models register
// themselves before main() (src/materials/Materials.cpp), each model's keys in its own file.
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
