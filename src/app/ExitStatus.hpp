#pragma once
// The exit status of `nendo run`, one per way a run ends (docs/checkpointing.md lists them).
#include <exception>

#include "core/Error.hpp"
#include "methods/Method.hpp"
#include "scene/SceneError.hpp"

namespace nendo {

constexpr int kExitFinished = 0;  // reached time.end or --steps, or stopped cleanly by a signal
constexpr int kExitFailure = 1;   // e.g. a checkpoint that cannot be written
constexpr int kExitBadInput = 2;  // the scene, the command line, the output folder, a restart
constexpr int kExitUnstable = 3;  // a particle state became NaN or inf, or a solver diverged

inline int exit_status_of(const std::exception& e) {
  if (dynamic_cast<const SceneError*>(&e) || dynamic_cast<const InputError*>(&e)) return kExitBadInput;
  if (dynamic_cast<const SolverError*>(&e) || dynamic_cast<const ParticleStateError*>(&e))
    return kExitUnstable;
  return kExitFailure;
}

}  // namespace nendo
