#pragma once
// The interface between nendo and its Gmsh plugin, libnendo_gmsh.so (io/gmsh/GmshPlugin.cpp),
// which io/GmshMesh.cpp loads the first time a run reads or meshes a tetrahedral mesh: Gmsh and
// the 70-odd libraries it links (OpenCASCADE, FLTK, ...) would otherwise be mapped and searched at
// the start of every process, most of which never mesh anything.
#include <string>

#include "core/TetMesh.hpp"

namespace nendo {

struct GmshFunctions {
  TetMesh (*read)(const std::string& path);
  void (*write)(const TetMesh& mesh, const std::string& path, double version, bool binary);
  TetMesh (*cylinder)(const Vec3& base, int axis, Real radius, Real height, Real size);
  TetMesh (*sphere)(const Vec3& center, Real radius, Real size);
};

}  // namespace nendo

extern "C" {
const nendo::GmshFunctions* nendo_gmsh_functions();
}
