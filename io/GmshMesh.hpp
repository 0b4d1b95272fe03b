#pragma once
// Tetrahedral meshes through the Gmsh library (Debian libgmsh-dev): reading any mesh file Gmsh
// reads (.msh v2 and v4, and the other formats it imports), writing .msh v4, and meshing analytic
// solids. Gmsh keeps global state: these functions are for one thread, and each initialises and
// finalises it. Errors are nendo::Error naming the file.
#include <string>

#include "core/TetMesh.hpp"

namespace nendo {

// The linear tetrahedra of the file (quadratic ones keep their corners); vertices are the nodes
// the tets use, in increasing node tag order. Tets are reoriented to positive volume.
TetMesh read_gmsh_tet_mesh(const std::string& path);
// `version` is the MSH format: 4.1 (Gmsh's current) or 2.2 (the legacy one many tools write);
// ASCII unless `binary`.
void write_gmsh_tet_mesh(const TetMesh& mesh, const std::string& path, double version = 4.1,
                         bool binary = false);
// A solid cylinder of the given radius and height standing on `base` along axis (0, 1, 2), meshed
// by Gmsh with target edge length `size` (one thread: the mesh is the same on every run).
TetMesh gmsh_cylinder(const Vec3& base, int axis, Real radius, Real height, Real size);
TetMesh gmsh_sphere(const Vec3& center, Real radius, Real size);

}  // namespace nendo
