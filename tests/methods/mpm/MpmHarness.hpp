#pragma once
// Runs an MPM scene in-process: parse, seed, distribute, initialise, step. For tests that need
// the particle state between steps.
#include <iterator>
#include <memory>
#include <string>

#include "bodies/BodySeeder.hpp"
#include "core/Mpi.hpp"
#include "methods/mpm/Mpm.hpp"
#include "methods/mpm/materials/Materials.hpp"
#include "scene/SceneLoader.hpp"

namespace nendo::testing {

struct MpmRun {
  Scene scene;
  std::unique_ptr<Method> method;
  std::unique_ptr<Space> space;
  Real time = 0;
  long steps = 0;

  // extra_fields: additional Real particle fields (name, components) added before seeding, e.g.
  // {"body_force", d} for the optional external acceleration the MPM step reads.
  MpmRun(MPI_Comm comm, const std::string& yaml, const std::vector<std::string>& overrides = {},
         const std::vector<std::pair<std::string, int>>& extra_fields = {}) {
    register_mpm_material_schemas();
    scene = parse_scene(yaml, "test.yaml", overrides);
    method = std::make_unique<Mpm>(scene);
    ParticleSet ps = make_particles(*method, scene.dimension);
    for (const auto& [name, components] : extra_fields) ps.add_field(name, FieldType::Real, components);
    seed_bodies(comm, scene, ps);
    BlockGeometry g;
    g.dimension = scene.dimension;
    g.dx = scene.grid.dx;
    g.block = scene.grid.block;
    space = std::make_unique<Space>(comm, g, std::move(ps));
    space->distribute();
    method->initialize(*space);
  }

  void step(Real dt) {
    method->advance(*space, time, dt);
    time += dt;
    ++steps;
  }
  ParticleSet& particles() { return space->particles(); }
  // Mass of local particle p: ρ V⁰ of its material (MPM particles carry no mass field).
  Real mass(std::size_t p) {
    ParticleSet& ps = particles();
    const int material = ps.has_field("material") ? ps.int32("material")[p] : 0;
    return std::next(scene.materials.begin(), material)->second.params.at("density") * ps.real("volume")[p];
  }
  // Collective: kinetic, elastic energy, momentum, mass over all ranks.
  GlobalDiagnostics diagnostics() const { return method->diagnostics(*space); }
};

}  // namespace nendo::testing
