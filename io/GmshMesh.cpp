// The Gmsh functions of GmshMesh.hpp, through the Gmsh plugin (io/gmsh/GmshFunctions.hpp), loaded
// the first time one is called.
#include "io/GmshMesh.hpp"

#include <dlfcn.h>

#include "core/Error.hpp"
#include "io/PluginLibrary.hpp"
#include "io/gmsh/GmshFunctions.hpp"

namespace nendo {
namespace {

const GmshFunctions& gmsh() {
  static const GmshFunctions* functions = [] {
    const PluginLibrary plugin = open_plugin(
        {"NENDO_GMSH_PLUGIN", NENDO_GMSH_PLUGIN_RELATIVE, NENDO_GMSH_PLUGIN_BUILD, NENDO_GMSH_PLUGIN_INSTALL},
        RTLD_NOW | RTLD_LOCAL);
    if (plugin.path.empty())
      throw Error(
          "tetrahedral meshes need nendo's Gmsh plugin libnendo_gmsh.so, which is not installed (or set "
          "NENDO_GMSH_PLUGIN to its path)");
    if (!plugin.handle) throw Error("nendo's Gmsh plugin " + plugin.path + " does not load: " + plugin.error);
    const auto entry =
        reinterpret_cast<decltype(&nendo_gmsh_functions)>(dlsym(plugin.handle, "nendo_gmsh_functions"));
    if (!entry) throw Error(plugin.path + " is not a nendo Gmsh plugin");
    return entry();
  }();
  return *functions;
}

}  // namespace

TetMesh read_gmsh_tet_mesh(const std::string& path) { return gmsh().read(path); }

void write_gmsh_tet_mesh(const TetMesh& mesh, const std::string& path, double version, bool binary) {
  gmsh().write(mesh, path, version, binary);
}

TetMesh gmsh_cylinder(const Vec3& base, int axis, Real radius, Real height, Real size) {
  return gmsh().cylinder(base, axis, radius, height, size);
}

TetMesh gmsh_sphere(const Vec3& center, Real radius, Real size) {
  return gmsh().sphere(center, radius, size);
}

}  // namespace nendo
