#pragma once
// What every rank knows of a fem scene, built once (collectively) from the scene: the level-0
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

// Collective. Meshing errors on rank 0 (Gmsh) stop every rank.
FemModel build_fem_model(MPI_Comm comm, const Scene& scene);
// The same model for some roots' subtrees alone (issue 34): `held_roots` picks this rank's roots
// (increasing) from the level-0 mesh. What a rank holds is bitwise what the whole model holds for
// those tets and nodes; stable_dt is the whole model's (the held roots of all ranks must cover the
// mesh).
FemModel build_fem_model(MPI_Comm comm, const Scene& scene,
                         const std::function<std::vector<Index>(const TetMesh&)>& held_roots);

}  // namespace nendo::fem
