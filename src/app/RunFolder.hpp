#pragma once
// The output folder of one run (docs/run-folder.md). One run per folder: a fresh run
// refuses a folder, or a checkpoint directory, that holds another run's files unless told to
// overwrite them (then it removes nendo's own files there and nothing else); a restart continues
// the run whose folder it writes into and removes that run's outputs past the restart point; a
// restart into a folder of its own (a what-if run) starts a new run there, checkpoints included.
// Beside the outputs: scene.yaml (the scene as run, every override applied), run.log (what rank 0
// printed) and manifest.json (versions, command line, ranks, hosts, times, exit status).
#include <mpi.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "io/Checkpoint.hpp"
#include "scene/Scene.hpp"

namespace nendo {

class RunLog;
struct RunFolderPlan;  // what rank 0 decided: continue, start over, remove what

// Where a run writes, from the scene and the command line, before anything is read.
struct RunPaths {
  std::string output_dir;                             // --output, else output.dir
  std::string checkpoint_dir;                         // checkpoint.dir, else <output_dir>/checkpoints
  bool checkpoint_dir_given_on_command_line = false;  // --set checkpoint.dir=...
  std::string scene_checkpoint_dir;                   // checkpoint_dir without --output: the base run's
};

RunPaths resolve_run_paths(const Scene& scene, const std::optional<std::string>& output_override);

// Collective. Where `--restart latest` looks: the first of the checkpoint directory of the run
// that lives in the output folder (its manifest says where), checkpoint_dir, and the scene's own
// (a what-if run's base) that holds a checkpoint; rank 0 looks, every rank gets its answer.
std::string restart_directory(MPI_Comm comm, const RunPaths& paths);

// The file names nendo writes in an output folder and a checkpoint directory: what --overwrite
// removes and what marks a folder as another run's.
bool is_run_output_file(const std::string& name);
bool is_checkpoint_file(const std::string& name);

struct RunRecord {                   // what the manifest says about the process that runs
  std::vector<std::string> command;  // argv
  bool overwrite = false;            // --overwrite
  bool allow_scene_change = false;   // --allow-scene-change: a restart into an empty folder is a what-if run
  bool quiet = false;                // stdout to run.log only
};

class RunFolder {
 public:
  // Collective, before the output directory is touched. Decides whether this run is fresh, a
  // continuation or a what-if branch; refuses (nendo::InputError on every rank) a folder or
  // checkpoint directory holding another run's files unless record.overwrite. Then makes the
  // folder, removes what --overwrite or the restart point supersedes, writes scene.yaml and
  // manifest.json (status "running") and starts run.log.
  RunFolder(MPI_Comm comm, const Scene& scene, const RunPaths& paths, const RunRecord& record,
            const Checkpoint* resumed);
  ~RunFolder();
  RunFolder(const RunFolder&) = delete;
  RunFolder& operator=(const RunFolder&) = delete;

  const std::string& output_dir() const { return output_dir_; }
  const std::string& checkpoint_dir() const { return checkpoint_dir_; }
  const std::string& run_id() const { return run_id_; }

  // Rank 0 records how this segment of the run ended (exit status as nendo exits, a word and a
  // message) and stops run.log. Safe to call more than once; the destructor calls it for a run
  // that ends by an exception nobody recorded ("aborted").
  void finish(int exit_status, const std::string& outcome, const std::string& message = "",
              long last_step = -1, double last_time = 0);

 private:
  void start(const Scene& scene, const RunRecord& record, const Checkpoint* resumed,
             const RunFolderPlan& plan, const nlohmann::ordered_json& this_segment);
  void write_manifest(bool at_start) const;

  bool root_;
  std::string output_dir_, checkpoint_dir_, run_id_;
  std::string manifest_text_;  // the manifest as JSON text (rank 0)
  bool finished_ = false;
  std::unique_ptr<RunLog> log_;
};

}  // namespace nendo
