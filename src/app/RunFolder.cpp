#include "app/RunFolder.hpp"

#include <fmt/format.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "app/BuildInfo.hpp"
#include "app/RunLog.hpp"
#include "core/Error.hpp"
#include "core/Mpi.hpp"
#include "io/ParticleFile.hpp"
#include "io/XdmfSeries.hpp"
#include "scene/SceneLoader.hpp"
#include "solvers/PetscSession.hpp"

#ifndef NENDO_VERSION
#define NENDO_VERSION "unknown"
#endif

namespace nendo {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr const char* kManifest = "manifest.json";
constexpr const char* kSceneCopy = "scene.yaml";
constexpr const char* kSceneHeader = "# nendo: the scene as run";

std::string now_utc() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string new_run_id() {
  std::random_device entropy;
  const std::uint64_t id = (std::uint64_t(entropy()) << 32) ^ entropy() ^
                           std::uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
  return fmt::format("{:016x}", id);
}

std::string absolute(const std::string& path) {
  std::error_code code;
  const fs::path full = fs::absolute(path, code);
  return code ? path : full.lexically_normal().string();
}

bool same_path(const std::string& a, const std::string& b) { return absolute(a) == absolute(b); }

// A scene.yaml in the folder that nendo did not write (the user's own scene) is never replaced.
bool is_scene_copy(const fs::path& path) {
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  return first.rfind(kSceneHeader, 0) == 0;
}

// The folder's manifest.json; an object, or null when there is none or it does not parse.
Json read_manifest(const std::string& dir) {
  std::ifstream in(fs::path(dir) / kManifest);
  if (!in) return Json();
  try {
    const Json manifest = Json::parse(in);
    return manifest.is_object() ? manifest : Json();
  } catch (const Json::exception&) {
    return Json();
  }
}

// What a folder holds of a run (rank 0).
struct FolderState {
  std::vector<fs::path> files;  // nendo's own files
  Json manifest;                // empty if none or unreadable
  std::string run_id() const { return manifest.is_object() ? manifest.value("run_id", "") : ""; }
};

FolderState inspect(const std::string& dir, bool (*ours)(const std::string&)) {
  FolderState state;
  std::error_code code;
  if (!fs::is_directory(dir, code)) return state;
  for (const auto& entry : fs::directory_iterator(dir, code)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file(code) || !ours(name)) continue;
    if (name == kSceneCopy && !is_scene_copy(entry.path())) continue;
    state.files.push_back(entry.path());
  }
  std::sort(state.files.begin(), state.files.end());
  state.manifest = read_manifest(dir);
  return state;
}

std::string describe_other_run(const std::string& dir, const FolderState& state, const char* what) {
  std::string who = "an earlier run (written before nendo kept a manifest)";
  if (state.manifest.is_object() && !state.manifest["segments"].empty()) {
    const Json& first = state.manifest["segments"][0];
    std::string command;
    for (const auto& word : first.value("command", Json::array())) command += " " + word.get<std::string>();
    who = fmt::format("run {} (started {} by{})", state.run_id(), first.value("started", "?"), command);
  }
  return fmt::format("the {} '{}' holds the files of {}: {} files such as {}", what, dir, who,
                     state.files.size(), state.files.front().filename().string());
}

std::vector<std::string> host_names(MPI_Comm comm) {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  std::vector<char> all(mpi::rank(comm) == 0 ? std::size_t(MPI_MAX_PROCESSOR_NAME) * mpi::size(comm) : 1);
  MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, comm);
  std::vector<std::string> hosts;
  if (mpi::rank(comm) == 0)
    for (int r = 0; r < mpi::size(comm); ++r)
      hosts.emplace_back(&all[std::size_t(r) * MPI_MAX_PROCESSOR_NAME]);
  return hosts;
}

Json libraries() {
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(mpi, &length);
  std::string mpi_text(mpi, std::size_t(length));
  mpi_text = mpi_text.substr(0, mpi_text.find_first_of(",\n"));
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  Json libs;
  libs["mpi"] = mpi_text;
  std::string petsc = PetscSession::version();  // "Petsc Release Version 3.18.5, Feb 27, 2023 "
  petsc = petsc.substr(0, petsc.find(','));
  libs["petsc"] = petsc.substr(petsc.rfind(' ') + 1);
  libs["hdf5"] = fmt::format("{}.{}.{}", major, minor, release);
#ifdef NENDO_PARAVIEW_VERSION
  libs["paraview"] = NENDO_PARAVIEW_VERSION;  // Catalyst's plugin was built against it
#else
  libs["paraview"] = "none (built without Catalyst)";
#endif
  return libs;
}

Json segment(MPI_Comm comm, const RunRecord& record, const Checkpoint* resumed) {
  Json s;
  s["command"] = record.command;
  std::error_code code;
  s["working_directory"] = fs::current_path(code).string();
  s["ranks"] = mpi::size(comm);
  std::map<std::string, int> hosts;
  for (const std::string& host : host_names(comm)) ++hosts[host];
  s["hosts"] = hosts;
  s["nendo"] = {{"version", NENDO_VERSION}, {"commit", build_commit()}};
  s["libraries"] = libraries();
  s["started"] = now_utc();
  s["ended"] = nullptr;
  s["status"] = "running";
  s["exit_status"] = nullptr;
  s["restart"] = resumed ? Json{{"checkpoint", absolute(resumed->path)},
                                {"step", resumed->meta.step},
                                {"time", resumed->meta.time}}
                         : Json();
  return s;
}

}  // namespace

struct RunFolderPlan {
  bool continuation = false;
  std::string checkpoint_dir;
  std::vector<std::filesystem::path> remove;  // --overwrite, or outputs past the restart point
  nlohmann::ordered_json previous;            // the continued run's manifest
};

namespace {

using Plan = RunFolderPlan;

// Rank 0's part of the decision; returns an error message or "".
std::string plan_folder(const RunPaths& paths, const RunRecord& record, const Checkpoint* resumed,
                        Plan& plan) {
  const FolderState out = inspect(paths.output_dir, is_run_output_file);
  const std::string resumed_id = resumed ? resumed->meta.run_id : "";
  // A restart continues the run whose files the folder holds, or, into a folder with none of
  // nendo's files, continues elsewhere, unless it changes the scene (a what-if run of its own).
  plan.continuation =
      resumed && (out.files.empty() ? !record.allow_scene_change : out.run_id() == resumed_id);
  if (plan.continuation) {
    plan.previous = out.manifest;
    plan.checkpoint_dir = paths.checkpoint_dir;
    if (out.manifest.is_object() && !paths.checkpoint_dir_given_on_command_line)
      plan.checkpoint_dir = out.manifest.value("checkpoint_dir", paths.checkpoint_dir);
    for (const fs::path& file : out.files) {  // the outputs after the restart point
      const std::string name = file.filename().string();
      const int index = particle_file_index(name);
      if (index >= 0 && index >= resumed->meta.output_index) plan.remove.push_back(file);
    }
    return "";
  }
  const bool branch = resumed != nullptr;
  plan.checkpoint_dir = branch && !paths.checkpoint_dir_given_on_command_line
                            ? (fs::path(paths.output_dir) / "checkpoints").string()
                            : paths.checkpoint_dir;
  const FolderState checkpoints = inspect(plan.checkpoint_dir, is_checkpoint_file);
  const char* ways =
      "; give a new folder (--output DIR, or --set checkpoint.dir=DIR), or add --overwrite to delete that "
      "run's files first (nendo's own files only: particles_*.h5, *.xdmf, *.csv, run.log, scene.yaml, "
      "manifest.json, checkpoint_*.h5)";
  if (!out.files.empty() && !record.overwrite)
    return describe_other_run(paths.output_dir, out, "output folder") + ways;
  if (!checkpoints.files.empty() && !record.overwrite)
    return describe_other_run(plan.checkpoint_dir, checkpoints, "checkpoint directory") + ways;
  plan.remove = out.files;
  plan.remove.insert(plan.remove.end(), checkpoints.files.begin(), checkpoints.files.end());
  for (const fs::path& file : plan.remove)
    if (resumed && same_path(file.string(), resumed->path))
      return "--overwrite would delete " + resumed->path + ", the checkpoint this run restarts from";
  return "";
}

void remove_files(const std::vector<fs::path>& files, const char* what) {
  if (files.empty()) return;
  std::error_code code;
  for (const fs::path& file : files) fs::remove(file, code);
  fmt::print("nendo: removed {} {} ({} .. {})\n", files.size(), what, files.front().string(),
             files.back().string());
}

}  // namespace

RunPaths resolve_run_paths(const Scene& scene, const std::optional<std::string>& output_override) {
  RunPaths paths;
  paths.output_dir = output_override.value_or(scene.output.dir);
  const bool explicit_dir = !scene.checkpoint.dir.empty();
  paths.checkpoint_dir_given_on_command_line =
      explicit_dir && scene_location(scene, "checkpoint.dir").rfind("--set ", 0) == 0;
  paths.checkpoint_dir =
      explicit_dir ? scene.checkpoint.dir : (fs::path(paths.output_dir) / "checkpoints").string();
  paths.scene_checkpoint_dir =
      explicit_dir ? scene.checkpoint.dir : (fs::path(scene.output.dir) / "checkpoints").string();
  return paths;
}

std::string restart_directory(MPI_Comm comm, const RunPaths& paths) {
  std::string chosen = paths.checkpoint_dir;
  if (mpi::rank(comm) == 0) {
    std::vector<std::string> search;
    const Json manifest = read_manifest(paths.output_dir);
    if (manifest.is_object() && !paths.checkpoint_dir_given_on_command_line)
      search.push_back(manifest.value("checkpoint_dir", paths.checkpoint_dir));
    search.push_back(paths.checkpoint_dir);
    search.push_back(paths.scene_checkpoint_dir);
    for (const std::string& candidate : search)
      if (!list_checkpoints(candidate).empty()) {
        // the manifest's path is absolute: the one given is shown when they are the same
        chosen = same_path(candidate, paths.checkpoint_dir) ? paths.checkpoint_dir : candidate;
        break;
      }
  }
  mpi::broadcast(chosen, 0, comm);
  return chosen;
}

bool is_run_output_file(const std::string& name) {
  static const char* const fixed[] = {"particles.xdmf", "mesh.xdmf", "diagnostics.csv", "solver.csv",
                                      "run.log",        kSceneCopy,  kManifest,         "manifest.json.tmp"};
  for (const char* f : fixed)
    if (name == f) return true;
  if (particle_file_index(name) >= 0) return true;
  return name.rfind("failed_step_", 0) == 0 && name.size() > 3 &&
         name.compare(name.size() - 3, 3, ".h5") == 0;
}

bool is_checkpoint_file(const std::string& name) {
  for (const char* suffix : {"", ".tmp", ".superseded", ".damaged"}) {
    const std::string s(suffix);
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0 &&
        checkpoint_file_step(name.substr(0, name.size() - s.size())) >= 0)
      return true;
  }
  return false;
}

RunFolder::RunFolder(MPI_Comm comm, const Scene& scene, const RunPaths& paths, const RunRecord& record,
                     const Checkpoint* resumed)
    : root_(mpi::rank(comm) == 0), output_dir_(paths.output_dir) {
  const Json this_segment = segment(comm, record, resumed);  // collective: gathers the host names
  std::string error;
  if (root_) {
    Plan plan;
    error = plan_folder(paths, record, resumed, plan);
    if (error.empty()) {
      run_id_ = plan.continuation && !resumed->meta.run_id.empty() ? resumed->meta.run_id : new_run_id();
      checkpoint_dir_ = plan.checkpoint_dir;
      try {
        start(scene, record, resumed, plan, this_segment);
      } catch (const std::exception& e) {
        log_.reset();
        error = e.what();
      }
    }
  }
  mpi::broadcast(error, 0, comm);
  if (!error.empty()) throw InputError(error);
  // Every rank learns the run's id (checkpoints carry it) and where its checkpoints go.
  mpi::broadcast(run_id_, 0, comm);
  mpi::broadcast(checkpoint_dir_, 0, comm);
}

// Rank 0: the folder, its description, the log, then the removals (which the log records).
void RunFolder::start(const Scene& scene, const RunRecord& record, const Checkpoint* resumed,
                      const RunFolderPlan& plan, const Json& this_segment) {
  std::error_code code;
  fs::create_directories(output_dir_, code);
  if (code) throw Error("cannot create the output folder '" + output_dir_ + "': " + code.message());
  const fs::path copy = fs::path(output_dir_) / kSceneCopy;
  if (fs::exists(copy) && !is_scene_copy(copy))
    throw Error("the output folder '" + output_dir_ +
                "' holds a scene.yaml that nendo did not write (your scene?); nendo keeps the scene as run "
                "there: give another output folder");
  Json manifest = plan.continuation && plan.previous.is_object() ? plan.previous : Json::object();
  if (!plan.continuation || !manifest.contains("run_id")) {
    manifest = Json::object();
    manifest["format"] = "nendo run manifest 1";
    manifest["run_id"] = run_id_;
    manifest["scene"] = {
        {"path", absolute(scene.source_path)}, {"method", scene.method}, {"dimension", scene.dimension}};
    manifest["output_dir"] = absolute(output_dir_);
    manifest["branched_from"] = resumed && !plan.continuation ? Json{{"run_id", resumed->meta.run_id},
                                                                     {"checkpoint", absolute(resumed->path)}}
                                                              : Json();
    manifest["segments"] = Json::array();
  }
  manifest["checkpoint_dir"] = absolute(checkpoint_dir_);
  manifest["segments"].push_back(this_segment);
  manifest["status"] = "running";
  manifest["exit_status"] = nullptr;
  manifest_text_ = manifest.dump(2);
  write_manifest(true);
  std::ofstream scene_copy(copy);
  scene_copy << kSceneHeader << " (from " << absolute(scene.source_path)
             << ", every --set applied; relative file paths start from "
             << fs::path(absolute(scene.source_path)).parent_path().string() << ")\n"
             << scene_as_run(scene);
  if (!scene_copy) throw Error("cannot write " + copy.string());
  log_ =
      std::make_unique<RunLog>((fs::path(output_dir_) / "run.log").string(), plan.continuation, record.quiet);
  if (plan.continuation) fmt::print("nendo: {} continues run {} in {}\n", now_utc(), run_id_, output_dir_);
  remove_files(plan.remove, plan.continuation ? "outputs after the restart point"
                                              : "files of an earlier run (--overwrite)");
}

RunFolder::~RunFolder() {
  if (!finished_) finish(1, "aborted", "the run ended by an error this manifest did not record");
}

void RunFolder::finish(int exit_status, const std::string& outcome, const std::string& message,
                       long last_step, double last_time) {
  if (finished_) return;
  finished_ = true;
  if (!root_) return;
  Json manifest = Json::parse(manifest_text_);
  Json& s = manifest["segments"].back();
  s["ended"] = now_utc();
  s["status"] = outcome;
  s["exit_status"] = exit_status;
  if (!message.empty()) s["message"] = message;
  if (last_step >= 0) s["last_step"] = last_step, s["last_time"] = last_time;
  manifest["status"] = outcome;
  manifest["exit_status"] = exit_status;
  manifest_text_ = manifest.dump(2);
  if (log_ && exit_status != 0 && !message.empty()) log_->note("nendo: error: " + message + "\n");
  log_.reset();  // stop copying first: the manifest write is the folder's last word
  write_manifest(false);
}

// Replaced whole (a temporary then a rename): a reader never sees half a manifest. At the start a
// failure stops the run (the folder is not writable); at the end it is a warning.
void RunFolder::write_manifest(bool at_start) const {
  const fs::path path = fs::path(output_dir_) / kManifest, temporary = path.string() + ".tmp";
  std::error_code code;
  if (std::FILE* file = std::fopen(temporary.c_str(), "w")) {
    const bool written =
        std::fwrite(manifest_text_.data(), 1, manifest_text_.size(), file) == manifest_text_.size();
    if (std::fclose(file) != 0 || !written) code = std::error_code(errno, std::generic_category());
  } else {
    code = std::error_code(errno, std::generic_category());
  }
  if (!code) fs::rename(temporary, path, code);
  if (!code) return;
  const std::string problem = "cannot write " + path.string() + ": " + code.message();
  fs::remove(temporary, code);
  if (at_start) throw Error(problem);
  fmt::print(stderr, "nendo: warning: {}\n", problem);
}

}  // namespace nendo
