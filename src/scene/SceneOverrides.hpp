#pragma once
// `nendo run --set key.path=value`: changes to the YAML tree made before it is validated.
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "scene/Cursor.hpp"

namespace nendo::scene {

// Sets each key.path to its value (parsed as YAML), creating missing maps on the way; list items
// are named by index and must exist. Records every node it sets in `source`, so that errors in
// them name the option. Keys outside the schema are left for the validator to report.
void apply_overrides(YAML::Node root, const std::vector<std::string>& overrides, SceneSource& source);

}  // namespace nendo::scene
