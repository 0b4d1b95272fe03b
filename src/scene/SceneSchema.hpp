#pragma once
// Every key of the scene format, in one place: the loader validates against these tables and
// scene_reference_markdown() documents them.
#include <string>
#include <vector>

#include "scene/KeySchema.hpp"

namespace nendo {

// A top-level map with fixed keys: time, grid, output, checkpoint, catalyst, implicit.
struct SectionSchema {
  std::string name;
  std::string description;
  std::vector<KeySchema> keys;
};

struct ShapeSchema {
  std::string name;
  std::string description;
  std::vector<KeySchema> keys;
};

// A top-level list of maps whose `shape` key selects their other keys: bodies, colliders.
struct ShapeListSchema {
  std::string name;
  std::string description;
  std::vector<KeySchema> common_keys;  // `shape` first
  std::vector<ShapeSchema> shapes;

  const ShapeSchema* find_shape(const std::string& shape_name) const;
  std::vector<KeySchema> keys_of(const ShapeSchema& shape) const;
};

// The top level, in reference order; Section and List keys name the schemas below.
const std::vector<KeySchema>& top_level_keys();
const std::vector<SectionSchema>& section_schemas();
const SectionSchema& section_schema(const std::string& name);
const ShapeListSchema& body_schema();
const ShapeListSchema& collider_schema();
const ShapeListSchema& example_schema();  // a shape-matching body's `examples` (`type` selects)
const ShapeListSchema& emitter_schema();  // pbd_powder's particle sources

// materials.<name>.model; its choices are the registered material models.
KeySchema material_model_key();
std::string materials_description();

// The fields output.fields may list.
const std::vector<std::string>& output_field_names();

}  // namespace nendo
