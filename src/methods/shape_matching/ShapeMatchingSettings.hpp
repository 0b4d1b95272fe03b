#pragma once
// The shape_matching method's settings (spec 001): its section, its keys of a body (examples,
// groups, held vertices), the example generators' keys, and its registry entry.
#include <string>
#include <vector>

#include "core/Types.hpp"
#include "scene/SceneRegistry.hpp"

namespace nendo {

// Names follow the spec's symbols.
struct ShapeMatchingSettings {
  Real alpha = 0.5;   // stiffness, Eq. (4)
  Real beta = 0.995;  // example strength (return-to-rest blending, §4.3)
  Real damping = 0;   // velocity damping k_d per step (§9 A7; not in the paper)
  std::string rotation =
      "matched";  // matched: polar(A_pq S̃) | Apq: polar(A_pq) (Müller) | A: polar(A_r) (the paper)
  std::string descriptor = "plain";  // plain | frobenius (off-diagonals × √2, §9 A4)
  int max_ring = 32;                 // largest region (a vertex and its 1-ring) the particles hold
};

// A deformed copy of a body's mesh (spec 001 §7.4): a generator applied to the rest mesh, or a mesh
// file with the same vertices in the same order. The generators act along the body's longest axis
// s ∈ [0, ℓ] of its rest bounding box.
struct ExampleSettings {
  std::string type;    // twist | bend | squash | shear | file
  Real angle = 0;      // twist: end-to-end rotation about the axis; shear: slope angle (degrees)
  Real amplitude = 0;  // bend: a of the centre line a sin(2π s/ℓ) (m)
  Real factor = 1;     // squash: length ratio of the part beyond `start`
  Real start = 0.5;    // squash, shear: where along the axis the deformed part begins (fraction of ℓ)
  int direction = 2;   // bend, shear: the axis the centre line moves along
  std::string path;    // file
};

// The keys a shape_matching body adds (body.method_keys.get<ShapeMatchingBody>()).
struct ShapeMatchingBody {
  std::vector<ExampleSettings> examples;
  std::string groups = "global";  // global | per_region | slabs
  int group_slabs = 2;            // slabs: equal slabs of the rest bounding box along group_axis
  int group_axis = 0;
  bool fixed = false;  // vertices inside [fixed_min, fixed_max] at rest are held
  Vec3 fixed_min{}, fixed_max{};
  int initial_example = 0;  // the body starts in this example's shape (0: the rest shape)
};

}  // namespace nendo
