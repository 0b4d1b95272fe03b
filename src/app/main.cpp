// nendo: the command-line entry point.
//   nendo run SCENE [--steps N] [--set key.path=value ...] [--output DIR]
//                   [--restart latest|FILE] [--allow-scene-change] [--walltime SECONDS|HH:MM:SS]
//                   [--catalyst SCRIPT.py ...]
//   nendo info FILE.h5|CHECKPOINT_DIR [--finished]
//   nendo --version | --help
#include <fmt/format.h>
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/Restart.hpp"
#include "app/Simulation.hpp"
#include "core/Error.hpp"
#include "core/Mpi.hpp"
#include "io/Checkpoint.hpp"
#include "io/Hdf5File.hpp"
#include "io/InSitu.hpp"
#include "io/ParticleReader.hpp"
#include "methods/Method.hpp"
#include "methods/fem/StvkMaterial.hpp"
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
  nendo::mpi::broadcast(text, 0, comm);
  return nendo::parse_scene(text, path, sets);
}

// Seconds from "3600", "90.5", "1:00:00" or "2-00:00:00" (Slurm's forms).
double parse_walltime(const std::string& text) {
  std::string rest = text;
  double days = 0;
  if (const auto dash = rest.find('-'); dash != std::string::npos) {
    days = std::stod(rest.substr(0, dash));
    rest = rest.substr(dash + 1);
  }
  double seconds = 0;
  std::size_t start = 0;
  for (;;) {
    const std::size_t colon = rest.find(':', start);
    std::size_t used = 0;
    const std::string part =
        rest.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    const double value = std::stod(part, &used);
    if (used != part.size() || value < 0) throw std::invalid_argument(text);
    seconds = seconds * 60 + value;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return days * 86400 + seconds;
}

void print_particle_fields(const nendo::ParticleFileInfo& info) {
  for (const auto& f : info.fields)
    fmt::print("  /particles/{:<12} {:<6} x {}\n", f.name, nendo::field_type_name(f.type), f.components);
}

// The newest checkpoint of a directory that reads back whole (checksums included), or the file.
std::string good_checkpoint(const std::string& path) {
  if (!std::filesystem::exists(path)) throw nendo::Error(path + ": no such file or directory");
  if (!std::filesystem::is_directory(path)) return path;
  for (const std::string& candidate : nendo::list_checkpoints(path)) {
    try {
      nendo::read_checkpoint_meta(MPI_COMM_SELF, candidate);
      nendo::read_checkpoint_particles(MPI_COMM_SELF, candidate);
      return candidate;
    } catch (const nendo::Error& e) {
      fmt::print(stderr, "nendo: warning: {}\n", e.what());
    }
  }
  throw nendo::Error("no usable checkpoint in " + path);
}

void print_checkpoint(const std::string& path, const nendo::ParticleFileInfo& info) {
  const nendo::CheckpointMeta meta = nendo::read_checkpoint_meta(path);
  std::string damage;
  try {
    nendo::read_checkpoint_particles(MPI_COMM_SELF, path);
  } catch (const nendo::Error& e) {
    damage = e.what();
  }
  fmt::print("{}: checkpoint (format {}), written on {} ranks\n", path, meta.format, meta.ranks);
  fmt::print("  step {}, time {:.17g}, dt {:.6g}, {}\n", meta.step, meta.time, meta.dt,
             meta.finished ? "finished (reached time.end)" : "not finished");
  fmt::print("  {} particles, {}D, next id {}, next output index {}\n", info.count, info.dimension,
             meta.next_id, meta.output_index);
  try {
    const nendo::Scene scene = nendo::parse_scene(meta.scene_text, "checkpointed scene", meta.overrides);
    fmt::print("  scene: method {}, end {:.6g} s, dx {:.6g}, {} materials, {} bodies, {} colliders\n",
               scene.method, scene.time.end, scene.grid.dx, scene.materials.size(), scene.bodies.size(),
               scene.colliders.size());
  } catch (const nendo::Error& e) {
    fmt::print("  scene: method {} (its text does not load in this build: {})\n", meta.method, e.what());
  }
  for (const std::string& o : meta.overrides) fmt::print("  override --set {}\n", o);
  print_particle_fields(info);
  fmt::print("  checksums: {}\n", damage.empty() ? "verified" : "DAMAGED: " + damage);
  if (!damage.empty()) throw nendo::Error("the checkpoint is damaged");
}

// `nendo info PATH`: an output file, a checkpoint or a checkpoint directory (its newest good one).
void print_info(const std::string& given) {
  const std::string path = good_checkpoint(given);
  const nendo::ParticleFileInfo info = nendo::ParticleReader::describe(path);
  nendo::Hdf5File file = nendo::Hdf5File::open_read_serial(path);
  const bool checkpoint = file.exists("/meta");
  file.close();
  if (checkpoint) return print_checkpoint(path, info);
  fmt::print("{}: particle file, {}D, {} particles, time {:.17g}, step {}\n", path, info.dimension,
             info.count, info.time, info.step);
  print_particle_fields(info);
}

}  // namespace

int main(int argc, char** argv) {
  nendo::PetscSession petsc(&argc, &argv);
  nendo::register_mpm_material_schemas();  // the material models a scene may name
  nendo::register_fem_material_schemas();
  const MPI_Comm comm = MPI_COMM_WORLD;
  const bool root = nendo::mpi::rank(comm) == 0;

  CLI::App app{"nendo: distributed solver for elastic, plastic and granular matter"};
  // A function, so that only --version loads the Catalyst plugin to name ParaView's version.
  app.set_version_flag("--version", [] {
    return std::string("nendo ") + NENDO_VERSION + " (PETSc " + nendo::PetscSession::version() +
           (nendo::CatalystAdaptor::available()
                ? ", ParaView Catalyst " + nendo::CatalystAdaptor::paraview_version()
                : ", without Catalyst") +
           ")";
  });
  app.require_subcommand(1);
  std::string scene_path;
  std::vector<std::string> sets;
  nendo::RunOptions options;
  CLI::App* run = app.add_subcommand("run", "run a scene");
  run->add_option("scene", scene_path, "scene file (YAML)")->required();
  run->add_option("--steps", options.max_steps, "stop after this many steps");
  run->add_option("--set", sets, "override a scene key, e.g. --set time.end=0.5 --set grid.dx=0.02");
  run->add_option("--output", options.output_dir, "output directory (replaces output.dir)");
  std::string restart, walltime;
  run->add_option("--restart", restart,
                  "resume from a checkpoint: 'latest' (the newest good one in checkpoint.dir) or a file");
  run->add_flag("--allow-scene-change", options.allow_scene_change,
                "restart even if the scene's physics differs from the checkpoint's");
  run->add_option("--walltime", walltime,
                  "wall-time budget (seconds, or [D-]HH:MM:SS): checkpoint and exit 0 before it runs out");
  run->add_option("--catalyst", options.catalyst_scripts,
                  "also run this ParaView Catalyst script (repeatable; jobs/catalyst/ has some)")
      ->check(CLI::ExistingFile);
  run->allow_extras();  // PETSc options (-ksp_type ...) are PETSc's
  std::string info_path;
  bool finished_only = false;
  CLI::App* info =
      app.add_subcommand("info", "describe an output file, a checkpoint or a checkpoint directory");
  info->add_option("path", info_path, "HDF5 file written by nendo, or a checkpoint directory")->required();
  info->add_flag(
      "--finished", finished_only,
      "print nothing; exit 0 if the (newest good) checkpoint reached time.end, 1 if not, 2 on error");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = root ? app.exit(e) : (e.get_exit_code() == 0 ? 0 : kExitBadInput);
    return code == 0 ? 0 : kExitBadInput;
  }

  if (info->parsed()) {
    int code = 0;
    try {
      if (root && finished_only)
        code = nendo::read_checkpoint_meta(good_checkpoint(info_path)).finished ? 0 : 1;
      else if (root)
        print_info(info_path);
    } catch (const std::exception& e) {
      if (root) fmt::print(stderr, "nendo: error: {}\n", e.what());
      code = kExitBadInput;
    }
    MPI_Bcast(&code, 1, MPI_INT, 0, comm);
    return code;
  }
  if (!restart.empty()) options.restart = restart;
  if (!walltime.empty()) {
    try {
      options.walltime = parse_walltime(walltime);
    } catch (const std::exception&) {
      if (root) fmt::print(stderr, "nendo: error: --walltime {}: not seconds or [D-]HH:MM:SS\n", walltime);
      return kExitBadInput;
    }
  }

  try {
    const nendo::Scene scene = load_scene_everywhere(comm, scene_path, sets);
    const nendo::RunSummary s = nendo::run_simulation(comm, scene, options);
    if (root)
      fmt::print("nendo: {} steps to t = {:.6g} in {:.2f} s ({:.3e} particle-steps/s), {} outputs\n",
                 s.steps - s.first_step, s.time, s.wall_seconds,
                 s.wall_seconds > 0
                     ? static_cast<double>(s.particles) * (s.steps - s.first_step) / s.wall_seconds
                     : 0.0,
                 s.outputs);
    if (root && s.catalyst_executions > 0)
      fmt::print("nendo: Catalyst ran the scripts {} times in {:.2f} s\n", s.catalyst_executions,
                 s.catalyst_seconds);
    if (root && !s.stopped_by.empty())
      fmt::print("nendo: stopped by {} at step {}; resume with --restart latest (checkpoint {})\n",
                 s.stopped_by, s.steps, s.last_checkpoint);
  } catch (const nendo::SceneError& e) {
    if (root) fmt::print(stderr, "nendo: error: {}\n", e.what());
    return kExitBadInput;
  } catch (const nendo::SolverError& e) {  // collective; the last good state was checkpointed
    if (root) fmt::print(stderr, "nendo: error: {}\n", e.what());
    return kExitUnstable;
  } catch (const nendo::ParticleStateError& e) {  // collective: every rank stops cleanly
    if (root) fmt::print(stderr, "nendo: error: {}\n", e.what());
    return kExitUnstable;
  } catch (const nendo::InputError& e) {  // collective, before any work: a restart, a Catalyst script
    if (root) fmt::print(stderr, "nendo: error: {}\n", e.what());
    return kExitBadInput;
  } catch (const nendo::CollectiveError& e) {  // e.g. a checkpoint that cannot be written
    if (root) fmt::print(stderr, "nendo: error: {}\n", e.what());
    return kExitFailure;
  } catch (const std::exception& e) {
    fmt::print(stderr, "nendo: error on rank {}: {}\n", nendo::mpi::rank(comm), e.what());
    MPI_Abort(comm, kExitFailure);
  }
  return 0;
}
