// nendo inside another program, through the installed CMake package (README.md beside this file).
//
//   embed run SCENE.yaml OUTPUT_DIR   runs a scene as `nendo run` does: output, checkpoints, balance
//   embed drive                       builds a scene in code and steps its method by hand, reading
//                                     the global diagnostics after every step
#include <fmt/format.h>
#include <mpi.h>

#include <cstring>

#include "app/Simulation.hpp"
#include "core/Error.hpp"
#include "core/Mpi.hpp"
#include "decomposition/Space.hpp"
#include "materials/Materials.hpp"
#include "materials/StvkMaterial.hpp"
#include "methods/Method.hpp"
#include "scene/SceneLoader.hpp"
#include "solvers/PetscSession.hpp"

namespace {

// A jelly cube in free fall: no collider touches it, so every particle keeps v = g t exactly.
constexpr const char* kFallingCube = R"(nendo: 1
method: mpm
dimension: 3
gravity: [0, -9.81, 0]
time: {end: 0.02, dt: 1.0e-3}
grid: {dx: 0.05}
materials:
  jelly: {model: fixed_corotated, E: 1.0e4, nu: 0.3, density: 1000}
bodies:
  - {shape: box, min: [0.2, 0.5, 0.2], max: [0.5, 0.8, 0.5], material: jelly, particles_per_cell: 2}
)";

int run(MPI_Comm comm, const char* scene_path, const char* output) {
  nendo::RunOptions options;
  options.output_dir = output;
  const nendo::RunSummary s = nendo::run_simulation(comm, nendo::load_scene(scene_path), options);
  if (nendo::mpi::rank(comm) == 0)
    fmt::print("ran {} steps to t = {:.6g}: {} particles, {} outputs in {}\n", s.steps, s.time, s.particles,
               s.outputs, output);
  return 0;
}

// The pieces run_simulation puts together, by hand: method, particles, space, steps.
int drive(MPI_Comm comm) {
  const nendo::Scene scene = nendo::parse_scene(kFallingCube, "embedded falling cube", {});
  std::unique_ptr<nendo::Method> method = nendo::make_method(scene);
  nendo::ParticleSet particles = nendo::make_particles(*method, scene.dimension);
  method->seed(comm, scene, particles);
  nendo::Space space(comm, nendo::geometry_of(scene), std::move(particles));
  space.distribute();
  method->initialize(space);
  const double dt = *scene.time.dt;
  double t = 0;
  for (int step = 1; step <= 20; ++step) {
    method->advance(space, t, dt);
    t = step * dt;
    const nendo::GlobalDiagnostics d = method->diagnostics(space);
    if (nendo::mpi::rank(comm) == 0)
      fmt::print("step {:2d} t {:.3f} particles {} mean velocity {:.17g} expected {:.17g}\n", step, t,
                 d.particles, d.momentum[1] / d.mass, scene.gravity[1] * t);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  nendo::PetscSession petsc(&argc, &argv);  // initialises MPI too
  try {
    if (argc == 4 && std::strcmp(argv[1], "run") == 0) return run(MPI_COMM_WORLD, argv[2], argv[3]);
    if (argc == 2 && std::strcmp(argv[1], "drive") == 0) return drive(MPI_COMM_WORLD);
    fmt::print(stderr, "usage: embed run SCENE.yaml OUTPUT_DIR | embed drive\n");
    return 2;
  } catch (const nendo::Error& e) {
    fmt::print(stderr, "embed: error: {}\n", e.what());
    return 1;
  }
}
