#include "solvers/PetscLog.hpp"

#include <petscsys.h>

#include <array>
#include <map>
#include <string_view>

#include "core/StageClock.hpp"

namespace nendo {

class PetscStageEvents : public StageObserver {
 public:
  void declare(const char* stage) override { event(stage); }
  void begin(const char* stage) override { PetscLogEventBegin(event(stage), 0, 0, 0, 0); }
  void end(const char* stage) override { PetscLogEventEnd(event(stage), 0, 0, 0, 0); }

 private:
  // Registered when a clock declares it (or at its first use): each method names its own stages.
  // One look-up per stage and step.
  PetscLogEvent event(const char* stage) {
    const auto found = events_.find(std::string_view(stage));
    if (found != events_.end()) return found->second;
    if (!class_id_) PetscClassIdRegister("nendo", &class_id_);
    PetscLogEvent id = 0;
    PetscLogEventRegister(("nendo:" + std::string(stage)).c_str(), class_id_, &id);
    return events_.emplace(stage, id).first->second;
  }

  PetscClassId class_id_ = 0;
  std::map<std::string, PetscLogEvent, std::less<>> events_;
};

PetscStageLog::PetscStageLog() : events_(new PetscStageEvents) { stage_observer() = events_; }

PetscStageLog::~PetscStageLog() {
  if (stage_observer() == events_) stage_observer() = nullptr;
  delete events_;
}

namespace {

// The log stages, registered once per process in the order of RunPhase::Kind.
PetscLogStage log_stage(RunPhase::Kind kind) {
  static const std::array<PetscLogStage, 4> stages = [] {
    std::array<PetscLogStage, 4> ids{};
    for (int k = 0; k < 4; ++k) PetscLogStageRegister(RunPhase::name(RunPhase::Kind(k)), &ids[k]);
    return ids;
  }();
  return stages[kind];
}

}  // namespace

const char* RunPhase::name(Kind kind) {
  static const char* const names[] = {"set-up", "steps", "output", "checkpoint"};
  return names[kind];
}

RunPhase::RunPhase(Kind kind) {
  PetscBool initialized = PETSC_FALSE;
  PetscInitialized(&initialized);
  pushed_ = initialized == PETSC_TRUE;  // a program without PETSc runs unlogged
  if (pushed_) PetscLogStagePush(log_stage(kind));
}

RunPhase::~RunPhase() {
  if (pushed_) PetscLogStagePop();
}

}  // namespace nendo
