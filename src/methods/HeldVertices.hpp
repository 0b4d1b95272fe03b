#pragma once
// The keys fixed_min and fixed_max of a mesh body (shape_matching, fem): vertices inside the box
// at rest are held. Body is a method's struct of body keys with members fixed, fixed_min, fixed_max.
#include "scene/SettingsKeys.hpp"

namespace nendo {

template <class Body>
SettingsKeys<Body>& add_held_vertex_keys(SettingsKeys<Body>& keys) {
  return keys
      .add(KeySchema::vector("fixed_min", "lowest corner of the box of held vertices")
               .measured_in("m")
               .when_unset("no vertex is held"),
           &Body::fixed_min)
      .add(KeySchema::vector("fixed_max", "highest corner of the box of held vertices")
               .measured_in("m")
               .when_unset("no vertex is held"),
           &Body::fixed_max)
      .check([](const scene::MapReader& body, Body& settings) {
        if (body.has("fixed_min") != body.has("fixed_max"))
          body.fail(body.has("fixed_min") ? "fixed_min" : "fixed_max",
                    "needs fixed_min and fixed_max together");
        settings.fixed = body.has("fixed_min");
        for (int a = 0; a < 3 && settings.fixed; ++a)
          if (settings.fixed_max[a] < settings.fixed_min[a])
            body.fail("fixed_max", "must not be below fixed_min on any axis");
      });
}

}  // namespace nendo
