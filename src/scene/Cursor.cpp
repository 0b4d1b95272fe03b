#include "scene/Cursor.hpp"

#include <algorithm>

#include "scene/SceneError.hpp"

namespace nendo::scene {

namespace {

std::string join_key(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string file_and_line(const std::string& file, const YAML::Node& node) {
  const std::string line = line_of(node);
  return line.empty() ? file : file + ":" + line;
}

// A runaway scalar (an unclosed quote swallows the rest of the file) is cut to one readable line.
std::string shortened(const std::string& text) {
  const std::size_t longest = 40;
  const std::size_t end = std::min(text.find('\n'), longest);
  return end < text.size() ? text.substr(0, end) + "..." : text;
}

}  // namespace

std::string SceneSource::option_that_set(const YAML::Node& node) const {
  for (const OverrideOrigin& origin : overrides) {
    if (origin.node.is(node)) return origin.option;
  }
  return "";
}

Cursor Cursor::child(const std::string& key, const YAML::Node& value) const {
  const std::string value_origin = origin.empty() ? source->option_that_set(value) : origin;
  return {source, value, join_key(key_path, key), value_origin};
}

Cursor Cursor::item(std::size_t index) const { return child(std::to_string(index), node[index]); }

std::string Cursor::where() const { return origin.empty() ? file_and_line(source->file, node) : origin; }

void Cursor::fail(const std::string& detail) const { throw SceneError(where(), key_path, detail); }

void Cursor::fail_at_key(const YAML::Node& key, const std::string& detail) const {
  const std::string key_where = origin.empty() ? file_and_line(source->file, key) : origin;
  throw SceneError(key_where, key_path, detail);
}

void Cursor::fail_missing(const std::string& key) const {
  throw SceneError(where(), join_key(key_path, key), "required key is missing");
}

std::vector<MapEntry> map_entries(const Cursor& map) {
  if (!map.node.IsMap()) map.fail("must be a map (got " + describe(map.node) + ")");
  std::vector<MapEntry> entries;
  for (const auto& pair : map.node) {
    if (!pair.first.IsScalar()) map.fail_at_key(pair.first, "keys must be plain names");
    const std::string name = pair.first.Scalar();
    Cursor value = map.child(name, pair.second);
    if (value.origin.empty() && pair.second.IsNull())
      value.origin = file_and_line(map.source->file, pair.first);
    if (const MapEntry* earlier = find_entry(entries, name)) {
      value.fail_at_key(pair.first, "duplicate key (first given on line " + line_of(earlier->key) + ")");
    }
    entries.push_back({name, pair.first, value});
  }
  return entries;
}

const MapEntry* find_entry(const std::vector<MapEntry>& entries, const std::string& name) {
  for (const MapEntry& entry : entries) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return "'" + shortened(node.Scalar()) + "'";
    case YAML::NodeType::Sequence:
      return "a list of " + std::to_string(node.size()) + (node.size() == 1 ? " item" : " items");
    case YAML::NodeType::Map:
      return "a map";
    default:
      return "nothing";
  }
}

std::string line_of(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.line < 0 ? "" : std::to_string(mark.line + 1);
}

}  // namespace nendo::scene
