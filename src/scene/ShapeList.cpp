#include "scene/ShapeList.hpp"

#include <fmt/format.h>

#include <cmath>

namespace nendo {

const ShapeSchema* ShapeListSchema::find_shape(const std::string& shape_name) const {
  for (const ShapeSchema& shape : shapes)
    if (shape.name == shape_name) return &shape;
  return nullptr;
}

std::vector<KeySchema> ShapeListSchema::keys_of(const ShapeSchema& shape) const {
  std::vector<KeySchema> keys = common_keys;
  keys.insert(keys.end(), shape.keys.begin(), shape.keys.end());
  return keys;
}

namespace scene {

std::string selector(const Cursor& map, const KeySchema& key, const DimensionSource& dimension) {
  const std::vector<MapEntry> entries = map_entries(map);
  const MapEntry* entry = find_entry(entries, key.name);
  if (!entry) map.fail_missing(key.name);
  check_value(entry->value, key, dimension);
  return entry->value.node.Scalar();
}

void check_box(const MapReader& box) {
  const Vec3 min = box.vector("min");
  const Vec3 max = box.vector("max");
  for (int axis = 0; axis < box.context().dimension(); ++axis) {
    if (min[axis] < max[axis]) continue;
    box.fail("max", fmt::format("must be greater than min on every axis ({}: min {}, max {})", "xyz"[axis],
                                format_number(min[axis]), format_number(max[axis])));
  }
}

Vec3 unit_normal(const MapReader& plane, const std::string& key) {
  Vec3 normal = plane.vector(key);
  const Real length = std::sqrt(normal[0] * normal[0] + normal[1] * normal[1] + normal[2] * normal[2]);
  if (length == 0) plane.fail(key, "must not be the zero vector");
  for (Real& component : normal) component /= length;
  return normal;
}

}  // namespace scene

}  // namespace nendo
