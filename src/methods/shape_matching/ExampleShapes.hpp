#pragma once
// The example shapes of a shape-matching body (spec 001 §7.4): the rest mesh's vertices moved by a
// generator, or read from a mesh file with the same vertices and tets.
#include <vector>

#include "core/TetMesh.hpp"
#include "methods/shape_matching/ShapeMatchingSettings.hpp"

namespace nendo {

// Vertex positions (x, y, z per vertex) of the example; throws nendo::Error naming the file when a
// file example does not match the rest mesh.
std::vector<Real> example_shape(const ExampleSettings& example, const TetMesh& rest);

}  // namespace nendo
