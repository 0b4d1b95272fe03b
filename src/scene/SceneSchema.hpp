#pragma once
// The spine's keys of the scene format: the top level, time, grid, output, checkpoint, balance,
// catalyst, materials and bodies. The methods' sections, lists and keys of a body, and the collider
// shapes, come from the registry (SceneRegistry.hpp); top_level_keys() lists them all.
#include <string>
#include <vector>

#include "scene/KeySchema.hpp"
#include "scene/SceneRegistry.hpp"
#include "scene/ShapeList.hpp"

namespace nendo {

// The top level, in reference order; Section and List keys name the schemas below.
std::vector<KeySchema> top_level_keys();

// time, grid, output, checkpoint, balance, catalyst: read into the Scene's own members.
const std::vector<SceneSection>& spine_sections();
// A spine section or a method's section; nullptr for neither.
const SceneSection* find_section(const std::string& name);

const ShapeList<BodySettings>& body_list();
ShapeList<ColliderSettings> collider_list();  // the registered collider shapes

// materials.<name>.model; its choices are the registered material models.
KeySchema material_model_key();
std::string materials_description();

// The fields output.fields may list.
const std::vector<std::string>& output_field_names();

}  // namespace nendo
