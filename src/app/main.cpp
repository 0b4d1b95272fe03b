// nendo: the command-line entry point (docs/index.md "Command line").
//   nendo run SCENE [--steps N] [--set key.path=value ...] [--output DIR] [--overwrite]
//                   [--restart latest|FILE] [--allow-scene-change] [--walltime SECONDS|HH:MM:SS]
//                   [--catalyst SCRIPT.py ...] [--quiet|--verbose] [--get KEY] [--memory-per-rank SIZE]
//                   [-petsc_option ...]
//   nendo plan SCENE [--ranks N] [--set key.path=value ...] [--memory-per-rank SIZE]
//   nendo info OUTPUT_DIR|FILE.h5|FILE.xdmf|CHECKPOINT_DIR [--finished]
//   nendo --version | --help
#include <fmt/format.h>
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/BuildInfo.hpp"
#include "app/ExitStatus.hpp"
#include "app/Plan.hpp"
#include "app/Restart.hpp"
#include "app/RunFolder.hpp"
#include "app/Simulation.hpp"
#include "core/Error.hpp"
#include "core/Mpi.hpp"
#include "io/Checkpoint.hpp"
#include "io/Hdf5File.hpp"
#include "io/InSitu.hpp"
#include "io/ParticleFile.hpp"
#include "io/ParticleReader.hpp"
#include "io/XdmfSeries.hpp"
#include "materials/Materials.hpp"
#include "materials/StvkMaterial.hpp"
#include "methods/Method.hpp"
#include "scene/SceneLoader.hpp"
#include "solvers/PetscSession.hpp"

#ifndef NENDO_VERSION
#define NENDO_VERSION "unknown"
#endif

namespace {

using nendo::kExitBadInput;
using nendo::kExitFailure;

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
  if (!info.method.empty()) fmt::print("  method {}\n", info.method);
  for (const auto& f : info.fields) {
    std::string notes = f.single_precision ? "  float32" : "";
    if (!f.unit.empty()) notes += "  [" + f.unit + "]";
    if (f.name == "material" && !info.material_names.empty()) {
      notes += "  materials:";
      for (std::size_t m = 0; m < info.material_names.size(); ++m)
        notes += fmt::format(" {}={}", m, info.material_names[m]);
    }
    fmt::print("  /particles/{:<12} {:<6} x {}{}\n", f.name, nendo::field_type_name(f.type), f.components,
               notes);
  }
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
  fmt::print("{}: checkpoint (format {}), written on {} ranks{}\n", path, meta.format, meta.ranks,
             meta.run_id.empty() ? "" : " by run " + meta.run_id);
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

// A particle output file or a checkpoint.
void given_file_info(const std::string& path) {
  const nendo::ParticleFileInfo info = nendo::ParticleReader::describe(path);
  nendo::Hdf5File file = nendo::Hdf5File::open_read_serial(path);
  const bool checkpoint = file.exists("/meta");
  file.close();
  if (checkpoint) return print_checkpoint(path, info);
  fmt::print("{}: particle file, {}D, {} particles, time {:.17g}, step {}\n", path, info.dimension,
             info.count, info.time, info.step);
  print_particle_fields(info);
}

// An output folder: the run that made it (manifest.json), its outputs and its newest checkpoint.
void print_folder(const std::string& dir) {
  namespace fs = std::filesystem;
  std::ifstream in(fs::path(dir) / "manifest.json");
  const auto manifest = in ? nlohmann::ordered_json::parse(in) : nlohmann::ordered_json();
  if (manifest.is_object()) {
    const auto& scene = manifest["scene"];
    fmt::print("{}: output folder of run {} ({}), status {}, exit status {}\n", dir,
               manifest.value("run_id", "?"), scene.value("method", "?"), manifest.value("status", "?"),
               manifest["exit_status"].dump());
    fmt::print("  scene: {} (as run: {}/scene.yaml)\n", scene.value("path", "?"), dir);
    for (const auto& segment : manifest["segments"]) {
      std::string command;
      for (const auto& word : segment["command"]) command += " " + word.get<std::string>();
      fmt::print("  {} .. {}: {} ranks on {} hosts, {}{}\n", segment.value("started", "?"),
                 segment["ended"].is_null() ? "(running or killed)" : segment.value("ended", "?"),
                 segment.value("ranks", 0), segment["hosts"].size(), segment.value("status", "?"),
                 segment.contains("message") ? ": " + segment.value("message", "") : "");
      fmt::print("    nendo {} ({}):{}\n", segment["nendo"].value("version", "?"),
                 segment["nendo"].value("commit", "?"), command);
    }
  } else {
    fmt::print("{}: output folder without manifest.json (written by an older nendo, or not by nendo)\n", dir);
  }
  const std::vector<nendo::ParticleFileInfo> outputs = nendo::XdmfSeries::scan(dir, 1 << 30);
  if (!outputs.empty())
    fmt::print("  {} outputs particles_{:06d}.h5 .. particles_{:06d}.h5, t = {:.6g} .. {:.6g} s\n",
               outputs.size(), outputs.front().index, outputs.back().index, outputs.front().time,
               outputs.back().time);
  if (!manifest.is_object()) return;
  const std::vector<std::string> checkpoints = nendo::list_checkpoints(manifest.value("checkpoint_dir", ""));
  if (!checkpoints.empty()) fmt::print("  newest checkpoint: {}\n", checkpoints.front());
}

// `nendo info PATH`: an output folder, an XDMF series, an output file, a checkpoint or a checkpoint
// directory (its newest good one).
void print_info(const std::string& given) {
  namespace fs = std::filesystem;
  if (fs::is_directory(given) &&
      (fs::exists(fs::path(given) / "manifest.json") || fs::exists(fs::path(given) / "particles.xdmf")))
    return print_folder(given);
  if (fs::path(given).extension() == ".xdmf") {
    const std::string dir = fs::path(given).parent_path().string();
    const auto outputs = nendo::XdmfSeries::scan(dir.empty() ? "." : dir, 1 << 30);
    fmt::print("{}: XDMF series of {} outputs", given, outputs.size());
    if (outputs.empty()) return fmt::print("\n");
    fmt::print(", t = {:.6g} .. {:.6g} s; the last:\n", outputs.front().time, outputs.back().time);
    given_file_info(
        (fs::path(dir.empty() ? "." : dir) / nendo::particle_file_name(outputs.back().index)).string());
    return;
  }
  given_file_info(good_checkpoint(given));
}

// "--ouput" -> "--output": the option nearest by edit distance, if it is near.
std::string nearest(const std::string& given, const std::vector<std::string>& known) {
  std::string best;
  std::size_t best_distance = 3;  // at most two edits
  for (const std::string& k : known) {
    std::vector<std::size_t> row(k.size() + 1);
    for (std::size_t j = 0; j <= k.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= given.size(); ++i) {
      std::size_t diagonal = row[0];
      row[0] = i;
      for (std::size_t j = 1; j <= k.size(); ++j) {
        const std::size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (given[i - 1] == k[j - 1] ? 0 : 1)});
        diagonal = up;
      }
    }
    if (row[k.size()] < best_distance) best_distance = row[k.size()], best = k;
  }
  return best;
}

// Arguments CLI11 did not take: single-dash ones are PETSc's (PETSc has read the whole command
// line); a double-dash one is a mistake, refused before any work.
void refuse_unknown_options(const CLI::App& run, const std::vector<std::string>& extras) {
  std::vector<std::string> known;
  for (const CLI::Option* option : run.get_options())
    for (const std::string& name : option->get_lnames()) known.push_back("--" + name);
  for (const std::string& arg : extras) {
    if (arg.rfind("--", 0) != 0 || arg == "--") continue;
    const std::string name = arg.substr(0, arg.find('='));
    const std::string hint = nearest(name, known);
    throw CLI::ValidationError(name, "not an option of nendo run" +
                                         (hint.empty() ? "" : " (did you mean " + hint + "?)") +
                                         "; PETSc options take one dash (-ksp_type cg); nendo run --help "
                                         "lists nendo's");
  }
}

// `nendo run SCENE ... --get KEY`: what a job script needs to know of the run without running it.
std::string resolved(const nendo::Scene& scene, const nendo::RunOptions& options, const std::string& key) {
  const nendo::RunPaths paths = nendo::resolve_run_paths(scene, options.output_dir);
  if (key == "output.dir") return paths.output_dir;
  if (key == "checkpoint.dir") return paths.checkpoint_dir;
  if (key == "method") return scene.method;
  if (key == "dimension") return std::to_string(scene.dimension);
  if (key == "time.end") return fmt::format("{:.17g}", scene.time.end);
  throw nendo::InputError("--get " + key +
                          ": not one of output.dir, checkpoint.dir, method, dimension, time.end");
}

// The memory each rank may use, for `nendo run`'s fit check and `nendo plan` (app/Plan.hpp).
CLI::Option* add_memory_option(CLI::App& command, std::string& memory) {
  return command
      .add_option("--memory-per-rank", memory,
                  "memory each rank may use (e.g. 2GiB, 3.5GB), for batch systems that give less than the "
                  "node has; default: the node's available memory (MemAvailable, the cgroup's memory.max) "
                  "shared by its ranks")
      ->envname("NENDO_MEMORY_PER_RANK");
}

// `nendo plan SCENE --ranks N`: the estimate, whether it fits, the fewest ranks that do (exit 0
// if it fits, 1 if not).
int print_job_plan(const nendo::Scene& scene, int ranks, const std::string& memory) {
  const std::optional<double> given =
      memory.empty() ? std::nullopt : std::optional<double>(nendo::parse_bytes(memory));
  const nendo::JobPlan plan = nendo::plan_job(scene, ranks);
  const nendo::RankMemory available = nendo::planned_memory(given);
  nendo::print_plan(plan, available);
  return plan.bytes_per_rank <= available.bytes(ranks) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  nendo::PetscSession petsc(&argc, &argv);
  const MPI_Comm comm = MPI_COMM_WORLD;
  const bool root = nendo::mpi::rank(comm) == 0;

  CLI::App app{"nendo: distributed solver for elastic, plastic and granular matter"};
  // A function, so that only --version loads the Catalyst plugin to name ParaView's version.
  app.set_version_flag("--version", [] {
    return std::string("nendo ") + NENDO_VERSION + " (commit " + nendo::build_commit() + ", PETSc " +
           nendo::PetscSession::version() +
           (nendo::CatalystAdaptor::available()
                ? ", ParaView Catalyst " + nendo::CatalystAdaptor::paraview_version()
                : ", without Catalyst") +
           ")";
  });
  app.require_subcommand(1);
  std::string scene_path, get_key;
  std::vector<std::string> sets;
  nendo::RunOptions options;
  bool verbose = false;
  CLI::App* run = app.add_subcommand("run", "run a scene");
  run->add_option("scene", scene_path, "scene file (YAML)")->required();
  run->add_option("--steps", options.max_steps,
                  "stop at step N, counted from the start of the simulation (also after a restart: a "
                  "restart from step 500 with --steps 800 takes 300 steps); the last state is written");
  // One value per --set, so that `--set a=1 scene.yaml` leaves the scene to the positional.
  run->add_option("--set", sets,
                  "override a scene key, e.g. --set time.end=0.5 --set grid.dx=0.02 (repeatable)")
      ->allow_extra_args(false);
  run->add_option("--output", options.output_dir, "output folder (replaces output.dir)");
  run->add_flag("--overwrite", options.overwrite,
                "the output folder (or checkpoint directory) holds another run's files: delete them first "
                "(nendo's own files only)");
  std::string restart, walltime;
  run->add_option("--restart", restart,
                  "resume from a checkpoint: 'latest' (the newest good one of the run in the output folder, "
                  "else of checkpoint.dir) or a file");
  run->add_flag("--allow-scene-change", options.allow_scene_change,
                "restart even if the scene's physics differs from the checkpoint's (with --output NEW: a "
                "what-if run of its own)");
  run->add_option("--walltime", walltime,
                  "wall-time budget (seconds, or [D-]HH:MM:SS): checkpoint and exit 0 before it runs out");
  run->add_option("--catalyst", options.catalyst_scripts,
                  "also run this ParaView Catalyst script (repeatable; jobs/catalyst/ has some)")
      ->allow_extra_args(false)
      ->check(CLI::ExistingFile);
  CLI::Option* quiet_flag = run->add_flag("--quiet", options.quiet,
                                          "print only warnings and errors (the run's run.log has it all)");
  run->add_flag("--verbose", verbose, "a progress line every step instead of every 2 s")
      ->excludes(quiet_flag);
  run->add_option("--get", get_key,
                  "print KEY (output.dir, checkpoint.dir, method, dimension, time.end) as this command line "
                  "resolves it, and exit without running");
  run->allow_extras();  // PETSc's options (one dash); refuse_unknown_options() refuses the rest
  run->footer(
      "PETSc options (one dash, e.g. -ksp_type cg -log_view) go to PETSc; one that no PETSc object "
      "reads is an error (methods without PETSc solvers) or a warning at the end.");
  std::string run_memory;
  add_memory_option(*run, run_memory);
  std::string plan_memory;
  int plan_ranks = 1;
  CLI::App* plan = app.add_subcommand(
      "plan", "estimate a scene's particles, memory per rank, file sizes and step time without running it");
  plan->add_option("scene", scene_path, "scene file (YAML)")->required();
  plan->add_option("--ranks", plan_ranks, "ranks of the job (default 1)")->check(CLI::Range(1, 1 << 24));
  plan->add_option("--set", sets, "override a scene key, as for nendo run (repeatable)")
      ->allow_extra_args(false);
  add_memory_option(*plan, plan_memory);
  plan->footer("Exit status 0 if the job fits in the memory per rank, 1 if not, 2 on bad input.");
  std::string info_path;
  bool finished_only = false;
  CLI::App* info = app.add_subcommand(
      "info",
      "describe an output folder, an XDMF series, an output file, a checkpoint or a checkpoint directory");
  info->add_option("path", info_path,
                   "output folder, particles.xdmf, HDF5 file written by nendo, or a checkpoint directory")
      ->required();
  info->add_flag(
      "--finished", finished_only,
      "print nothing; exit 0 if the (newest good) checkpoint reached time.end, 1 if not, 2 on error");

  try {
    app.parse(argc, argv);
    if (run->parsed()) refuse_unknown_options(*run, run->remaining());
    std::vector<std::string> own;
    for (const CLI::Option* option : run->get_options())
      for (const std::string& name : option->get_lnames()) own.push_back(name);
    nendo::PetscSession::set_program_options(own);
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
  if (plan->parsed()) {
    int code = 0;
    try {
      const nendo::Scene scene = load_scene_everywhere(comm, scene_path, sets);
      if (root) code = print_job_plan(scene, plan_ranks, plan_memory);
    } catch (const std::exception& e) {
      if (root) fmt::print(stderr, "nendo: error: {}\n", e.what());
      code = kExitBadInput;
    }
    MPI_Bcast(&code, 1, MPI_INT, 0, comm);
    return code;
  }
  if (!restart.empty()) options.restart = restart;
  if (!run_memory.empty()) {
    try {
      options.memory_per_rank = nendo::parse_bytes(run_memory);
    } catch (const nendo::Error& e) {
      if (root) fmt::print(stderr, "nendo: error: --memory-per-rank {}\n", e.what());
      return kExitBadInput;
    }
  }
  if (verbose) options.progress_seconds = 0;
  options.command.assign(argv, argv + argc);
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
    if (!get_key.empty()) {
      const std::string value = resolved(scene, options, get_key);
      if (root) fmt::print("{}\n", value);
      return 0;
    }
    nendo::run_simulation(comm, scene, options);
  } catch (const nendo::CollectiveError& e) {  // every rank alike: bad input, a solver, a checkpoint
    if (root) fmt::print(stderr, "nendo: error: {}\n", e.what());
    return nendo::exit_status_of(e);
  } catch (const nendo::SceneError& e) {  // every rank parsed the same text
    if (root) fmt::print(stderr, "nendo: error: {}\n", e.what());
    return kExitBadInput;
  } catch (const nendo::ParticleStateError& e) {  // collective: every rank stops cleanly
    if (root) fmt::print(stderr, "nendo: error: {}\n", e.what());
    return nendo::exit_status_of(e);
  } catch (const std::exception& e) {
    fmt::print(stderr, "nendo: error on rank {}: {}\n", nendo::mpi::rank(comm), e.what());
    MPI_Abort(comm, kExitFailure);
  }
  return 0;
}
