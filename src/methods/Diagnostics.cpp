#include "core/Mpi.hpp"
#include "methods/Method.hpp"

namespace nendo {

GlobalDiagnostics particle_diagnostics(const Space& space) {
  const ParticleSet& ps = space.particles();
  const int d = ps.dimension();
  const Real* v = ps.real("velocity");
  const Real* m = ps.real("mass");
  // [kinetic, px, py, pz, mass, particles]
  Real local[6] = {0, 0, 0, 0, 0, static_cast<Real>(ps.size())};
  for (std::size_t p = 0; p < ps.size(); ++p) {
    Real v2 = 0;
    for (int a = 0; a < d; ++a) {
      v2 += v[d * p + a] * v[d * p + a];
      local[1 + a] += m[p] * v[d * p + a];
    }
    local[0] += 0.5 * m[p] * v2;
    local[4] += m[p];
  }
  Real global[6];
  MPI_Allreduce(local, global, 6, MPI_DOUBLE, MPI_SUM, space.comm());
  GlobalDiagnostics out;
  out.kinetic_energy = global[0];
  out.momentum = {global[1], global[2], global[3]};
  out.mass = global[4];
  out.particles = static_cast<std::uint64_t>(global[5]);
  return out;
}

}  // namespace nendo
