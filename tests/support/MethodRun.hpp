#pragma once
// Runs a scene's method in-process, as `nendo run` starts it (parse, seed, distribute, initialise),
// then step by step: for tests that look at the particles between steps. The method harnesses
// (MpmRun, SphRun, SmRun) add their gathers and probes to it.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "materials/Materials.hpp"
#include "methods/Method.hpp"
#include "scene/SceneLoader.hpp"

namespace nendo::testing {

struct MethodRun {
  using Factory = std::unique_ptr<Method> (*)(const Scene&);

  Scene scene;
  std::unique_ptr<Method> method;
  std::unique_ptr<Space> space;
  Real time = 0;
  long steps = 0;

  // extra_fields: additional Real particle fields (name, components) added before seeding.
  MethodRun(MPI_Comm comm, const std::string& yaml, const std::vector<std::string>& overrides = {},
            const std::vector<std::pair<std::string, int>>& extra_fields = {}, Factory make = make_method) {
    scene = parse_scene(yaml, "test.yaml", overrides);
    method = make(scene);
    ParticleSet ps = make_particles(*method, scene.dimension);
    for (const auto& [name, components] : extra_fields) ps.add_field(name, FieldType::Real, components);
    method->seed(comm, scene, ps);
    space = std::make_unique<Space>(comm, geometry_of(scene), std::move(ps));
    space->distribute();
    method->initialize(*space);
  }

  void step() { step(*scene.time.dt); }  // at the scene's time.dt
  void step(Real dt) {
    method->advance(*space, time, dt);
    time += dt;
    ++steps;
  }
  void advance(int count) {
    for (int k = 0; k < count; ++k) step();
  }
};

}  // namespace nendo::testing
