#pragma once
// The tetrahedral mesh of a scene body, for the mesh methods: a box is a lattice of cubes, each cut
// into the 6 Kuhn tetrahedra around its main diagonal (conforming across cubes); a sphere or a
// cylinder is meshed by Gmsh; a file body is read by Gmsh. Vertex numbering is fixed by the body
// alone (lattice order, or Gmsh's), so ids built from it do not depend on the rank count.
#include "core/TetMesh.hpp"
#include "scene/Scene.hpp"

namespace nendo {

// `spacing` is the target edge length (the lattice spacing of a box, stretched so that the box is
// a whole number of cubes on every axis).
TetMesh body_tet_mesh(const BodySettings& body, Real spacing);
TetMesh box_tet_mesh(const Vec3& min, const Vec3& max, Real spacing);

}  // namespace nendo
