#pragma once
// The example shapes of a shape-matching body (spec 001 §7.4): the rest mesh's vertices moved by a
// generator, or read from a mesh file with the same vertices and tets. A generator moves each
// vertex by its rest position and the body's rest bounding box alone, so a rank can make the
// examples of its own vertices (generated_example).
#include <vector>

#include "core/TetMesh.hpp"
#include "methods/shape_matching/ShapeMatchingSettings.hpp"

namespace nendo {

// What the generators act along: the rest bounding box's long axis, its start and length, and
// the centre of the cross-sections.
struct ExampleFrame {
  int axis = 0;
  Real start = 0, length = 0;
  Vec3 center{};
};

// The frame of a body whose rest bounding box is [lo, hi].
ExampleFrame example_frame(const Vec3& lo, const Vec3& hi);
// Whether the example is made by a generator (not read from a file).
bool is_generated(const ExampleSettings& example);
// A generator's example at any of the body's rest positions x (x, y, z per vertex).
std::vector<Real> generated_example(const ExampleSettings& example, const ExampleFrame& frame,
                                    std::vector<Real> x);
// Vertex positions (x, y, z per vertex) of the example of the whole rest mesh; throws nendo::Error
// naming the file when a file example does not match the rest mesh.
std::vector<Real> example_shape(const ExampleSettings& example, const TetMesh& rest);

}  // namespace nendo
