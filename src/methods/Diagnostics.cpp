#include "core/Mpi.hpp"
#include "core/ReproducibleSum.hpp"
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
  // [kinetic, px, py, pz, mass]: reproducible sums, the same bits on any rank count.
  std::vector<std::vector<Real>> terms(5, std::vector<Real>(ps.size(), 0.0));
  for (std::size_t p = 0; p < ps.size(); ++p) {
    const Real m_p = mass(p);
    Real v2 = 0;
    for (int a = 0; a < d; ++a) {
      v2 += v[d * p + a] * v[d * p + a];
      terms[1 + a][p] = m_p * v[d * p + a];
    }
    terms[0][p] = 0.5 * m_p * v2;
    terms[4][p] = m_p;
  }
  const std::vector<Real> sums = reproducible_sums(space.comm(), terms);
  GlobalDiagnostics out;
  out.kinetic_energy = sums[0];
  out.momentum = {sums[1], sums[2], sums[3]};
  out.mass = sums[4];
  out.particles = space.global_particles();
  return out;
}

}  // namespace nendo
