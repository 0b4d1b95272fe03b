#pragma once
// What the parts of nendo above scene/ add to the scene format, each from its own files: methods
// (their sections, lists, keys of a body, checks and materials: src/methods/<name>/<Name>Settings.cpp)
// and collider shapes (src/colliders/Collider.cpp); material models are in MaterialSchema.hpp.
// They register before main() runs (a static registration object in a library linked whole:
// CMake's nendo_whole_archive), so the loader, docs/scene-reference.md and the fuzzer see them all.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "scene/Scene.hpp"
#include "scene/ShapeList.hpp"

namespace nendo {

// What a method's whole-scene check sees: the scene as read, and the top-level map to fail on
// (top.fail("grid", ...) names grid's line).
struct SceneCheck {
  const Scene& scene;
  const scene::MapReader& top;

  // Whether the scene gives the key at `path` ("bodies.0.particles_per_cell").
  bool has(const std::string& path) const;
  // Fails naming the key at `path`, at its line (a key left out: the line of its map).
  [[noreturn]] void fail(const std::string& path, const std::string& detail) const;
};

// A top-level map of the scene with fixed keys, read into one settings struct.
struct SceneSection {
  std::string name;
  std::string summary;  // a few words for the top-level table
  std::string description;
  std::vector<KeySchema> keys;
  std::function<void(const scene::Cursor&, const scene::ReadContext&, Scene&)> read;
  std::function<void(const SceneCheck&)> check;  // after the whole scene is read (optional)
};

// A section read into a Settings that store(scene, settings) keeps.
template <class Settings, class Store>
SceneSection settings_section(std::string name, std::string summary, std::string description,
                              SettingsKeys<Settings> keys, Store store) {
  auto shared = std::make_shared<const SettingsKeys<Settings>>(std::move(keys));
  return {std::move(name),
          std::move(summary),
          std::move(description),
          shared->keys(),
          [shared, store](const scene::Cursor& map, const scene::ReadContext& context, Scene& scene) {
            store(scene, read_settings(map, *shared, context));
          },
          {}};
}

// A section a method owns: its settings go to scene.sections, where scene.sections.get<Settings>()
// finds them.
template <class Settings>
SceneSection method_section(std::string name, std::string summary, std::string description,
                            SettingsKeys<Settings> keys) {
  return settings_section(std::move(name), std::move(summary), std::move(description), std::move(keys),
                          [](Scene& scene, Settings settings) { scene.sections.put(std::move(settings)); });
}

// A top-level list a method owns (pbd_powder's emitters); scene.sections.get<std::vector<Item>>().
struct SceneList {
  std::string summary;  // a few words for the top-level table
  ShapeListSchema schema;
  std::function<void(const scene::Cursor&, const scene::ReadContext&, Scene&)> read;
  std::function<bool(const Scene&)> empty;
};

template <class Item>
SceneList method_list(std::string summary, ShapeList<Item> list) {
  auto shared = std::make_shared<const ShapeList<Item>>(std::move(list));
  return {std::move(summary), shared->schema(),
          [shared](const scene::Cursor& items, const scene::ReadContext& context, Scene& scene) {
            scene.sections.put(read_shape_list(items, *shared, context));
          },
          [](const Scene& scene) { return scene.sections.get<std::vector<Item>>().empty(); }};
}

// A method's keys of a body, filled into body.method_keys.get<MethodBody>().
template <class MethodBody>
ExtraKeys<BodySettings> method_body_keys(SettingsKeys<MethodBody> keys) {
  auto shared = std::make_shared<const SettingsKeys<MethodBody>>(std::move(keys));
  return {shared->keys(),
          [shared](const scene::ReadContext& context, BodySettings& body) {
            return shared->nested(context, body.method_keys.put(MethodBody{}));
          },
          [shared](const scene::MapReader& map, BodySettings& body) {
            shared->read(map, body.method_keys.at<MethodBody>());
          }};
}

struct MethodSchema {
  std::string name;  // the scene's `method`
  std::vector<int> dimensions = {2, 3};
  std::string dimension_note;               // why it is not 2D: "... is three-dimensional (<note>)"
  std::vector<SceneSection> sections;       // top-level sections (by name: methods may share one)
  std::vector<SceneList> lists;             // top-level lists only this method's scenes may have
  ExtraKeys<BodySettings> body;             // its keys of a body
  std::vector<ShapeListSchema> body_lists;  // lists among those keys, for the reference (examples)
  // Material models its bodies may name; empty: every model that no method lists.
  std::vector<std::string> materials;
  bool bodies_optional = false;                  // a scene may have no bodies (its lists are sources)
  bool geometric_multigrid = false;              // implicit.preconditioner: multigrid
  std::function<void(const SceneCheck&)> check;  // after the whole scene is read, before any allocation
};

// Throws nendo::Error for a name taken twice.
void register_method(MethodSchema method);
const std::vector<MethodSchema>& registered_methods();
const MethodSchema* find_method(const std::string& name);
std::vector<std::string> method_names();

// Every section of every method, once each, in registration order.
std::vector<const SceneSection*> method_sections();
const SceneSection* find_method_section(const std::string& name);
// Every list of every method, with the method that owns it.
std::vector<std::pair<const MethodSchema*, const SceneList*>> method_lists();

// Collider shapes: their keys, bound to ColliderSettings.
void register_collider_shape(ShapeKeys<ColliderSettings> shape);
const std::vector<ShapeKeys<ColliderSettings>>& collider_shapes();

}  // namespace nendo
