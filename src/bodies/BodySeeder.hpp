#pragma once
// Turns the scene's bodies into particles on a regular sub-lattice: particles_per_cell points per
// axis in every cell, at sub-cell centres. Each body's bounding lattice is numbered linearly; a
// particle's id is its body's id base plus its lattice index, so ids are globally unique and do
// not depend on the rank count. Rank r of P seeds the lattice indices [rN/P, (r+1)N/P) of each
// body; Space::distribute() then moves particles to their owners.
#include <mpi.h>

#include "decomposition/ParticleSet.hpp"
#include "scene/Scene.hpp"

namespace nendo {

struct SeedResult {
  ParticleId next_id = 0;  // first id no body uses (for emitters and inserted particles)
};

// Appends this rank's share of every body to `particles` (which has the method's fields and
// "velocity", "mass", "volume", "material" registered; "body", the body's index, if registered). Collective
// (file bodies are read with parallel HDF5, each rank a contiguous chunk). A point file's particles get the
// body's id base plus their index in the file; their volume is the file's "volume" field, else (dx/ppc)^d.
SeedResult seed_bodies(MPI_Comm comm, const Scene& scene, ParticleSet& particles);

// How many particles seed_bodies() makes of a lattice body (box, sphere, cylinder) at grid.dx `dx`,
// over all ranks, counted row by row without making them (nendo plan).
std::uint64_t count_lattice_particles(const BodySettings& body, int dimension, Real dx);

// Index of a material in the scene (the "material" particle field), in the scene's key order.
int material_index(const Scene& scene, const std::string& name);

}  // namespace nendo
