#pragma once
// What every method provides to the driver. A method owns its physics; the space, exchanges,
// output and checkpoints are shared. Virtual calls happen once per step, never per particle.
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/Error.hpp"
#include "core/StageClock.hpp"
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
  // One step from time t to t + dt; particles end migrated to their owners.
  virtual void advance(Space& space, Real t, Real dt) = 0;
  virtual GlobalDiagnostics diagnostics(const Space& space) const = 0;
  // Where the step's time went on this rank (the stages of the method's algorithm), for the
  // end-of-run profile and the benchmarks; empty if the method does not time itself.
  virtual std::vector<StageTime> stage_times() const { return {}; }
};

// A particle whose state became NaN or inf: the run stops with this (the same on every rank).
class ParticleStateError : public Error {
 public:
  ParticleStateError(long step, ParticleId id, const std::string& field)
      : Error("step " + std::to_string(step) + ": particle " + std::to_string(id) + " has a non-finite " +
              field),
        step_(step),
        id_(id),
        field_(field) {}
  long step() const { return step_; }
  ParticleId id() const { return id_; }
  const std::string& field() const { return field_; }

 private:
  long step_;
  ParticleId id_;
  std::string field_;
};

// Creates the method the scene names (methods are listed in methods/Methods.cpp).
std::unique_ptr<Method> make_method(const Scene& scene);

// Kinetic energy, momentum and mass from the "velocity" and "mass" fields (collective).
GlobalDiagnostics particle_diagnostics(const Space& space);

}  // namespace nendo
