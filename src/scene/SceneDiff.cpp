#include "scene/SceneDiff.hpp"

#include <yaml-cpp/yaml.h>

#include <map>
#include <set>

#include "scene/SceneError.hpp"
#include "scene/SceneOverrides.hpp"

namespace nendo {
namespace {

using Leaves = std::map<std::string, std::string>;

bool changes_physics(const std::string& key) {
  for (const char* free : {"time.end", "output", "checkpoint", "balance", "catalyst", "implicit.monitor"}) {
    const std::string prefix(free);
    if (key == prefix || key.compare(0, prefix.size() + 1, prefix + ".") == 0) return false;
  }
  return true;
}

void flatten(const YAML::Node& node, const std::string& path, Leaves& leaves) {
  const auto child = [&](const std::string& key) { return path.empty() ? key : path + "." + key; };
  if (node.IsMap()) {
    for (const auto& entry : node) flatten(entry.second, child(entry.first.as<std::string>()), leaves);
  } else if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) flatten(node[i], child(std::to_string(i)), leaves);
  } else {
    leaves[path] = node.IsScalar() ? node.Scalar() : "~";
  }
}

Leaves leaves_of(const std::string& text, const std::vector<std::string>& overrides) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& error) {
    throw SceneError("checkpointed scene:" + std::to_string(error.mark.line + 1), "",
                     "YAML syntax error: " + error.msg);
  }
  scene::SceneSource source{"checkpointed scene", {}};
  scene::apply_overrides(root, overrides, source);
  Leaves leaves;
  flatten(root, "", leaves);
  return leaves;
}

bool same_value(const std::string& a, const std::string& b) {
  if (a == b) return true;
  try {
    std::size_t used_a = 0, used_b = 0;
    const double x = std::stod(a, &used_a), y = std::stod(b, &used_b);
    return used_a == a.size() && used_b == b.size() && x == y;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

std::vector<std::string> physics_differences(const std::string& text_a,
                                             const std::vector<std::string>& overrides_a,
                                             const std::string& text_b,
                                             const std::vector<std::string>& overrides_b) {
  const Leaves a = leaves_of(text_a, overrides_a), b = leaves_of(text_b, overrides_b);
  std::set<std::string> keys;
  for (const auto& [key, value] : a) keys.insert(key);
  for (const auto& [key, value] : b) keys.insert(key);
  std::vector<std::string> differing;
  for (const std::string& key : keys) {
    if (!changes_physics(key)) continue;
    const auto in_a = a.find(key), in_b = b.find(key);
    if (in_a == a.end() || in_b == b.end() || !same_value(in_a->second, in_b->second))
      differing.push_back(key);
  }
  return differing;
}

}  // namespace nendo
