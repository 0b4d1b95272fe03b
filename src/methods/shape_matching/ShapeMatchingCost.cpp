// The shape_matching method's cost model (methods/MethodCost.hpp): measured in docs/performance.md
// "Sizing a job" on 1, 2 and 4 ranks. Each rank sets up only its share of a body and the halo copies
// carry only what a step reads (issue 34); the part that does not fall with the rank count
// (`replicated`) is what a least-squares fit of the three peaks finds (the set-up's lattice layers
// either side of a share, the first distribution's messages, the halo's step arrays), not a copy
// of the mesh; with it, `exchange` fits as nothing.
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
      count = file_mesh_count(body.path);
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
  cost.distributed.per_particle = 937;
  cost.exchange.per_particle = 0;
  cost.replicated.per_particle = 148;
  cost.rate = 1.05e6;
  cost.rate_source = "a 100^3 box, rotation: matched";
  return cost;
}

[[maybe_unused]] const bool registered =
    (register_method_cost("shape_matching", shape_matching_cost()), true);

}  // namespace
}  // namespace nendo
