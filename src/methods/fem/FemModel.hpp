#pragma once
// What a rank holds of a fem scene, built (collectively) from the scene: the level-0
// mesh of all bodies, its hierarchy (whole, or the subtrees of some level-0 tets) (TetHierarchy.hpp), the
// homogenised constants of every tet (Homogenisation.hpp; each distinct value stored once), and which nodes
// are held. Rest shapes are computed where needed (tet_rest_shape), not stored per tet. The model is static;
// the state (positions, velocities, the active set) lives elsewhere.
#include <mpi.h>

#include <functional>
#include <vector>

#include "methods/fem/FemSettings.hpp"
#include "methods/fem/Homogenisation.hpp"
#include "methods/fem/TetHierarchy.hpp"
#include "scene/Scene.hpp"

namespace nendo::fem {

struct FemModel {
  TetHierarchy hierarchy;
  TetConstantsTable constants;          // per tet (finest: the fine material, bounds ±infinity)
  std::vector<std::int32_t> node_body;  // per node: the body it belongs to
  std::vector<std::uint8_t> fixed;      // per node: held at its rest position
  std::vector<Vec3> body_velocity;      // per body: the initial velocity
  Real stable_dt = 0;                   // spec §7: 0.4 min altitude / wave speed over finest tets
};

// All bodies' level-0 meshes in one, meshed (or read) on rank 0 and broadcast, and each level-0
// tet's body. Collective; meshing errors on rank 0 stop every rank.
struct Level0Mesh {
  TetMesh mesh;
  std::vector<std::int32_t> tet_body;
};
Level0Mesh make_level0_mesh(MPI_Comm comm, const Scene& scene);

// Collective. The whole model.
FemModel build_fem_model(MPI_Comm comm, const Scene& scene);
// The same model for some roots' subtrees alone (issue 34): `held_roots` picks this rank's roots
// (increasing) from the level-0 mesh. What a rank holds is bitwise what the whole model holds for
// those tets and nodes; stable_dt is the whole model's (the held roots of all ranks must cover the
// mesh).
FemModel build_fem_model(MPI_Comm comm, const Scene& scene,
                         const std::function<std::vector<Index>(const TetMesh&)>& held_roots);
// What build_fem_model computes besides the hierarchy and the nodes' bodies and holds.
struct FemModelParts {
  bool constants = true;  // the homogenisation (seeding the nodes needs none)
  bool stable_dt = true;  // the smallest finest-tet altitude over all ranks (else stable_dt is 0)
};
// The model of `roots` (increasing level-0 tets) of a level-0 mesh made once.
FemModel build_fem_model(MPI_Comm comm, const Scene& scene, const Level0Mesh& level0,
                         const std::vector<Index>& roots, FemModelParts parts = {});

}  // namespace nendo::fem
