#pragma once
// The spine's demo method: particles in free flight under gravity (symplectic Euler), no material
// response. It exercises seeding, migration, balance and output until MPM replaces it as the demo.
#include "methods/Method.hpp"

namespace nendo {

class Ballistic final : public Method {
 public:
  explicit Ballistic(const Scene& scene) : gravity_(scene.gravity) {}
  void register_fields(ParticleSet& particles) const override;
  void advance(Space& space, Real t, Real dt) override;
  GlobalDiagnostics diagnostics(const Space& space) const override { return particle_diagnostics(space); }

 private:
  Vec3 gravity_;
};

}  // namespace nendo
