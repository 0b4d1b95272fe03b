#pragma once
// An axis-aligned box (scene `colliders: {shape: box}`, spec 002 §11.1).
//   inside: true (the default): material is kept inside; the walls are the collider. φ is the
//     distance to the nearest wall inside, and minus the Euclidean distance to the box outside.
//   inside: false: a solid box; φ is the exact signed distance of the box (positive outside).
// Either way φ is an exact signed distance, hence 1-Lipschitz, and the two variants are each
// other's negatives. n = ∇φ/|∇φ|: off the box, along the vector from the nearest box point; in
// the box, the normal of the nearest face (ties: the lowest axis, then the lower face).
#include <cmath>

#include "core/Error.hpp"
#include "core/Types.hpp"
#include "scene/Scene.hpp"
#include "scene/ShapeList.hpp"

namespace nendo {

struct BoxCollider {
  static constexpr const char* kName = "box";

  // Its keys of a scene's `colliders` item.
  static ShapeKeys<ColliderSettings> scene_keys() {
    return {kName, "an axis-aligned box",
            SettingsKeys<ColliderSettings>()
                .add(KeySchema::vector("min", "lowest corner").measured_in("m").mandatory(),
                     &ColliderSettings::min)
                .add(KeySchema::vector("max", "highest corner; above min on every axis")
                         .measured_in("m")
                         .mandatory(),
                     &ColliderSettings::max)
                .add(KeySchema::boolean("inside", "true: material is kept inside the shape; false: outside")
                         .defaults_to("true"),
                     &ColliderSettings::inside)
                .check([](const scene::MapReader& box, ColliderSettings&) { scene::check_box(box); })};
  }

  Vec3 min{};
  Vec3 max{};
  Real sign = -1;  // φ = sign · (signed distance of the solid box): -1 inside, +1 outside

  static BoxCollider from_settings(const ColliderSettings& settings, int dimension) {
    BoxCollider box;
    for (int a = 0; a < dimension; ++a) {
      if (!(settings.min[a] < settings.max[a]))
        throw Error("box collider: max must be above min on every axis");
      box.min[a] = settings.min[a];
      box.max[a] = settings.max[a];
    }
    box.sign = settings.inside ? -1 : 1;
    return box;
  }

  template <int D>
  Real phi(const Real* x) const {
    Real outside = 0, deepest = -INFINITY;
    for (int a = 0; a < D; ++a) {
      const Real q = std::fmax(min[a] - x[a], x[a] - max[a]);  // > 0: beyond a face of axis a
      if (q > 0) outside += q * q;
      deepest = std::fmax(deepest, q);
    }
    return sign * (outside > 0 ? std::sqrt(outside) : deepest);
  }

  template <int D>
  void normal(const Real* x, Real* out) const {
    Real outside = 0, deepest = -INFINITY;
    int nearest = 0;
    for (int a = 0; a < D; ++a) {
      const Real below = min[a] - x[a], above = x[a] - max[a];
      const Real q = std::fmax(below, above);
      out[a] = q > 0 ? (above > 0 ? above : -below) : 0;
      outside += out[a] * out[a];
      if (q > deepest) deepest = q, nearest = a;
    }
    if (outside > 0) {
      const Real scale = sign / std::sqrt(outside);
      for (int a = 0; a < D; ++a) out[a] *= scale;
      return;
    }
    out[nearest] = x[nearest] - min[nearest] > max[nearest] - x[nearest] ? sign : -sign;
  }
};

}  // namespace nendo
