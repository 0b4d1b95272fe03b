#pragma once
// The time loop of `nendo run`: seed (or resume from a checkpoint), distribute, then step,
// balance, report progress, write output and checkpoints until the scene's end time, a step
// budget, a stop signal or the wall-time budget.
#include <mpi.h>

#include <optional>
#include <string>
#include <vector>

#include "scene/Scene.hpp"

namespace nendo {

struct RunOptions {
  std::optional<long> max_steps;              // --steps
  std::optional<std::string> output_dir;      // --output, replaces output.dir
  double progress_seconds = 2.0;              // wall time between progress lines
  std::optional<std::string> restart;         // --restart latest|FILE
  bool allow_scene_change = false;            // --allow-scene-change
  std::optional<double> walltime;             // --walltime, replaces checkpoint.walltime (seconds)
  std::vector<std::string> catalyst_scripts;  // --catalyst, run besides the scene's catalyst.scripts
  bool overwrite = false;                     // --overwrite: remove another run's files from the folder
  bool quiet = false;                         // --quiet: rank 0's standard output to run.log only
  std::vector<std::string> command;           // the command line, for the run's manifest
  std::optional<double> memory_per_rank;      // --memory-per-rank (bytes), else measured (app/Plan.hpp)
};

struct RunSummary {
  long first_step = 0;  // the step the run started from (a restart's checkpoint step)
  long steps = 0;       // the step it ended at
  double time = 0;
  std::uint64_t particles = 0;
  double wall_seconds = 0;
  int outputs = 0;
  std::string stopped_by;        // non-empty when a signal or the wall-time budget ended the run early
  std::string last_checkpoint;   // the newest checkpoint written, if any
  long catalyst_executions = 0;  // co-processing calls that ran scripts
  double catalyst_seconds = 0;   // wall time in Catalyst (rank 0)
};

// Collective. Prints progress and a summary on rank 0 and records the run in its output folder
// (app/RunFolder.hpp); throws what stopped it (SceneError, InputError, SolverError, ...).
RunSummary run_simulation(MPI_Comm comm, const Scene& scene, const RunOptions& options);

}  // namespace nendo
