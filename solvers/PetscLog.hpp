#pragma once
// nendo's parts of a run in PETSc's profiler, so that -log_view (and -log_view :file.txt) shows
// them per rank beside KSPSolve, PCApply, MatMult, ...:
//  - the run's phases as PETSc log stages "set-up", "steps", "output" and "checkpoint", each
//    with its own event table (RunPhase, pushed by app/Simulation);
//  - every StageClock stage of a method (core/StageClock.hpp: MPM's "P2G", "G2P", ...) as a
//    PETSc log event "nendo:<stage>", registered the first time it runs.
// PetscSession installs the stage observer after PetscInitialize and removes it before
// PetscFinalize; without -log_view PETSc only checks a flag per event.
#include <string>

namespace nendo {

class PetscStageEvents;

// Makes StageClock stages PETSc log events while it lives (PetscSession holds one).
class PetscStageLog {
 public:
  PetscStageLog();
  ~PetscStageLog();
  PetscStageLog(const PetscStageLog&) = delete;
  PetscStageLog& operator=(const PetscStageLog&) = delete;

 private:
  PetscStageEvents* events_;
};

// A run's phase as the current PETSc log stage while it lives (PetscLogStagePush/Pop); phases
// nest (an output during the steps is logged under "output").
class RunPhase {
 public:
  enum Kind { SetUp, Steps, Output, Checkpoint };
  explicit RunPhase(Kind kind);
  ~RunPhase();
  RunPhase(const RunPhase&) = delete;
  RunPhase& operator=(const RunPhase&) = delete;

  // The log stage's name ("set-up", "steps", "output", "checkpoint").
  static const char* name(Kind kind);

 private:
  bool pushed_ = false;
};

}  // namespace nendo
