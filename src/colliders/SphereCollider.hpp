#pragma once
// A ball, a disc in 2D (scene `colliders: {shape: sphere}`, spec 002 §11.1).
//   inside: false (the default): a solid ball, φ = |x − c| − r.
//   inside: true: material is kept inside the ball, φ = r − |x − c|.
// n = ±(x − c)/|x − c|; at the centre itself, where it has no direction, n = ±e_x.
#include <cmath>

#include "core/Error.hpp"
#include "core/Types.hpp"
#include "scene/Scene.hpp"
#include "scene/ShapeList.hpp"

namespace nendo {

struct SphereCollider {
  static constexpr const char* kName = "sphere";

  // Its keys of a scene's `colliders` item.
  static ShapeKeys<ColliderSettings> scene_keys() {
    return {kName, "a ball (a disc in 2D)",
            SettingsKeys<ColliderSettings>()
                .add(KeySchema::vector("center", "centre").measured_in("m").mandatory(),
                     &ColliderSettings::center)
                .add(KeySchema::real("radius", "radius").measured_in("m").mandatory().above(0),
                     &ColliderSettings::radius)
                .add(KeySchema::boolean("inside", "true: material is kept inside the shape; false: outside"),
                     &ColliderSettings::inside)};
  }

  Vec3 center{};
  Real radius = 0;
  Real sign = 1;  // φ = sign · (|x − c| − r): +1 outside, -1 inside

  static SphereCollider from_settings(const ColliderSettings& settings, int dimension) {
    if (!(settings.radius > 0)) throw Error("sphere collider: radius must be above 0");
    SphereCollider sphere;
    for (int a = 0; a < dimension; ++a) sphere.center[a] = settings.center[a];
    sphere.radius = settings.radius;
    sphere.sign = settings.inside ? -1 : 1;
    return sphere;
  }

  template <int D>
  Real phi(const Real* x) const {
    Real squared = 0;
    for (int a = 0; a < D; ++a) squared += (x[a] - center[a]) * (x[a] - center[a]);
    return sign * (std::sqrt(squared) - radius);
  }

  template <int D>
  void normal(const Real* x, Real* out) const {
    Real squared = 0;
    for (int a = 0; a < D; ++a) {
      out[a] = x[a] - center[a];
      squared += out[a] * out[a];
    }
    if (squared == 0) {
      for (int a = 0; a < D; ++a) out[a] = a == 0 ? sign : 0;
      return;
    }
    const Real scale = sign / std::sqrt(squared);
    for (int a = 0; a < D; ++a) out[a] *= scale;
  }
};

}  // namespace nendo
