#include "scene/SceneLoader.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>

#include "scene/MapReader.hpp"
#include "scene/MaterialSchema.hpp"
#include "scene/SceneOverrides.hpp"
#include "scene/SceneRegistry.hpp"
#include "scene/SceneSchema.hpp"

namespace nendo {

namespace {

using scene::Cursor;
using scene::DimensionSource;
using scene::MapReader;

YAML::Node parse_yaml(const std::string& text, const std::string& path) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& error) {
    throw SceneError(path + ":" + std::to_string(error.mark.line + 1), "", "YAML syntax error: " + error.msg);
  }
}

void require_scene_map(const YAML::Node& root, const std::string& path) {
  if (root.IsMap()) return;
  const std::string line = scene::line_of(root);
  const std::string where = path + ":" + (line.empty() ? "1" : line);
  if (root.IsNull()) throw SceneError(where, "", "the scene is empty");
  throw SceneError(where, "", "the scene must be a map of keys (got " + scene::describe(root) + ")");
}

std::string joined_with_and(const std::vector<std::string>& names) {
  if (names.size() < 2) return join(names, "");
  return join(std::vector<std::string>(names.begin(), names.end() - 1), ", ") + " and " + names.back();
}

class SceneReader {
 public:
  SceneReader(const scene::SceneSource& source, const YAML::Node& root) : source_(source), root_(root) {}

  Scene read() {
    Scene scene;
    const scene::ReadContext context{
        dimension_source(),
        [this](const MapReader& map, const std::string& key) { check_material_reference(map, key); }};
    scene::NestedReaders nested = {
        {"materials", [&](const Cursor& c) { scene.materials = read_materials(c); }},
        {"bodies", [&](const Cursor& c) { scene.bodies = read_bodies(c, context); }},
        {"colliders",
         [&](const Cursor& c) { scene.colliders = read_shape_list(c, collider_list(), context); }},
    };
    for (const SceneSection& section : spine_sections())
      nested.emplace(section.name, [&](const Cursor& c) { section.read(c, context, scene); });
    for (const SceneSection* section : method_sections())
      nested.emplace(section->name, [&, section](const Cursor& c) { section->read(c, context, scene); });
    for (const auto& [owner, list] : method_lists())
      nested.emplace(list->schema.name, [&, list = list](const Cursor& c) { list->read(c, context, scene); });
    const MapReader top(root(), top_level_keys(), context, nested);
    scene.format = top.integer("nendo");
    scene.method = top.text("method");
    scene.dimension = dimension();
    scene.gravity = top.vector("gravity");
    check_method(top, scene);
    if (!scene.output.every && !scene.output.every_steps) scene.output.every = scene.time.end / 100;
    return scene;
  }

 private:
  Cursor root() const { return {&source_, root_, "", ""}; }

  DimensionSource dimension_source() {
    return [this] { return dimension(); };
  }

  int dimension() {
    if (!dimension_) dimension_ = read_dimension();
    return *dimension_;
  }

  int read_dimension() {
    const Cursor top = root();
    const std::vector<scene::MapEntry> entries = scene::map_entries(top);
    const scene::MapEntry* entry = scene::find_entry(entries, "dimension");
    if (!entry) top.fail_missing("dimension");
    check_value(entry->value, *find_key(top_level_keys(), "dimension"), dimension_source());
    return static_cast<int>(*scene::parse_integer(entry->value.node.Scalar()));
  }

  // The scene's method as written, once the top level has checked it; nullptr before.
  const MethodSchema* method() const {
    const YAML::Node method = root_["method"];
    return method && method.IsScalar() ? find_method(method.Scalar()) : nullptr;
  }

  // The method's own checks, after the whole scene is read and before anything is allocated.
  void check_method(const MapReader& top, const Scene& scene) {
    const MethodSchema& method = *find_method(scene.method);
    const std::vector<int>& dimensions = method.dimensions;
    if (std::find(dimensions.begin(), dimensions.end(), scene.dimension) == dimensions.end())
      top.fail("dimension", method.name + " is three-dimensional (" + method.dimension_note + ")");
    for (const auto& [owner, list] : method_lists())
      if (owner != &method && !list->empty(scene))
        top.fail(list->schema.name, "are a " + owner->name + " feature");
    if (scene.bodies.empty() && !method.bodies_optional) top.fail("bodies", "must list at least one body");
    const SceneCheck check{scene, top};
    for (const SceneSection& section : spine_sections())
      if (section.check) section.check(check);
    for (const SceneSection* section : method_sections())
      if (section->check) section->check(check);
    if (method.check) method.check(check);
  }

  std::map<std::string, MaterialSettings> read_materials(const Cursor& map) {
    std::map<std::string, MaterialSettings> materials;
    for (const scene::MapEntry& entry : scene::map_entries(map)) {
      materials.emplace(entry.name, read_material(entry.value));
    }
    return materials;
  }

  MaterialSettings read_material(const Cursor& map) {
    const KeySchema model_key = material_model_key();
    const MaterialModelSchema& model =
        *find_material_model(scene::selector(map, model_key, dimension_source()));
    std::vector<KeySchema> keys = {model_key};
    keys.insert(keys.end(), model.parameters.begin(), model.parameters.end());
    const MapReader material(map, keys, {dimension_source(), {}});
    MaterialSettings settings;
    settings.model = model.name;
    for (const KeySchema& parameter : model.parameters) {
      settings.params[parameter.name] = material.real(parameter.name);
    }
    return settings;
  }

  std::vector<BodySettings> read_bodies(const Cursor& list, const scene::ReadContext& context) {
    const MethodSchema* owner = method();
    if (!owner) return {};  // the top level reports the method
    std::vector<BodySettings> bodies;
    for (std::size_t i = 0; i < list.node.size(); ++i) {
      const Cursor map = list.item(i);
      refuse_other_methods_keys(map, *owner);
      const ExtraKeys<BodySettings>* keys =
          owner->body.read ? &owner->body : nullptr;  // none: the spine's only
      bodies.push_back(read_shape_item(map, body_list(), context, keys));
    }
    return bodies;
  }

  // A key another method adds to bodies is named as such, not as an unknown key.
  void refuse_other_methods_keys(const Cursor& map, const MethodSchema& owner) {
    if (!map.node.IsMap()) return;  // the list's reader reports it
    for (const scene::MapEntry& entry : scene::map_entries(map)) {
      if (find_key(body_list().common.keys(), entry.name) || find_key(owner.body.keys, entry.name)) continue;
      std::vector<std::string> methods;
      for (const MethodSchema& method : registered_methods())
        if (find_key(method.body.keys, entry.name)) methods.push_back(method.name);
      if (!methods.empty()) entry.value.fail("is a key of " + joined_with_and(methods) + " bodies only");
    }
  }

  std::vector<std::string> material_names() const {
    std::vector<std::string> names;
    for (const auto& pair : root_) {
      if (pair.first.Scalar() != "materials" || !pair.second.IsMap()) continue;
      for (const auto& material : pair.second) names.push_back(material.first.Scalar());
    }
    return names;
  }

  // `key` of `map` names a material the scene defines, of a model the scene's method takes.
  void check_material_reference(const MapReader& map, const std::string& key) const {
    const std::string name = map.text(key);
    const std::vector<std::string> names = material_names();
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      const std::string known = names.empty() ? "no materials are defined" : "defined: " + join(names, ", ");
      map.fail(key, "unknown material '" + name + "' (" + known + ")");
    }
    const YAML::Node model = root_["materials"][name]["model"];
    const MethodSchema* owner = method();
    if (!model || !model.IsScalar() || !owner) return;  // reported where the material or method is read
    check_model_fits_method(map, key, name, model.Scalar(), *owner);
  }

  // A method that lists its materials takes those only; the others take every model no method lists.
  static void check_model_fits_method(const MapReader& map, const std::string& key, const std::string& name,
                                      const std::string& model, const MethodSchema& owner) {
    const auto listed = [&](const MethodSchema& method) {
      return std::find(method.materials.begin(), method.materials.end(), model) != method.materials.end();
    };
    if (!owner.materials.empty()) {
      if (listed(owner)) return;
      map.fail(key, "material '" + name + "' is " + model + "; the " + owner.name +
                        " method's materials are model " + join(owner.materials, ", "));
    }
    for (const MethodSchema& method : registered_methods())
      if (listed(method))
        map.fail(key,
                 "material '" + name + "' is " + model + ", a material of the " + method.name + " method");
  }

  const scene::SceneSource& source_;
  YAML::Node root_;
  std::optional<int> dimension_;
};

}  // namespace

Scene parse_scene(const std::string& text, const std::string& path,
                  const std::vector<std::string>& overrides) {
  YAML::Node root = parse_yaml(text, path);
  require_scene_map(root, path);
  scene::SceneSource source{path, {}};
  scene::apply_overrides(root, overrides, source);
  Scene scene = SceneReader(source, root).read();
  scene.source_path = path;
  scene.source_text = text;
  scene.overrides = overrides;
  return scene;
}

Scene load_scene(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw SceneError(path, "", "cannot open the scene file");
  std::ostringstream text;
  text << file.rdbuf();
  return parse_scene(text.str(), path, overrides);
}

std::string scene_location(const Scene& scene, const std::string& key_path) {
  for (auto o = scene.overrides.rbegin(); o != scene.overrides.rend(); ++o) {  // the last --set wins
    const std::string key = o->substr(0, o->find('='));
    if (key_path == key || key_path.rfind(key + ".", 0) == 0) return "--set " + *o;
  }
  YAML::Node node;
  try {
    node = YAML::Load(scene.source_text);
  } catch (const YAML::Exception&) {
    return scene.source_path;
  }
  std::istringstream parts(key_path);
  for (std::string part; std::getline(parts, part, '.');) {
    const YAML::Node& map = node;  // const: a missing key must not be created
    const YAML::Node child = map.IsMap() ? map[part] : YAML::Node();
    if (!child) return scene.source_path;
    node.reset(child);
  }
  const std::string line = scene::line_of(node);
  return line.empty() ? scene.source_path : scene.source_path + ":" + line;
}

std::string scene_as_run(const Scene& scene) {
  YAML::Node root = parse_yaml(scene.source_text, scene.source_path);
  scene::SceneSource source{scene.source_path, {}};
  scene::apply_overrides(root, scene.overrides, source);
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

}  // namespace nendo
