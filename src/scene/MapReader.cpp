#include "scene/MapReader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <utility>

#include "scene/SceneError.hpp"

namespace nendo::scene {

namespace {

bool contains(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> previous(b.size() + 1);
  std::vector<std::size_t> current(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

// The known name a typo most likely meant, or "" when none is close.
std::string closest_name(const std::string& typo, const std::vector<std::string>& names) {
  std::string closest;
  std::size_t closest_distance = std::numeric_limits<std::size_t>::max();
  for (const std::string& name : names) {
    const std::size_t distance = edit_distance(typo, name);
    const bool close = distance <= 2 && 2 * distance < std::max(typo.size(), name.size());
    if (close && distance < closest_distance) {
      closest = name;
      closest_distance = distance;
    }
  }
  return closest;
}

std::string unknown_key_detail(const std::string& name, const std::vector<KeySchema>& keys) {
  const std::vector<std::string> names = key_names(keys);
  const std::string closest = closest_name(name, names);
  if (!closest.empty()) return "unknown key (did you mean '" + closest + "'?)";
  return "unknown key (known keys: " + join(names, ", ") + ")";
}

std::string choice_requirement(const std::vector<std::string>& choices) {
  if (choices.size() == 1) return "must be " + choices.front();
  return "must be one of " + join(choices, ", ");
}

std::vector<std::string> axis_names(int dimension) {
  if (dimension == 2) return {"x", "y", "0", "1"};
  return {"x", "y", "z", "0", "1", "2"};
}

[[noreturn]] void fail_type(const Cursor& value, const std::string& expected) {
  value.fail("must be " + expected + " (got " + describe(value.node) + ")");
}

void check_bounds(const Cursor& value, const KeySchema& key, double number) {
  if (const auto bound = broken_bound(key, number)) {
    value.fail("must be " + *bound + " (got " + value.node.Scalar() + ")");
  }
}

void check_real(const Cursor& value, const KeySchema& key) {
  const auto number = value.node.IsScalar() ? parse_real(value.node.Scalar()) : std::nullopt;
  if (!number) fail_type(value, "a number");
  check_bounds(value, key, *number);
}

void check_integer(const Cursor& value, const KeySchema& key) {
  const auto number = value.node.IsScalar() ? parse_integer(value.node.Scalar()) : std::nullopt;
  if (!number) fail_type(value, "an integer");
  check_bounds(value, key, static_cast<double>(*number));
  if (!key.choices.empty() && !contains(key.choices, std::to_string(*number))) {
    value.fail(choice_requirement(key.choices) + " (got " + value.node.Scalar() + ")");
  }
}

void check_boolean(const Cursor& value) {
  bool flag = false;
  if (!value.node.IsScalar() || !YAML::convert<bool>::decode(value.node, flag))
    fail_type(value, "true or false");
}

void check_text(const Cursor& value) {
  if (!value.node.IsScalar()) fail_type(value, "a string");
}

void check_one_of(const Cursor& value, const std::vector<std::string>& choices) {
  if (!value.node.IsScalar() || !contains(choices, value.node.Scalar())) {
    value.fail(choice_requirement(choices) + " (got " + describe(value.node) + ")");
  }
}

void check_vector(const Cursor& value, const KeySchema& key, int dimension) {
  if (!value.node.IsSequence() || static_cast<int>(value.node.size()) != dimension) {
    fail_type(value, "a list of " + std::to_string(dimension) + " numbers");
  }
  for (std::size_t i = 0; i < value.node.size(); ++i) check_real(value.item(i), key);
}

void check_text_list(const Cursor& value, const KeySchema& key) {
  if (!value.node.IsSequence()) fail_type(value, "a list of strings");
  std::vector<std::string> seen;
  for (std::size_t i = 0; i < value.node.size(); ++i) {
    const Cursor item = value.item(i);
    if (key.choices.empty()) {
      check_text(item);
    } else {
      check_one_of(item, key.choices);
    }
    if (contains(seen, item.node.Scalar())) item.fail("'" + item.node.Scalar() + "' is listed twice");
    seen.push_back(item.node.Scalar());
  }
}

bool is_nested(const KeySchema& key) { return key.type == ValueType::Section || key.type == ValueType::List; }

}  // namespace

void check_value(const Cursor& value, const KeySchema& key, const DimensionSource& dimension) {
  switch (key.type) {
    case ValueType::Integer:
      return check_integer(value, key);
    case ValueType::Real:
      return check_real(value, key);
    case ValueType::Boolean:
      return check_boolean(value);
    case ValueType::Text:
      return check_text(value);
    case ValueType::Choice:
      return check_one_of(value, key.choices);
    case ValueType::Axis:
      return check_one_of(value, axis_names(dimension()));
    case ValueType::Vector:
      return check_vector(value, key, dimension());
    case ValueType::TextList:
      return check_text_list(value, key);
    case ValueType::Section:
      if (!value.node.IsMap()) fail_type(value, "a map");
      return;
    case ValueType::List:
      if (!value.node.IsSequence()) fail_type(value, "a list");
      return;
  }
}

MapReader::MapReader(const Cursor& map, std::vector<KeySchema> keys, const ReadContext& context,
                     const NestedReaders& nested)
    : map_(map), keys_(std::move(keys)), context_(context) {
  const DimensionSource& dimension = context_.dimension;
  for (const MapEntry& entry : map_entries(map_)) {
    const KeySchema* key = find_key(keys_, entry.name);
    if (!key) entry.value.fail_at_key(entry.key, unknown_key_detail(entry.name, keys_));
    check_value(entry.value, *key, dimension);
    if (is_nested(*key)) nested.at(key->name)(entry.value);
    given_.emplace(entry.name, entry.value);
  }
  for (const KeySchema& key : keys_) {
    if (given_.count(key.name)) continue;
    if (key.required) map_.fail_missing(key.name);
    if (is_nested(key)) {
      Cursor defaulted = map_.child(key.name, YAML::Load(key.default_value));
      defaulted.origin = map_.where();
      nested.at(key.name)(defaulted);
    }
  }
}

bool MapReader::has(const std::string& name) const {
  key(name);
  return given_.count(name) > 0;
}

Real MapReader::real(const std::string& name) const { return *parse_real(value(name).Scalar()); }

int MapReader::integer(const std::string& name) const {
  return static_cast<int>(*parse_integer(value(name).Scalar()));
}

bool MapReader::boolean(const std::string& name) const { return value(name).as<bool>(); }

std::string MapReader::text(const std::string& name) const { return value(name).Scalar(); }

Vec3 MapReader::vector(const std::string& name) const {
  const YAML::Node node = value(name);
  Vec3 vector{};
  if (node.IsScalar()) {
    std::fill_n(vector.begin(), context_.dimension(), *parse_real(node.Scalar()));
    return vector;
  }
  for (std::size_t i = 0; i < node.size(); ++i) vector[i] = *parse_real(node[i].Scalar());
  return vector;
}

int MapReader::axis(const std::string& name) const {
  const std::string axis = value(name).Scalar();
  if (axis == "x" || axis == "0") return 0;
  if (axis == "y" || axis == "1") return 1;
  return 2;
}

std::vector<std::string> MapReader::texts(const std::string& name) const {
  std::vector<std::string> texts;
  for (const auto& item : value(name)) texts.push_back(item.Scalar());
  return texts;
}

std::string MapReader::material(const std::string& name) const {
  context_.material(*this, name);
  return text(name);
}

std::optional<Real> MapReader::optional_real(const std::string& name) const {
  if (!has(name) && key(name).default_value.empty()) return std::nullopt;
  return real(name);
}

std::optional<int> MapReader::optional_integer(const std::string& name) const {
  if (!has(name) && key(name).default_value.empty()) return std::nullopt;
  return integer(name);
}

const Cursor& MapReader::cursor(const std::string& name) const {
  const auto given = given_.find(name);
  if (given == given_.end()) throw std::logic_error("scene key '" + name + "' was not given");
  return given->second;
}

void MapReader::fail(const std::string& name, const std::string& detail) const {
  const auto given = given_.find(name);
  if (given != given_.end()) given->second.fail(detail);
  map_.child(name, map_.node).fail(detail);
}

const KeySchema& MapReader::key(const std::string& name) const {
  const KeySchema* key = find_key(keys_, name);
  if (!key) throw std::logic_error("'" + name + "' is not a key of scene map '" + map_.key_path + "'");
  return *key;
}

YAML::Node MapReader::value(const std::string& name) const {
  const auto given = given_.find(name);
  if (given != given_.end()) return given->second.node;
  const KeySchema& schema = key(name);
  if (schema.default_value.empty()) throw std::logic_error("scene key '" + name + "' has no default");
  return YAML::Load(schema.default_value);
}

std::string existing_file(const Cursor& value) {
  std::filesystem::path path = value.node.Scalar();
  if (path.is_relative()) path = std::filesystem::path(value.source->file).parent_path() / path;
  path = path.lexically_normal();
  std::error_code error;
  if (!std::filesystem::exists(path, error)) value.fail("file not found: '" + path.string() + "'");
  return path.string();
}

namespace {

// from_chars takes no leading '+'; YAML numbers may have one.
const char* number_start(const std::string& text) {
  const bool plus = text.size() > 1 && text[0] == '+' && text[1] != '-';
  return text.data() + (plus ? 1 : 0);
}

}  // namespace

std::optional<Real> parse_real(const std::string& text) {
  const char* first = number_start(text);
  const char* last = text.data() + text.size();
  Real number = 0;
  const auto [end, error] = std::from_chars(first, last, number);
  if (error != std::errc() || end != last || first == last || !std::isfinite(number)) return std::nullopt;
  return number;
}

std::optional<long long> parse_integer(const std::string& text) {
  const char* first = number_start(text);
  const char* last = text.data() + text.size();
  long long number = 0;
  const auto [end, error] = std::from_chars(first, last, number);
  if (error != std::errc() || end != last || first == last) return std::nullopt;
  if (number < std::numeric_limits<int>::min() || number > std::numeric_limits<int>::max())
    return std::nullopt;
  return number;
}

}  // namespace nendo::scene
