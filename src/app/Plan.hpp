#pragma once
// A job sized before it starts (docs/batch-runs.md "Sizing a job"): `nendo plan SCENE --ranks N`
// prints it, and `nendo run` refuses, before any allocation or output, a scene whose estimate does
// not fit in the memory its ranks have. The numbers come from the method's cost model
// (methods/MethodCost.hpp); nothing of the problem's size is allocated.
#include <mpi.h>

#include <functional>
#include <optional>
#include <string>

#include "methods/MethodCost.hpp"
#include "scene/Scene.hpp"

namespace nendo {

struct JobPlan {
  std::string method;
  int ranks = 1;
  ProblemSize size;
  double bytes_per_rank = 0;    // peak resident set of the busiest rank, libraries included
  double baseline_bytes = 0;    // of those, one process before any particle
  double output_bytes = 0;      // one output file (before compression)
  double checkpoint_bytes = 0;  // one checkpoint file
  double step_seconds = 0;      // one step, from the method's measured rate per core
  std::optional<long> steps;    // to time.end, when the step is fixed
};

// The memory each rank of a job has: bytes per rank and where the figure comes from.
struct RankMemory {
  std::function<double(int ranks)> bytes;  // per rank, for a job of `ranks` ranks
  std::string source;                      // e.g. "--memory-per-rank", "MemAvailable 21.3 GiB / 2 ranks"
};

// The cost of `scene` on `ranks` ranks. Throws nendo::InputError for a method without a cost model.
JobPlan plan_job(const Scene& scene, int ranks);
// The peak bytes per rank of the scene's size on `ranks` ranks.
double bytes_per_rank(const MethodCost& cost, const ProblemSize& size, int ranks);
// The fewest ranks whose bytes per rank fit `memory`, 0 if no rank count up to 2^24 does.
int smallest_fitting_ranks(const MethodCost& cost, const ProblemSize& size, const RankMemory& memory);

// "2GiB", "1.5 GB", "800M", "123456789" (bytes). Throws nendo::InputError naming the text.
double parse_bytes(const std::string& text);
std::string format_bytes(double bytes);

// Memory for `nendo plan`: `given` per rank, else this machine's available memory (MemAvailable,
// capped by the cgroup's memory.max) shared by the ranks a node like it runs (one per core).
RankMemory planned_memory(std::optional<double> given);
// Memory for `nendo run` (collective): `given`, else each node's available memory divided among
// its ranks plus what each rank holds already; the smallest over the ranks.
RankMemory job_memory(MPI_Comm comm, std::optional<double> given);

// Prints the plan against `memory` (rank 0 of `nendo plan`).
void print_plan(const JobPlan& plan, const RankMemory& memory);

// Collective: throws nendo::InputError on every rank, before anything is allocated, when the
// scene's estimate does not fit the memory the ranks have (job_memory), naming both and the
// smallest rank count that fits. Scenes of methods without a cost model pass.
void refuse_unfit_job(MPI_Comm comm, const Scene& scene, std::optional<double> memory_per_rank);

}  // namespace nendo
