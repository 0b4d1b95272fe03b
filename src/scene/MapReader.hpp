#pragma once
// Validation of one scene map against its keys, and typed access to the validated values.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/Types.hpp"
#include "scene/Cursor.hpp"
#include "scene/KeySchema.hpp"

namespace nendo::scene {

class MapReader;

// The scene's dimension, asked for only when a vector or an axis is checked.
using DimensionSource = std::function<int()>;
// Fails unless map's key names a material the scene defines, of a model the scene's method takes.
using MaterialCheck = std::function<void(const MapReader& map, const std::string& key)>;

// What reading a map needs from the scene around it.
struct ReadContext {
  DimensionSource dimension;
  MaterialCheck material;
};

// Reads the map or list under a Section or List key.
using NestedReaders = std::map<std::string, std::function<void(const Cursor&)>>;

// Fails with the first problem of `value` against `key`.
void check_value(const Cursor& value, const KeySchema& key, const DimensionSource& dimension);

// The path a file key gives, from the scene file's directory, normalised; fails unless it exists.
std::string existing_file(const Cursor& value);

class MapReader {
 public:
  // Walks the map in document order: unknown key, wrong type or out-of-bounds value; then missing
  // required keys. Section and List values go to `nested`, which also reads absent ones as their default.
  MapReader(const Cursor& map, std::vector<KeySchema> keys, const ReadContext& context,
            const NestedReaders& nested = {});

  bool has(const std::string& name) const;  // given in the scene, not defaulted
  Real real(const std::string& name) const;
  int integer(const std::string& name) const;
  bool boolean(const std::string& name) const;
  std::string text(const std::string& name) const;
  Vec3 vector(const std::string& name) const;
  int axis(const std::string& name) const;
  std::vector<std::string> texts(const std::string& name) const;
  std::string material(const std::string& name) const;  // a key naming a material (KeySchema::material_name)
  std::optional<Real> optional_real(const std::string& name) const;
  std::optional<int> optional_integer(const std::string& name) const;

  const Cursor& map() const { return map_; }
  const ReadContext& context() const { return context_; }
  const Cursor& cursor(const std::string& name) const;  // of a key given in the scene
  [[noreturn]] void fail(const std::string& name, const std::string& detail) const;

 private:
  const KeySchema& key(const std::string& name) const;
  YAML::Node value(const std::string& name) const;

  Cursor map_;
  std::vector<KeySchema> keys_;
  ReadContext context_;
  std::map<std::string, Cursor> given_;
};

// Numbers as YAML scalars write them; nothing unless the whole text is a finite number.
std::optional<Real> parse_real(const std::string& text);
std::optional<long long> parse_integer(const std::string& text);

}  // namespace nendo::scene
