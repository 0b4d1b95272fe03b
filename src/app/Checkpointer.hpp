#pragma once
// The driver's side of checkpoints (the file itself is io/Checkpoint.hpp): when one is due, where
// it goes, how many are kept, and housekeeping of the checkpoint directory.
#include <mpi.h>

#include <string>

#include "decomposition/Space.hpp"
#include "io/Checkpoint.hpp"
#include "scene/Scene.hpp"

namespace nendo {

class Checkpointer {
 public:
  // walltime: the run's wall-time budget (scene or --walltime), which turns checkpoints on.
  Checkpointer(MPI_Comm comm, const CheckpointSettings& settings, double walltime);

  // Checkpoints are written periodically, or at least at the end, when any trigger is set or the
  // run is a restart (it continues a run that checkpoints); a stop request writes one in any case.
  bool enabled() const {
    return settings_.every_steps > 0 || settings_.every > 0 || walltime_ > 0 || resumed_;
  }
  const std::string& directory() const { return settings_.dir; }

  // After the step that took the run from time before to time after, as step `step`: whether a
  // periodic checkpoint is due (every_steps, or a multiple of `every` crossed).
  bool due(long step, double before, double after) const;

  // Collective. Writes DIR/checkpoint_<step>.h5 (once per step), then deletes all but the newest
  // `keep`. Throws nendo::CollectiveError on every rank when it cannot be written; the earlier
  // checkpoints are then untouched.
  std::string write(const ParticleSet& particles, const CheckpointMeta& meta);
  double last_write_seconds() const { return last_seconds_; }

  // Collective, before a run: creates the directory and removes what a killed writer left
  // (checkpoint_*.h5.tmp). After a restart from step `restart_step`, checkpoints of later steps
  // belong to an abandoned future and are renamed *.superseded.
  void prepare(long restart_step = -1);

 private:
  MPI_Comm comm_;
  CheckpointSettings settings_;
  double walltime_;
  bool resumed_ = false;
  long last_step_ = -1;
  double last_seconds_ = 0;
};

}  // namespace nendo
