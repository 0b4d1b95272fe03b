#include "scene/SceneRegistry.hpp"

#include <algorithm>
#include <utility>

#include "core/Error.hpp"

namespace nendo {

namespace {

std::vector<MethodSchema>& methods() {
  static std::vector<MethodSchema> registered;
  return registered;
}

std::vector<ShapeKeys<ColliderSettings>>& colliders() {
  static std::vector<ShapeKeys<ColliderSettings>> registered;
  return registered;
}

// The cursor of the key at `path`, or of the deepest map on the way and the rest of the path.
// (Recursive: assigning a YAML::Node would rewrite the tree it points into.)
std::pair<scene::Cursor, std::string> walk(const scene::Cursor& at, const std::string& path) {
  if (path.empty()) return {at, ""};
  const std::size_t dot = path.find('.');
  const std::string part = path.substr(0, dot);
  const std::string rest = dot == std::string::npos ? "" : path.substr(dot + 1);
  if (at.node.IsSequence()) {
    const bool index = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    if (index && std::stoul(part) < at.node.size()) return walk(at.item(std::stoul(part)), rest);
  } else if (at.node.IsMap()) {
    const std::vector<scene::MapEntry> entries = scene::map_entries(at);
    if (const scene::MapEntry* entry = scene::find_entry(entries, part)) return walk(entry->value, rest);
  }
  return {at, path};
}

}  // namespace

bool SceneCheck::has(const std::string& path) const { return walk(top.map(), path).second.empty(); }

void SceneCheck::fail(const std::string& path, const std::string& detail) const {
  const auto [at, rest] = walk(top.map(), path);
  if (rest.empty()) at.fail(detail);
  at.child(rest, at.node).fail(detail);
}

// Kept in name order: the files register in the order the linker happens to place them.
void register_method(MethodSchema method) {
  if (find_method(method.name)) throw Error("method '" + method.name + "' is already registered");
  std::vector<MethodSchema>& known = methods();
  const auto at = std::find_if(known.begin(), known.end(),
                               [&](const MethodSchema& other) { return other.name > method.name; });
  known.insert(at, std::move(method));
}

const std::vector<MethodSchema>& registered_methods() { return methods(); }

const MethodSchema* find_method(const std::string& name) {
  for (const MethodSchema& method : methods())
    if (method.name == name) return &method;
  return nullptr;
}

std::vector<std::string> method_names() {
  std::vector<std::string> names;
  for (const MethodSchema& method : methods()) names.push_back(method.name);
  return names;
}

std::vector<const SceneSection*> method_sections() {
  std::vector<const SceneSection*> sections;
  for (const MethodSchema& method : methods())
    for (const SceneSection& section : method.sections)
      if (find_method_section(section.name) == &section) sections.push_back(&section);  // a shared one once
  return sections;
}

const SceneSection* find_method_section(const std::string& name) {
  for (const MethodSchema& method : methods())
    for (const SceneSection& section : method.sections)
      if (section.name == name) return &section;
  return nullptr;
}

std::vector<std::pair<const MethodSchema*, const SceneList*>> method_lists() {
  std::vector<std::pair<const MethodSchema*, const SceneList*>> lists;
  for (const MethodSchema& method : methods())
    for (const SceneList& list : method.lists) lists.emplace_back(&method, &list);
  return lists;
}

// In registration order: Collider.cpp registers them all, in the order of ColliderShape.
void register_collider_shape(ShapeKeys<ColliderSettings> shape) {
  for (const ShapeKeys<ColliderSettings>& known : colliders())
    if (known.name == shape.name) throw Error("collider shape '" + shape.name + "' is already registered");
  colliders().push_back(std::move(shape));
}

const std::vector<ShapeKeys<ColliderSettings>>& collider_shapes() { return colliders(); }

}  // namespace nendo
