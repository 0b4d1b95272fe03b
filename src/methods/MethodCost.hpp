#pragma once
// What a scene costs before anything is allocated: how many particles (nodes, tets) its method
// will hold, and what each costs in memory and time on this machine (measured, docs/performance.md
// "Sizing a job"). Each method registers its model beside its schema (<Name>Cost.cpp); `nendo plan`
// and the start-up fit check of `nendo run` (app/Plan.hpp) read it.
#include <cstdint>
#include <functional>
#include <string>

#include "scene/Scene.hpp"

namespace nendo {

// A scene's size for its method, at the largest the run holds (pbd_powder: every emitter done).
struct ProblemSize {
  std::uint64_t particles = 0;    // what the method's particles are: vertices, nodes, masters + slaves
  std::uint64_t tets = 0;         // mesh methods: all tetrahedra held (FEM: every level)
  std::uint64_t output_tets = 0;  // tetrahedra an output file lists at most (FEM: the finest level)
  std::string what;               // "particles", "vertices", "nodes", "masters + slaves"
  std::string detail;             // a breakdown, "" for none
  std::string estimated;          // "" when counted exactly, else why it is an estimate
};

// Bytes per rank = baseline + replicated + (distributed + exchange if ranks > 1) / ranks, each
// term a cost per particle and per tet. `replicated` is what every rank holds whole (a set-up that
// builds the whole mesh on every rank); `exchange` what more than one rank adds at the peak (the
// first distribution's send and receive buffers, halos).
struct MemoryCost {
  double per_particle = 0;
  double per_tet = 0;
};

struct MethodCost {
  std::function<ProblemSize(const Scene&)> size;  // counts, allocating nothing of the problem's size
  double baseline_bytes = 47 * 1048576.0;         // one process before any particle (MPI, PETSc, HDF5)
  MemoryCost distributed;                         // held once over all ranks
  MemoryCost replicated;                          // held by every rank
  MemoryCost exchange;                            // on more than one rank, shared like `distributed`
  double rate = 0;  // work units per second on one core (particle-steps/s unless work_per_step says)
  // Work units of one step per particle (pbd_powder: substeps x iterations); unset: 1.
  std::function<double(const Scene&)> work_per_step;
  std::string rate_source;  // where the rate was measured ("docs/performance.md, 1 M particles")
};

// Throws nendo::Error for a name taken twice.
void register_method_cost(const std::string& method, MethodCost cost);
// nullptr for a method without a cost model.
const MethodCost* find_method_cost(const std::string& method);

// The particles the body seeder makes of the scene's bodies (a point file's: its count), at cell
// `dx` with `particles_per_cell` per axis (0: each body's own).
std::uint64_t count_seeded_particles(const Scene& scene, Real dx, int particles_per_cell = 0);
// The size of a method whose particles are the seeded bodies at grid.dx (mpm, ballistic).
ProblemSize seeded_particles_size(const Scene& scene);

// Shared counts: a lattice body's particles (bodies/BodySeeder) and a box's Kuhn mesh.
struct MeshCount {
  std::uint64_t vertices = 0, tets = 0;
};
// The box_tet_mesh of a box body at `spacing` (bodies/TetMesher.cpp), refined `levels` times by
// red refinement (8 children per tet, vertices on the halved lattice): the finest level's
// vertices and the tets of all levels.
MeshCount box_mesh_count(const BodySettings& body, Real spacing, int levels = 0);
// The vertices and tets of a mesh file: an MSH file counted in one streaming pass (a bit per node
// tag, bodies/TetMeshFile.hpp), another format read whole by Gmsh.
MeshCount file_mesh_count(const std::string& path);
// A Gmsh mesh of a sphere or cylinder at target edge `spacing`: an estimate from its volume.
MeshCount gmsh_mesh_estimate(const BodySettings& body, Real spacing, int levels = 0);

}  // namespace nendo
