#include "methods/ballistic/Ballistic.hpp"

namespace nendo {

void Ballistic::register_fields(ParticleSet& particles) const {
  particles.add_field("velocity", FieldType::Real, particles.dimension());
  particles.add_field("mass", FieldType::Real, 1);
  particles.add_field("material", FieldType::Int32, 1);
}

void Ballistic::advance(Space& space, Real /*t*/, Real dt) {
  ParticleSet& ps = space.particles();
  const int d = ps.dimension();
  Real* x = ps.positions();
  Real* v = ps.real("velocity");
  for (std::size_t p = 0; p < ps.size(); ++p)
    for (int a = 0; a < d; ++a) {
      v[d * p + a] += dt * gravity_[a];
      x[d * p + a] += dt * v[d * p + a];
    }
  space.migrate();
}

}  // namespace nendo
