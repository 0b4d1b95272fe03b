#include "scene/SceneOverrides.hpp"

#include <algorithm>
#include <cctype>

#include "scene/KeySchema.hpp"
#include "scene/SceneError.hpp"

namespace nendo::scene {

namespace {

struct Override {
  std::string option;  // "--set key.path=value"
  std::vector<std::string> keys;
  YAML::Node value;

  std::string path_to(std::size_t depth) const {
    return join(std::vector<std::string>(keys.begin(), keys.begin() + depth + 1), ".");
  }
  [[noreturn]] void fail(std::size_t depth, const std::string& detail) const {
    throw SceneError(option, path_to(depth), detail);
  }
};

std::vector<std::string> split_keys(const std::string& path) {
  std::vector<std::string> keys(1);
  for (const char c : path) {
    if (c == '.') {
      keys.emplace_back();
    } else {
      keys.back() += c;
    }
  }
  return keys;
}

Override parse_override(const std::string& text) {
  Override parsed{"--set " + text, {}, {}};
  const std::size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0)
    throw SceneError(parsed.option, "", "expected key.path=value");
  const std::string path = text.substr(0, equals);
  parsed.keys = split_keys(path);
  if (std::count(parsed.keys.begin(), parsed.keys.end(), "") > 0) {
    throw SceneError(parsed.option, path, "empty key name in the path");
  }
  try {
    parsed.value = YAML::Load(text.substr(equals + 1));
  } catch (const YAML::ParserException& error) {
    throw SceneError(parsed.option, path, "YAML syntax error in the value: " + error.msg);
  }
  return parsed;
}

bool has_key(const YAML::Node& map, const std::string& key) {
  for (const auto& pair : map) {
    if (pair.first.IsScalar() && pair.first.Scalar() == key) return true;
  }
  return false;
}

std::size_t list_index(const YAML::Node& list, const Override& override_, std::size_t depth) {
  const std::string& key = override_.keys[depth];
  const bool digits = std::all_of(key.begin(), key.end(), [](unsigned char c) { return std::isdigit(c); });
  const std::size_t size = list.size();
  if (!digits || key.size() > 9 || std::stoul(key) >= size) {
    override_.fail(depth, "no such list item (the list has " + std::to_string(size) +
                              (size == 1 ? " item)" : " items)"));
  }
  return std::stoul(key);
}

void require_map(const YAML::Node& node, const Override& override_, std::size_t depth) {
  if (node.IsMap() || node.IsNull()) return;
  override_.fail(depth - 1, "is not a map (it holds " + describe(node) + "), so it has no key '" +
                                override_.keys[depth] + "'");
}

YAML::Node step_into(YAML::Node parent, const Override& override_, std::size_t depth, SceneSource& source) {
  if (parent.IsSequence()) return parent[list_index(parent, override_, depth)];
  require_map(parent, override_, depth);
  const std::string& key = override_.keys[depth];
  if (!has_key(parent, key)) {
    const YAML::Node created(YAML::NodeType::Map);
    parent[key] = created;
    source.overrides.push_back({created, override_.option});
  }
  return parent[key];
}

void set_value(YAML::Node parent, const Override& override_, SceneSource& source) {
  const std::size_t depth = override_.keys.size() - 1;
  if (parent.IsSequence()) {
    parent[list_index(parent, override_, depth)] = override_.value;
  } else {
    require_map(parent, override_, depth);
    parent[override_.keys[depth]] = override_.value;
  }
  source.overrides.push_back({override_.value, override_.option});
}

void apply_override(YAML::Node root, const Override& override_, SceneSource& source) {
  YAML::Node parent = root;
  for (std::size_t depth = 0; depth + 1 < override_.keys.size(); ++depth) {
    parent.reset(step_into(parent, override_, depth, source));
  }
  set_value(parent, override_, source);
}

}  // namespace

void apply_overrides(YAML::Node root, const std::vector<std::string>& overrides, SceneSource& source) {
  for (const std::string& text : overrides) apply_override(root, parse_override(text), source);
}

}  // namespace nendo::scene
