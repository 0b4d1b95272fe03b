#pragma once
// A YAML node of a scene together with where it came from, so that every error names the file
// and line (or the --set option) and the dotted key path.
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace nendo::scene {

struct OverrideOrigin {
  YAML::Node node;     // the value an override put in the tree, or a map it created on the way
  std::string option;  // "--set key.path=value"
};

struct SceneSource {
  std::string file;  // as given to the loader
  std::vector<OverrideOrigin> overrides;

  // "--set ..." when an override put `node` in the tree, else "".
  std::string option_that_set(const YAML::Node& node) const;
};

struct Cursor {
  const SceneSource* source = nullptr;
  YAML::Node node;
  std::string key_path;  // "bodies.1.radius"; "" for the whole scene
  // Where the node is when its own line does not say: "--set ..." when an override put it or a
  // parent there, the map of a defaulted key, the key of an empty value; "" otherwise.
  std::string origin;

  Cursor child(const std::string& key, const YAML::Node& value) const;
  Cursor item(std::size_t index) const;

  std::string where() const;  // "scene.yaml:12" or "--set key.path=value"
  [[noreturn]] void fail(const std::string& detail) const;
  [[noreturn]] void fail_at_key(const YAML::Node& key, const std::string& detail) const;
  [[noreturn]] void fail_missing(const std::string& key) const;
};

struct MapEntry {
  std::string name;
  YAML::Node key;
  Cursor value;
};

// The entries of a map in document order; fails unless `map` is a map with distinct plain keys.
std::vector<MapEntry> map_entries(const Cursor& map);
const MapEntry* find_entry(const std::vector<MapEntry>& entries, const std::string& name);

// How an unexpected value reads in an error: "'abc'", "a list of 2 items", "a map", "nothing".
std::string describe(const YAML::Node& node);
std::string line_of(const YAML::Node& node);  // 1-based, "" when the node has no position

}  // namespace nendo::scene
