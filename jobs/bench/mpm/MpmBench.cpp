// The MPM benchmark of issue 3 (docs/performance.md records the figures): runs a scene's explicit
// MPM steps with output off and prints particle-steps per second per core, where the time went,
// and the memory per particle.
//
//   mpirun -np 2 build/jobs/bench/nendo_mpm_bench jobs/bench/mpm/collision.yaml
//          [--steps 100] [--repeat 3] [--set key=value ...] [--catalyst SCRIPT.py ...]
//
// With --catalyst the scripts are offered every step's state as in `nendo run` (cadence:
// --set catalyst.every_steps=N), inside the timed loop: the Catalyst overhead of issue 5.
//
// Each repeat seeds the scene afresh and times `steps` steps (seeding and distribution are not
// timed); the figures are the median over repeats. Persistent bytes per particle are the particle
// fields (what a particle carries from step to step); resident bytes per particle are the peak
// resident set of all ranks (VmHWM) divided by the particle count, grid and buffers included.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "app/CatalystOutput.hpp"
#include "core/Error.hpp"
#include "core/Mpi.hpp"
#include "core/MpiTime.hpp"
#include "materials/Materials.hpp"
#include "methods/Method.hpp"
#include "scene/SceneLoader.hpp"

namespace nendo::bench {
namespace {

struct Options {
  std::string scene;
  int steps = 100;
  int repeat = 3;
  std::vector<std::string> sets;
  std::vector<std::string> catalyst;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error("option " + arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--steps") {
      o.steps = std::stoi(value());
    } else if (arg == "--repeat") {
      o.repeat = std::stoi(value());
    } else if (arg == "--set") {
      o.sets.push_back(value());
    } else if (arg == "--catalyst") {
      o.catalyst.push_back(value());
    } else if (!arg.empty() && arg[0] != '-' && o.scene.empty()) {
      o.scene = arg;
    } else {
      throw Error("unknown option " + arg +
                  " (usage: SCENE [--steps N] [--repeat N] [--set key=value] [--catalyst SCRIPT])");
    }
  }
  if (o.scene.empty()) throw Error("no scene given");
  return o;
}

// Peak resident set of this process, in bytes (Linux /proc).
double peak_resident_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return 1024.0 * std::stod(line.substr(6));
  return 0;
}

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

struct Sample {
  double seconds = 0;
  double cpu = 0;                 // CPU seconds of the slowest rank: on a shared machine, what the code costs
  std::vector<StageTime> stages;  // max over ranks
  double catalyst = 0;            // seconds in Catalyst, max over ranks
  long catalyst_executions = 0;
  double mpi_share = 0, mpi_share_max = 0;  // of the wall time in MPI calls: mean, max over ranks
  double imbalance = 1;                     // particles per rank max/mean after the steps
  double ghost_bytes = 0, ghost_peers = 0;  // per step and rank, max over ranks (sent; peers at the end)
  double exchange_seconds = 0, exchange_bytes = 0;  // one scatter_add + gather with the ranks in step
};

// One scatter_add and one gather of the MPM step's sizes (1 + D and D reals per node) after a
// barrier, so that no rank waits for another's work: the network cost the model of docs/scaling.md
// predicts. Median of 21, max over ranks; bytes sent by this rank.
void time_exchange(MPI_Comm comm, Space& space, int dimension, Sample& sample) {
  GhostExchange& ghost = space.ghost();
  std::vector<Real> windows(ghost.source_blocks() * ghost.window_nodes() * (1 + dimension), 1.0), grid;
  std::vector<double> times;
  ghost.reset_counters();
  for (int r = 0; r < 21; ++r) {
    MPI_Barrier(comm);
    const double start = MPI_Wtime();
    ghost.scatter_add(windows, 1 + dimension, grid);
    grid.resize(ghost.grid_blocks() * ghost.nodes_per_block() * dimension);
    ghost.gather(grid, dimension, windows);
    times.push_back(MPI_Wtime() - start);
    windows.resize(ghost.source_blocks() * ghost.window_nodes() * (1 + dimension));
  }
  std::sort(times.begin(), times.end());
  double values[2] = {times[times.size() / 2], double(ghost.bytes_sent()) / 21};
  MPI_Allreduce(MPI_IN_PLACE, values, 2, MPI_DOUBLE, MPI_MAX, comm);
  sample.exchange_seconds = values[0], sample.exchange_bytes = values[1];
}

Sample run_once(MPI_Comm comm, const Scene& scene, int steps, CatalystOutput& catalyst,
                std::uint64_t& particles, double& persistent) {
  std::unique_ptr<Method> method = make_method(scene);
  ParticleSet ps = make_particles(*method, scene.dimension);
  method->seed(comm, scene, ps);
  persistent = static_cast<double>(ps.bytes_per_particle());
  Space space(comm, geometry_of(scene), std::move(ps));
  space.distribute();
  method->initialize(space);
  particles = space.global_particles();
  const Real dt = scene.time.dt.value();
  // As `nendo run` does, Catalyst sees step 0 first: the first call of a process imports the
  // scripts (seconds), which is not a per-step cost.
  catalyst.process(space, *method, 0, 0.0);
  MPI_Barrier(comm);
  const double start = MPI_Wtime(), cpu_start = cpu_seconds();
  const double catalyst_start = catalyst.seconds();
  const long executions_start = catalyst.executions();
  const mpi_time::Stopwatch in_mpi;
  space.ghost().reset_counters();
  for (int s = 0; s < steps; ++s) {
    method->advance(space, s * dt, dt);
    catalyst.process(space, *method, s + 1, (s + 1) * dt);
  }
  const double cpu = cpu_seconds() - cpu_start;
  const double mpi_seconds = in_mpi.seconds(), wall = MPI_Wtime() - start;
  const double in_catalyst = catalyst.seconds() - catalyst_start;
  MPI_Barrier(comm);
  Sample sample;
  sample.seconds = MPI_Wtime() - start;
  MPI_Allreduce(&cpu, &sample.cpu, 1, MPI_DOUBLE, MPI_MAX, comm);
  MPI_Allreduce(&in_catalyst, &sample.catalyst, 1, MPI_DOUBLE, MPI_MAX, comm);
  sample.catalyst_executions = catalyst.executions() - executions_start;
  const int ranks = mpi::size(comm);
  double share[2] = {mpi_seconds / wall, mpi_seconds / wall};
  double count[2] = {double(space.particles().size()), double(space.particles().size())};
  MPI_Allreduce(MPI_IN_PLACE, share, 1, MPI_DOUBLE, MPI_SUM, comm);
  MPI_Allreduce(MPI_IN_PLACE, share + 1, 1, MPI_DOUBLE, MPI_MAX, comm);
  MPI_Allreduce(MPI_IN_PLACE, count, 1, MPI_DOUBLE, MPI_SUM, comm);
  MPI_Allreduce(MPI_IN_PLACE, count + 1, 1, MPI_DOUBLE, MPI_MAX, comm);
  sample.mpi_share = share[0] / ranks, sample.mpi_share_max = share[1];
  sample.imbalance = count[0] > 0 ? count[1] * ranks / count[0] : 1.0;
  double ghost[2] = {double(space.ghost().bytes_sent()) / steps, double(space.ghost().peers())};
  MPI_Allreduce(MPI_IN_PLACE, ghost, 2, MPI_DOUBLE, MPI_MAX, comm);
  sample.ghost_bytes = ghost[0], sample.ghost_peers = ghost[1];
  time_exchange(comm, space, scene.dimension, sample);
  sample.stages = method->stage_times();
  for (StageTime& stage : sample.stages) {
    double max[2] = {0, 0}, mine[2] = {stage.seconds, stage.cpu_seconds};
    MPI_Allreduce(mine, max, 2, MPI_DOUBLE, MPI_MAX, comm);
    stage.seconds = max[0], stage.cpu_seconds = max[1];
  }
  return sample;
}

void run(MPI_Comm comm, const Options& o) {
  const int ranks = mpi::size(comm);
  const bool root = mpi::rank(comm) == 0;
  const Scene scene = load_scene(o.scene, o.sets);
  std::vector<Sample> samples;
  std::uint64_t particles = 0;
  double persistent = 0;
  if (!o.catalyst.empty() && root) std::filesystem::create_directories(scene.output.dir);
  CatalystOutput catalyst(comm, scene, *make_method(scene), o.catalyst, scene.output.dir);
  for (int r = 0; r < o.repeat; ++r) {
    samples.push_back(run_once(comm, scene, o.steps, catalyst, particles, persistent));
    if (root)
      std::printf("repeat %d: %.3f s (%.3f s CPU), %.3e particle-steps/s per core\n", r + 1,
                  samples.back().seconds, samples.back().cpu,
                  double(particles) * o.steps / samples.back().seconds / ranks);
  }
  std::sort(samples.begin(), samples.end(),
            [](const Sample& a, const Sample& b) { return a.seconds < b.seconds; });
  const Sample& median = samples[samples.size() / 2];
  double resident = peak_resident_bytes(), total_resident = 0;
  MPI_Reduce(&resident, &total_resident, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
  if (!root) return;
  const double rate = double(particles) * o.steps / median.seconds;
  std::printf("scene %s: %llu particles, %d steps, %d ranks\n", o.scene.c_str(),
              static_cast<unsigned long long>(particles), o.steps, ranks);
  std::printf("particle-steps/s: %.3e total, %.3e per core (median of %d)\n", rate, rate / ranks, o.repeat);
  std::printf("bytes per particle: %.0f persistent, %.0f resident (peak RSS of all ranks / particles)\n",
              persistent, total_resident / double(particles));
  std::printf(
      "MPI calls: %.2f %% of the step time (mean over ranks; max %.2f %%); particles per rank "
      "max/mean %.3f\n",
      100 * median.mpi_share, 100 * median.mpi_share_max, median.imbalance);
  std::printf("ghost exchange: %.0f bytes sent per step and rank, %.0f peers (max over ranks)\n",
              median.ghost_bytes, median.ghost_peers);
  std::printf(
      "ghost exchange alone (scatter_add + gather after a barrier): %.1f us, %.0f bytes sent "
      "(median of 21, max over ranks)\n",
      1e6 * median.exchange_seconds, median.exchange_bytes);
  if (catalyst.enabled())
    std::printf("catalyst: %ld calls ran scripts, %.4f s of %.3f s (%.2f %% of the step time)\n",
                median.catalyst_executions, median.catalyst, median.seconds,
                100.0 * median.catalyst / median.seconds);
  std::printf("stage        core-ns per particle-step: wall  CPU   (max over ranks)  share of wall\n");
  const double per = 1e9 * ranks / (double(particles) * o.steps);
  for (const StageTime& stage : median.stages)
    std::printf("%-12s %38.1f %5.1f %20.1f %%\n", stage.name.c_str(), per * stage.seconds,
                per * stage.cpu_seconds, 100.0 * stage.seconds / median.seconds);
}

}  // namespace
}  // namespace nendo::bench

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int code = 0;
  try {
    nendo::bench::run(MPI_COMM_WORLD, nendo::bench::parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nendo_mpm_bench: %s\n", e.what());
    code = 1;
  }
  MPI_Finalize();
  return code;
}
