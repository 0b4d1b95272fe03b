// The shape_matching method's cost model (methods/MethodCost.hpp): measured in docs/performance.md
// "Sizing a job". The set-up meshes each body whole on every rank (ShapeMatchingSetup.cpp), so a
// part of the cost per vertex is held by every rank.
#include "io/GmshMesh.hpp"
#include "methods/MethodCost.hpp"

namespace nendo {
namespace {

ProblemSize shape_matching_size(const Scene& scene) {
  ProblemSize size{0, 0, 0, "vertices", "", ""};
  for (const BodySettings& body : scene.bodies) {
    const Real spacing = scene.grid.dx / body.particles_per_cell;
    MeshCount count;
    if (body.shape == "box") {
      count = box_mesh_count(body, spacing);
    } else if (body.shape == "file") {
      const TetMesh mesh = read_gmsh_tet_mesh(body.path);
      count = {mesh.vertex_count(), mesh.tet_count()};
    } else {
      count = gmsh_mesh_estimate(body, spacing);
      size.estimated = "Gmsh meshes of spheres and cylinders are estimated from their volume";
    }
    size.particles += count.vertices, size.tets += count.tets, size.output_tets += count.tets;
  }
  return size;
}

MethodCost shape_matching_cost() {
  MethodCost cost;
  cost.size = shape_matching_size;
  cost.distributed.per_particle = 691;
  cost.exchange.per_particle = 171;
  cost.replicated.per_particle = 419;
  cost.rate = 1.05e6;
  cost.rate_source = "a 100^3 box, rotation: matched";
  return cost;
}

[[maybe_unused]] const bool registered =
    (register_method_cost("shape_matching", shape_matching_cost()), true);

}  // namespace
}  // namespace nendo
