#pragma once
// A list of maps whose first key selects the other keys: bodies and colliders by `shape`, a
// shape-matching body's examples by `type`, powder emitters by `shape`. Each shape declares its
// keys once, bound to the fields of the list's item struct.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "scene/SettingsKeys.hpp"

namespace nendo {

// A shape of a list, for validation and the reference.
struct ShapeSchema {
  std::string name;
  std::string description;
  std::vector<KeySchema> keys;
};

// A list's keys, for validation and the reference.
struct ShapeListSchema {
  std::string name;
  std::string description;
  std::vector<KeySchema> common_keys;  // the selector first
  std::vector<ShapeSchema> shapes;

  const ShapeSchema* find_shape(const std::string& shape_name) const;
  std::vector<KeySchema> keys_of(const ShapeSchema& shape) const;
};

template <class Item>
struct ShapeKeys {
  std::string name;
  std::string description;
  SettingsKeys<Item> keys;
};

template <class Item>
struct ShapeList {
  std::string name;
  std::string description;
  SettingsKeys<Item> common;  // the selector first, a choice bound to the item's name of its shape
  std::vector<ShapeKeys<Item>> shapes;

  const ShapeKeys<Item>* find(const std::string& shape_name) const {
    for (const ShapeKeys<Item>& shape : shapes)
      if (shape.name == shape_name) return &shape;
    return nullptr;
  }

  ShapeListSchema schema() const {
    ShapeListSchema schema{name, description, common.keys(), {}};
    for (const ShapeKeys<Item>& shape : shapes)
      schema.shapes.push_back({shape.name, shape.description, shape.keys.keys()});
    return schema;
  }
};

template <class Item>
std::vector<std::string> shape_names(const std::vector<ShapeKeys<Item>>& shapes) {
  std::vector<std::string> names;
  for (const ShapeKeys<Item>& shape : shapes) names.push_back(shape.name);
  return names;
}

namespace scene {

// The value of the key that selects a map's other keys (a material's model, a body's shape),
// checked against that key.
std::string selector(const Cursor& map, const KeySchema& key, const DimensionSource& dimension);

// Fails unless the map's max is above its min on every axis (box shapes).
void check_box(const MapReader& box);

// The vector of `key`, normalised; fails on the zero vector.
Vec3 unit_normal(const MapReader& plane, const std::string& key);

}  // namespace scene

// Keys an item of a list takes besides its shape's: a method's keys of a body, filled into what
// the item holds for that method.
template <class Item>
struct ExtraKeys {
  std::vector<KeySchema> keys;
  std::function<scene::NestedReaders(const scene::ReadContext&, Item&)> nested;
  std::function<void(const scene::MapReader&, Item&)> read;
};

// One item of `list`: its common keys, those of its shape and the `extra` keys.
template <class Item>
Item read_shape_item(const scene::Cursor& map, const ShapeList<Item>& list, const scene::ReadContext& context,
                     const ExtraKeys<Item>* extra = nullptr) {
  const ShapeKeys<Item>& shape =
      *list.find(scene::selector(map, list.common.keys().front(), context.dimension));
  std::vector<KeySchema> keys = list.common.keys();
  keys.insert(keys.end(), shape.keys.keys().begin(), shape.keys.keys().end());
  Item item;
  scene::NestedReaders nested = list.common.nested(context, item);
  nested.merge(shape.keys.nested(context, item));
  if (extra) {
    keys.insert(keys.end(), extra->keys.begin(), extra->keys.end());
    nested.merge(extra->nested(context, item));
  }
  const scene::MapReader reader(map, keys, context, nested);
  list.common.read(reader, item);
  shape.keys.read(reader, item);
  if (extra) extra->read(reader, item);
  return item;
}

template <class Item>
std::vector<Item> read_shape_list(const scene::Cursor& list, const ShapeList<Item>& shapes,
                                  const scene::ReadContext& context) {
  std::vector<Item> items;
  for (std::size_t i = 0; i < list.node.size(); ++i)
    items.push_back(read_shape_item(list.item(i), shapes, context));
  return items;
}

}  // namespace nendo
