// The method registry: one line per method, its scene name and its factory. The scene schema of
// each (its sections, keys of a body, checks and materials) registers itself from its folder's
// <Name>Settings.cpp with the scene loader, which refuses a method without one.
#include <functional>
#include <vector>

#include "bodies/BodySeeder.hpp"
#include "core/Error.hpp"
#include "methods/Method.hpp"
#include "methods/ballistic/Ballistic.hpp"
#include "methods/fem/HierarchicalFem.hpp"
#include "methods/mpm/Mpm.hpp"
#include "methods/pbd_powder/PbdPowder.hpp"
#include "methods/shape_matching/ShapeMatching.hpp"
#include "methods/slave_sph/SlaveSph.hpp"

namespace nendo {

namespace {

using MethodFactory = std::function<std::unique_ptr<Method>(const Scene&)>;

struct MethodEntry {
  const char* name;  // its scene schema's (scene/SceneRegistry.hpp)
  MethodFactory make;
};

template <class M>
std::unique_ptr<Method> make(const Scene& scene) {
  return std::make_unique<M>(scene);
}

// clang-format off
const std::vector<MethodEntry>& methods() {
  static const std::vector<MethodEntry> registry = {
      {"ballistic",      make<Ballistic>},
      {"mpm",            make_mpm},
      {"slave_sph",      make<SlaveSph>},
      {"shape_matching", make<ShapeMatching>},
      {"pbd_powder",     make<PbdPowder>},
      {"fem",            make<HierarchicalFem>},
  };
  return registry;
}
// clang-format on

}  // namespace

BlockGeometry geometry_of(const Scene& scene) {
  BlockGeometry g;
  g.dimension = scene.dimension;
  g.dx = scene.grid.dx;
  g.block = scene.grid.block;
  return g;
}

void Method::seed(MPI_Comm comm, const Scene& scene, ParticleSet& particles) {
  seed_bodies(comm, scene, particles);
}

std::unique_ptr<Method> make_method(const Scene& scene) {
  for (const MethodEntry& method : methods())
    if (method.name == scene.method) return method.make(scene);
  throw Error(scene.source_path + ": method '" + scene.method +
              "' is not implemented in this version of nendo");
}

}  // namespace nendo
