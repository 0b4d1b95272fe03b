#pragma once
// One declaration per scene key: the keys of one map of the scene (a section, a body shape, a
// collider shape, a method's keys of a body, ...), each bound to the field of the settings struct
// it fills. The loader, the checks, did-you-mean, docs/scene-reference.md and the fuzzer all read
// these declarations.
//
// A key's default is its field's initial value in the settings struct, written once there. A key
// that is mandatory, says what an unset value means (when_unset), or declares a default of its own
// (a shape's default for a field several shapes share) is read as declared.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/Types.hpp"
#include "scene/KeySchema.hpp"
#include "scene/MapReader.hpp"

namespace nendo {

namespace settings_keys {

inline std::string yaml_of(Real value) { return format_number(value); }
inline std::string yaml_of(bool value) { return value ? "true" : "false"; }
inline std::string yaml_of(const std::string& value) { return value.empty() ? "\"\"" : value; }
inline std::string yaml_of(const Vec3& value) {
  if (value[0] == value[1] && value[1] == value[2]) return format_number(value[0]);
  return "[" + format_number(value[0]) + ", " + format_number(value[1]) + ", " + format_number(value[2]) +
         "]";
}
inline std::string yaml_of(const std::vector<std::string>& values) { return "[" + join(values, ", ") + "]"; }

template <class Field>
std::string default_text(const KeySchema& key, const Field& value) {
  if constexpr (std::is_same_v<Field, int> || std::is_same_v<Field, std::uint64_t>) {
    if (key.type == ValueType::Axis) return std::string(1, "xyz"[value]);
    return std::to_string(value);
  } else {
    return yaml_of(value);
  }
}

template <class Field>
void read(const scene::MapReader& map, const KeySchema& key, Field& field) {
  const std::string& name = key.name;
  if constexpr (std::is_same_v<Field, Real>) {
    field = map.real(name);
  } else if constexpr (std::is_same_v<Field, int>) {
    field = key.type == ValueType::Axis ? map.axis(name) : map.integer(name);
  } else if constexpr (std::is_same_v<Field, std::uint64_t>) {
    field = static_cast<std::uint64_t>(map.integer(name));
  } else if constexpr (std::is_same_v<Field, bool>) {
    field = map.boolean(name);
  } else if constexpr (std::is_same_v<Field, std::string>) {
    if (key.names_file) {
      field = scene::existing_file(map.cursor(name));
    } else {
      field = key.names_material ? map.material(name) : map.text(name);
    }
  } else if constexpr (std::is_same_v<Field, Vec3>) {
    field = map.vector(name);
  } else if constexpr (std::is_same_v<Field, std::vector<std::string>>) {
    field = map.texts(name);
  } else if constexpr (std::is_same_v<Field, std::optional<Real>>) {
    field = map.optional_real(name);
  } else if constexpr (std::is_same_v<Field, std::optional<int>>) {
    field = map.optional_integer(name);
  } else if constexpr (std::is_same_v<Field, std::optional<std::vector<std::string>>>) {
    if (map.has(name)) field = map.texts(name);
  } else {
    static_assert(sizeof(Field) == 0, "no scene value type for this field");
  }
}

template <class Field>
constexpr bool is_optional = false;
template <class T>
constexpr bool is_optional<std::optional<T>> = true;

}  // namespace settings_keys

template <class Settings>
class SettingsKeys {
 public:
  using Reader = std::function<void(const scene::MapReader&, Settings&)>;
  using NestedReader = std::function<void(const scene::Cursor&, const scene::ReadContext&, Settings&)>;

  // `key` fills `field`.
  template <class Field>
  SettingsKeys& add(KeySchema key, Field Settings::*field) {
    constexpr bool optional = settings_keys::is_optional<Field>;
    const bool as_declared =
        key.required || !key.unset_note.empty() || !key.default_value.empty() || optional;
    if constexpr (!optional)
      if (!as_declared) key.default_value = settings_keys::default_text(key, Settings{}.*field);
    const bool only_if_given = !key.required && key.default_value.empty() && !optional;
    readers_.push_back([key, field, only_if_given](const scene::MapReader& map, Settings& settings) {
      if (only_if_given && !map.has(key.name)) return;
      settings_keys::read(map, key, settings.*field);
    });
    keys_.push_back(std::move(key));
    return *this;
  }

  // `key` is read by `read` (a choice kept as a flag, a list of files).
  SettingsKeys& add_custom(KeySchema key, Reader read) {
    readers_.push_back(std::move(read));
    keys_.push_back(std::move(key));
    return *this;
  }

  // A Section or List key whose value its own reader reads (a nested list), in document order.
  SettingsKeys& add_nested(KeySchema key, NestedReader read) {
    nested_.emplace(key.name, std::move(read));
    keys_.push_back(std::move(key));
    return *this;
  }

  // A check across the keys of this map, after they are read; it fails through map.fail(key, ...).
  SettingsKeys& check(Reader check) {
    checks_.push_back(std::move(check));
    return *this;
  }

  const std::vector<KeySchema>& keys() const { return keys_; }

  // The readers of the nested keys, filling `settings` (for the MapReader of its map).
  scene::NestedReaders nested(const scene::ReadContext& context, Settings& settings) const {
    scene::NestedReaders readers;
    for (const auto& entry : nested_) {
      const NestedReader& read = entry.second;
      readers.emplace(entry.first, [&read, &context, &settings](const scene::Cursor& value) {
        read(value, context, settings);
      });
    }
    return readers;
  }

  // Fills the keys of `map`, validated against keys() by its MapReader, into `settings`; then checks.
  void read(const scene::MapReader& map, Settings& settings) const {
    for (const Reader& read : readers_) read(map, settings);
    for (const Reader& check : checks_) check(map, settings);
  }

 private:
  std::vector<KeySchema> keys_;
  std::vector<Reader> readers_;
  std::map<std::string, NestedReader> nested_;
  std::vector<Reader> checks_;
};

// Reads a map against `keys` into a new Settings.
template <class Settings>
Settings read_settings(const scene::Cursor& map, const SettingsKeys<Settings>& keys,
                       const scene::ReadContext& context) {
  Settings settings;
  const scene::MapReader reader(map, keys.keys(), context, keys.nested(context, settings));
  keys.read(reader, settings);
  return settings;
}

}  // namespace nendo
