// The method registry: one line per method.
#include <functional>
#include <map>

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

using MethodFactory = std::function<std::unique_ptr<Method>(const Scene&)>;

static const std::map<std::string, MethodFactory>& methods() {
  static const std::map<std::string, MethodFactory> registry = {
      {"ballistic", [](const Scene& s) { return std::make_unique<Ballistic>(s); }},
      {"mpm", make_mpm},
      {"slave_sph", [](const Scene& s) { return std::make_unique<SlaveSph>(s); }},
      {"shape_matching", [](const Scene& s) { return std::make_unique<ShapeMatching>(s); }},
      {"pbd_powder", [](const Scene& s) { return std::make_unique<PbdPowder>(s); }},
      {"fem", [](const Scene& s) { return std::make_unique<HierarchicalFem>(s); }},
  };
  return registry;
}

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
  auto it = methods().find(scene.method);
  if (it == methods().end())
    throw Error(scene.source_path + ": method '" + scene.method +
                "' is not implemented in this version of nendo");
  return it->second(scene);
}

}  // namespace nendo
