#pragma once
// An infinite cylinder along a coordinate axis (scene `colliders: {shape: cylinder}`, spec 002
// §11.1). The collider schema has no height: colliders are infinite (bodies have a height).
// ρ(x) is the distance from x to the axis line through `center` (the axis component of x − c is
// dropped). In 2D the axis is x or y, the cylinder is the slab |x_other − c_other| ≤ r between two
// lines, and ρ = |x_other − c_other|; a 2D disc is `shape: sphere`.
//   inside: false (the default): a solid cylinder, φ = ρ − r.
//   inside: true: material is kept inside the cylinder, φ = r − ρ.
// n = ±(radial part of x − c)/ρ; on the axis itself, where it has no direction, ±e of the first
// other axis.
#include <cmath>
#include <string>

#include "core/Error.hpp"
#include "core/Types.hpp"
#include "scene/Scene.hpp"
#include "scene/ShapeList.hpp"

namespace nendo {

struct CylinderCollider {
  static constexpr const char* kName = "cylinder";

  // Its keys of a scene's `colliders` item.
  static ShapeKeys<ColliderSettings> scene_keys() {
    return {kName, "an infinite cylinder (in 2D the slab between two lines)",
            SettingsKeys<ColliderSettings>()
                .add(KeySchema::vector("center", "a point on the axis").measured_in("m").mandatory(),
                     &ColliderSettings::center)
                .add(KeySchema::axis("axis", "direction of the cylinder axis; z only in 3D"),
                     &ColliderSettings::axis)
                .add(KeySchema::real("radius", "radius").measured_in("m").mandatory().above(0),
                     &ColliderSettings::radius)
                .add(KeySchema::boolean("inside", "true: material is kept inside the shape; false: outside"),
                     &ColliderSettings::inside)};
  }

  Vec3 center{};
  Real radius = 0;
  int axis = 1;
  Real sign = 1;  // φ = sign · (ρ − r): +1 outside, -1 inside

  static CylinderCollider from_settings(const ColliderSettings& settings, int dimension) {
    if (!(settings.radius > 0)) throw Error("cylinder collider: radius must be above 0");
    if (settings.axis < 0 || settings.axis >= dimension)
      throw Error("cylinder collider: axis " + std::to_string(settings.axis) + " is not one of the " +
                  std::to_string(dimension) + " axes");
    CylinderCollider cylinder;
    for (int a = 0; a < dimension; ++a) cylinder.center[a] = settings.center[a];
    cylinder.radius = settings.radius;
    cylinder.axis = settings.axis;
    cylinder.sign = settings.inside ? -1 : 1;
    return cylinder;
  }

  template <int D>
  Real phi(const Real* x) const {
    Real squared = 0;
    for (int a = 0; a < D; ++a) {
      if (a != axis) squared += (x[a] - center[a]) * (x[a] - center[a]);
    }
    return sign * (std::sqrt(squared) - radius);
  }

  template <int D>
  void normal(const Real* x, Real* out) const {
    Real squared = 0;
    for (int a = 0; a < D; ++a) {
      out[a] = a == axis ? 0 : x[a] - center[a];
      squared += out[a] * out[a];
    }
    if (squared == 0) {
      out[axis == 0 ? 1 : 0] = sign;
      return;
    }
    const Real scale = sign / std::sqrt(squared);
    for (int a = 0; a < D; ++a) out[a] *= scale;
  }
};

}  // namespace nendo
