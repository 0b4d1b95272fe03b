#include "colliders/Collider.hpp"

#include <string>

#include "core/Error.hpp"
#include "scene/SceneRegistry.hpp"

namespace nendo {

namespace {

template <std::size_t I = 0>
ColliderShape make_shape(const ColliderSettings& settings, int dimension) {
  if constexpr (I == std::variant_size_v<ColliderShape>) {
    throw Error("shape '" + settings.shape + "' is not a collider shape");
  } else {
    using Shape = std::variant_alternative_t<I, ColliderShape>;
    if (settings.shape == Shape::kName) return Shape::from_settings(settings, dimension);
    return make_shape<I + 1>(settings, dimension);
  }
}

Boundary parse_boundary(const std::string& name) {
  if (name == "sticky") return Boundary::Sticky;
  if (name == "slip") return Boundary::Slip;
  if (name == "separate") return Boundary::Separate;
  throw Error("boundary '" + name + "' is not one of sticky, slip, separate");
}

// The scene keys of every shape in ColliderShape, registered before main() (the colliders library
// is linked whole: nendo_whole_archive in CMake).
template <class... Shapes>
bool register_shapes(const std::variant<Shapes...>* /*tag*/) {
  (register_collider_shape(Shapes::scene_keys()), ...);
  return true;
}

[[maybe_unused]] const bool registered = register_shapes(static_cast<const ColliderShape*>(nullptr));

}  // namespace

ColliderSet::ColliderSet(const std::vector<ColliderSettings>& settings, int dimension) {
  if (dimension != 2 && dimension != 3)
    throw Error("colliders: dimension " + std::to_string(dimension) + " is not 2 or 3");
  colliders_.reserve(settings.size());
  for (std::size_t i = 0; i < settings.size(); ++i) {
    const ColliderSettings& s = settings[i];
    try {
      if (!(s.friction >= 0)) throw Error("friction must be at least 0");
      colliders_.emplace_back(make_shape(s, dimension), parse_boundary(s.boundary), s.friction, s.velocity);
    } catch (const Error& error) {
      throw Error("colliders[" + std::to_string(i) + "]: " + error.what());
    }
  }
}

}  // namespace nendo
