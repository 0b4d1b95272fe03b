#pragma once
// The time loop of `nendo run`: seed, distribute, then step, balance, report progress and write
// output until the scene's end time (or a step budget).
#include <mpi.h>

#include <optional>
#include <string>

#include "scene/Scene.hpp"

namespace nendo {

struct RunOptions {
  std::optional<long> max_steps;          // --steps
  std::optional<std::string> output_dir;  // --output, replaces output.dir
  double progress_seconds = 2.0;          // wall time between progress lines
};

struct RunSummary {
  long steps = 0;
  double time = 0;
  std::uint64_t particles = 0;
  double wall_seconds = 0;
  int outputs = 0;
};

RunSummary run_simulation(MPI_Comm comm, const Scene& scene, const RunOptions& options);

}  // namespace nendo
