#include "core/Mpi.hpp"
#include "methods/Method.hpp"

namespace nendo {

GlobalDiagnostics particle_diagnostics(const Space& space) {
  const Real* m = space.particles().real("mass");
  return particle_diagnostics(space, [m](std::size_t p) { return m[p]; });
}

ParticleSet make_particles(const Method& method, int dimension) {
  ParticleSet ps(dimension);
  ps.add_field("velocity", FieldType::Real, dimension);
  ps.add_field("volume", FieldType::Real, 1);
  method.register_fields(ps);
  return ps;
}

GlobalDiagnostics particle_diagnostics(const Space& space, const std::function<Real(std::size_t)>& mass) {
  const ParticleSet& ps = space.particles();
  const int d = ps.dimension();
  const Real* v = ps.real("velocity");
  // [kinetic, px, py, pz, mass, particles]
  Real local[6] = {0, 0, 0, 0, 0, static_cast<Real>(ps.size())};
  for (std::size_t p = 0; p < ps.size(); ++p) {
    const Real m_p = mass(p);
    Real v2 = 0;
    for (int a = 0; a < d; ++a) {
      v2 += v[d * p + a] * v[d * p + a];
      local[1 + a] += m_p * v[d * p + a];
    }
    local[0] += 0.5 * m_p * v2;
    local[4] += m_p;
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
