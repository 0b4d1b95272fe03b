#pragma once
// A half-space (scene `colliders: {shape: plane}`): material stays on the side the normal points
// to. φ(x) = (x − point)·n, exact signed distance; its gradient is n everywhere (spec 002 §11.1).
#include <cmath>
#include <string>

#include "core/Error.hpp"
#include "core/Types.hpp"
#include "scene/Scene.hpp"
#include "scene/ShapeList.hpp"

namespace nendo {

struct PlaneCollider {
  static constexpr const char* kName = "plane";

  // Its keys of a scene's `colliders` item.
  static ShapeKeys<ColliderSettings> scene_keys() {
    return {kName, "a half-space: material stays on the side the normal points to",
            SettingsKeys<ColliderSettings>()
                .add(KeySchema::vector("point", "a point on the plane").measured_in("m").mandatory(),
                     &ColliderSettings::point)
                .add_custom(
                    KeySchema::vector("normal", "outward normal, normalised on load; not zero").mandatory(),
                    [](const scene::MapReader& plane, ColliderSettings& settings) {
                      settings.normal = scene::unit_normal(plane, "normal");
                    })};
  }

  Vec3 point{};
  Vec3 n{};  // unit length over the first D components; the others 0

  static PlaneCollider from_settings(const ColliderSettings& settings, int dimension) {
    PlaneCollider plane;
    Real length = 0;
    for (int a = 0; a < dimension; ++a) length += settings.normal[a] * settings.normal[a];
    length = std::sqrt(length);
    if (length == 0)
      throw Error("plane collider: normal has no component in the first " + std::to_string(dimension) +
                  " axes");
    for (int a = 0; a < dimension; ++a) {
      plane.point[a] = settings.point[a];
      plane.n[a] = settings.normal[a] / length;
    }
    return plane;
  }

  template <int D>
  Real phi(const Real* x) const {
    Real distance = 0;
    for (int a = 0; a < D; ++a) distance += (x[a] - point[a]) * n[a];
    return distance;
  }

  template <int D>
  void normal(const Real* /*x*/, Real* out) const {
    for (int a = 0; a < D; ++a) out[a] = n[a];
  }
};

}  // namespace nendo
