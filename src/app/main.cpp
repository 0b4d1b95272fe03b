// nendo: the command-line entry point.
//   nendo run SCENE [--steps N] [--set key.path=value ...] [--output DIR]
//   nendo info FILE.h5
//   nendo --version | --help
#include <fmt/format.h>
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <sstream>

#include "app/Simulation.hpp"
#include "core/Error.hpp"
#include "core/Mpi.hpp"
#include "io/ParticleReader.hpp"
#include "methods/Method.hpp"
#include "methods/mpm/materials/Materials.hpp"
#include "scene/SceneLoader.hpp"
#include "solvers/PetscSession.hpp"

#ifndef NENDO_VERSION
#define NENDO_VERSION "unknown"
#endif

namespace {

constexpr int kExitBadInput = 2;
constexpr int kExitFailure = 1;
constexpr int kExitUnstable = 3;  // a particle state became NaN or inf

// Rank 0 reads the file once; every rank parses the same text, so every rank reaches the same
// verdict and only rank 0 needs to say it.
nendo::Scene load_scene_everywhere(MPI_Comm comm, const std::string& path,
                                   const std::vector<std::string>& sets) {
  std::string text;
  int readable = 1;
  if (nendo::mpi::rank(comm) == 0) {
    std::ifstream in(path);
    std::ostringstream buffer;
    buffer << in.rdbuf();
    readable = in.good() || in.eof() ? 1 : 0;
    if (!in.is_open()) readable = 0;
    text = buffer.str();
  }
  MPI_Bcast(&readable, 1, MPI_INT, 0, comm);
  if (!readable) throw nendo::SceneError(path, "", "cannot read the scene file");
  unsigned long size = text.size();
  MPI_Bcast(&size, 1, MPI_UNSIGNED_LONG, 0, comm);
  text.resize(size);
  MPI_Bcast(text.data(), static_cast<int>(size), MPI_CHAR, 0, comm);
  return nendo::parse_scene(text, path, sets);
}

void print_info(const std::string& path) {
  const nendo::ParticleFileInfo info = nendo::ParticleReader::describe(path);
  fmt::print("{}: particle file, {}D, {} particles, time {:.17g}, step {}\n", path, info.dimension,
             info.count, info.time, info.step);
  for (const auto& f : info.fields)
    fmt::print("  /particles/{:<12} {:<6} x {}\n", f.name, nendo::field_type_name(f.type), f.components);
}

}  // namespace

int main(int argc, char** argv) {
  nendo::PetscSession petsc(&argc, &argv);
  nendo::register_mpm_material_schemas();  // the material models a scene may name
  const MPI_Comm comm = MPI_COMM_WORLD;
  const bool root = nendo::mpi::rank(comm) == 0;

  CLI::App app{"nendo: distributed solver for elastic, plastic and granular matter"};
  app.set_version_flag(
      "--version", std::string("nendo ") + NENDO_VERSION + " (PETSc " + nendo::PetscSession::version() + ")");
  app.require_subcommand(1);
  std::string scene_path;
  std::vector<std::string> sets;
  nendo::RunOptions options;
  CLI::App* run = app.add_subcommand("run", "run a scene");
  run->add_option("scene", scene_path, "scene file (YAML)")->required();
  run->add_option("--steps", options.max_steps, "stop after this many steps");
  run->add_option("--set", sets, "override a scene key, e.g. --set time.end=0.5 --set grid.dx=0.02");
  run->add_option("--output", options.output_dir, "output directory (replaces output.dir)");
  run->allow_extras();  // PETSc options (-ksp_type ...) are PETSc's
  std::string info_path;
  CLI::App* info = app.add_subcommand("info", "describe an output or checkpoint file");
  info->add_option("file", info_path, "HDF5 file written by nendo")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = root ? app.exit(e) : (e.get_exit_code() == 0 ? 0 : kExitBadInput);
    return code == 0 ? 0 : kExitBadInput;
  }

  if (info->parsed()) {
    try {
      if (root) print_info(info_path);
      return 0;
    } catch (const std::exception& e) {
      if (root) fmt::print(stderr, "nendo: error: {}\n", e.what());
      return kExitBadInput;
    }
  }

  try {
    const nendo::Scene scene = load_scene_everywhere(comm, scene_path, sets);
    const nendo::RunSummary s = nendo::run_simulation(comm, scene, options);
    if (root)
      fmt::print("nendo: {} steps to t = {:.6g} in {:.2f} s ({:.3e} particle-steps/s), {} outputs\n", s.steps,
                 s.time, s.wall_seconds,
                 s.wall_seconds > 0 ? static_cast<double>(s.particles) * s.steps / s.wall_seconds : 0.0,
                 s.outputs);
  } catch (const nendo::SceneError& e) {
    if (root) fmt::print(stderr, "nendo: error: {}\n", e.what());
    return kExitBadInput;
  } catch (const nendo::ParticleStateError& e) {  // collective: every rank stops cleanly
    if (root) fmt::print(stderr, "nendo: error: {}\n", e.what());
    return kExitUnstable;
  } catch (const std::exception& e) {
    fmt::print(stderr, "nendo: error on rank {}: {}\n", nendo::mpi::rank(comm), e.what());
    MPI_Abort(comm, kExitFailure);
  }
  return 0;
}
