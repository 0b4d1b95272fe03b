// The fem method's cost model (methods/MethodCost.hpp): measured in docs/performance.md "Sizing a
// job" on 1, 2 and 4 ranks (the 1.18 M-tet slab, re-fitted after the finest corners were derived
// and GAMG's products made all at once; still within 4 % after each rank built only its own
// model). The fit's `replicated` takes what falls more slowly than 1/ranks (a rank's model holds
// the roots around its nodes and some rings beyond, tets at rank boundaries on both sides, PETSc);
// the nodes, their halo and the solver's matrices fall with the rank count.
#include "methods/MethodCost.hpp"
#include "methods/fem/FemSettings.hpp"

namespace nendo {
namespace {

ProblemSize fem_size(const Scene& scene) {
  const FemSettings& fem = scene.sections.get<FemSettings>();
  ProblemSize size{0, 0, 0, "nodes", "", ""};
  std::uint64_t level0 = 0;
  for (const BodySettings& body : scene.bodies) {
    MeshCount count, coarsest;
    if (body.shape == "box") {
      count = box_mesh_count(body, fem.spacing, fem.max_level), coarsest = box_mesh_count(body, fem.spacing);
    } else if (body.shape == "file") {  // the file's level 0, refined as a box lattice would be
      coarsest = file_mesh_count(body.path);
      count = {coarsest.vertices << (3 * fem.max_level), 0};
      for (int l = 0; l <= fem.max_level; ++l) count.tets += coarsest.tets << (3 * l);
      size.estimated = "the refined levels of a mesh file are estimated from its level 0";
    } else {
      count = gmsh_mesh_estimate(body, fem.spacing, fem.max_level);
      coarsest = gmsh_mesh_estimate(body, fem.spacing);
      size.estimated = "Gmsh meshes are estimated from their volume";
    }
    level0 += coarsest.tets;
    size.particles += count.vertices, size.tets += count.tets;
    size.output_tets += coarsest.tets << (3 * fem.max_level);
  }
  size.detail =
      std::to_string(level0) + " level-0 tets, " + std::to_string(fem.max_level) + " levels of refinement";
  return size;
}

MethodCost fem_cost() {
  MethodCost cost;
  cost.size = fem_size;
  cost.distributed.per_tet = 786;  // the nodes' share included (about one node per 6 tets)
  cost.exchange.per_tet = 18;
  cost.replicated.per_tet = 122;
  cost.rate = 1.0e6;
  cost.rate_source = "the uniform level-3 cantilever";
  return cost;
}

[[maybe_unused]] const bool registered = (register_method_cost("fem", fem_cost()), true);

}  // namespace
}  // namespace nendo
