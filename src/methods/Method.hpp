#pragma once
// What every method provides to the driver. A method owns its physics; the space, exchanges,
// output and checkpoints are shared. Virtual calls happen once per step, never per particle.
#include <limits>
#include <memory>
#include <string>

#include "decomposition/Space.hpp"
#include "scene/Scene.hpp"

namespace nendo {

// Global sums over all ranks, the columns of diagnostics.csv.
struct GlobalDiagnostics {
  std::uint64_t particles = 0;
  Real kinetic_energy = 0;
  Real elastic_energy = 0;
  Vec3 momentum{0, 0, 0};
  Real mass = 0;
};

class Method {
 public:
  virtual ~Method() = default;
  // Registers the method's particle fields before the bodies are seeded.
  virtual void register_fields(ParticleSet& particles) const = 0;
  // Called once the seeded particles are distributed.
  virtual void initialize(Space& /*space*/) {}
  // The largest stable step for the current state (collective); infinity if unbounded.
  virtual Real stable_dt(const Space& /*space*/) const { return std::numeric_limits<Real>::infinity(); }
  // One step of size dt; particles end migrated to their owners.
  virtual void advance(Space& space, Real dt) = 0;
  virtual GlobalDiagnostics diagnostics(const Space& space) const = 0;
};

// Creates the method the scene names (methods are listed in methods/Methods.cpp).
std::unique_ptr<Method> make_method(const Scene& scene);

// Kinetic energy, momentum and mass from the "velocity" and "mass" fields (collective).
GlobalDiagnostics particle_diagnostics(const Space& space);

}  // namespace nendo
