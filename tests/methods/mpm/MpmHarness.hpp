#pragma once
// Runs an MPM scene in-process (support/MethodRun.hpp) with the MPM step, for tests that need the
// particle state between steps.
#include <iterator>
#include <memory>
#include <string>

#include "core/Mpi.hpp"
#include "methods/mpm/Mpm.hpp"
#include "support/MethodRun.hpp"

namespace nendo::testing {

struct MpmRun : MethodRun {
  // extra_fields: e.g. {"body_force", d} for the optional external acceleration the MPM step reads.
  MpmRun(MPI_Comm comm, const std::string& yaml, const std::vector<std::string>& overrides = {},
         const std::vector<std::pair<std::string, int>>& extra_fields = {})
      : MethodRun(comm, yaml, overrides, extra_fields, make_mpm) {}

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
