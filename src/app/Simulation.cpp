#include "app/Simulation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "app/CatalystOutput.hpp"
#include "app/Checkpointer.hpp"
#include "app/ExitStatus.hpp"
#include "app/MeshOutput.hpp"
#include "app/OutputView.hpp"
#include "app/Plan.hpp"
#include "app/Restart.hpp"
#include "app/RunFolder.hpp"
#include "app/SolverLog.hpp"
#include "app/StopRequest.hpp"
#include "bodies/BodySeeder.hpp"
#include "core/Error.hpp"
#include "core/Mpi.hpp"
#include "core/MpiTime.hpp"
#include "decomposition/ParticleMigration.hpp"
#include "io/DiagnosticsCsv.hpp"
#include "io/ParticleWriter.hpp"
#include "methods/ImplicitSettings.hpp"
#include "methods/Method.hpp"
#include "methods/StateGuard.hpp"
#include "scene/SceneLoader.hpp"
#include "solvers/PetscLog.hpp"
#include "solvers/PetscSession.hpp"

namespace nendo {
namespace {

Real max_speed(const Space& space) {
  const ParticleSet& ps = space.particles();
  const int d = ps.dimension();
  const Real* v = ps.real("velocity");
  Real local = 0, global = 0;
  for (std::size_t p = 0; p < ps.size(); ++p) {
    Real v2 = 0;
    for (int a = 0; a < d; ++a) v2 += v[d * p + a] * v[d * p + a];
    local = std::max(local, v2);
  }
  MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_MAX, space.comm());
  return std::sqrt(global);
}

// time.dt alone: fixed. time.cfl: the advective bound cfl*dx/max|v| and the method's own bound,
// capped by time.dt when given. Never past `landing` (the end time, the next output or checkpoint
// time): a step that would pass it, or stop short of it by round-off, is shortened to land on it.
Real next_dt(const Scene& scene, const Method& method, const Space& space, Real t, Real landing) {
  Real dt = scene.time.dt.value_or(std::numeric_limits<Real>::infinity());
  if (scene.time.cfl) {
    const Real v = max_speed(space);
    if (v > 0) dt = std::min(dt, *scene.time.cfl * scene.grid.dx / v);
    dt = std::min(dt, method.stable_dt(space));
  }
  if (!std::isfinite(dt)) dt = landing - t;  // nothing moves and nothing limits the step
  // A remainder below a millionth of a step is round-off in the accumulated time: land with this
  // step instead of a step of 1e-14 s next.
  if (landing - t <= dt * (1 + 1e-6)) return landing - t;
  return dt;
}

// The scheduled time after t of a series every `period` apart from 0 (k * period, k = 1, 2, ...):
// outputs and checkpoints by time land there, so that none drifts (t accumulates no round-off).
Real next_multiple(Real t, Real period) { return (std::floor(t / period + 1e-9) + 1) * period; }

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--:--";
  const long s = std::lround(seconds);
  return fmt::format("{:02d}:{:02d}:{:02d}", s / 3600, (s / 60) % 60, s % 60);
}

class Progress {
 public:
  Progress(MPI_Comm comm, double every_seconds, double start_time, double end_time)
      : rank0_(mpi::rank(comm) == 0),
        every_(every_seconds),
        end_(end_time),
        start_(MPI_Wtime()),
        last_time_(start_time) {
    last_wall_ = start_;
  }
  void report(long step, double t, double dt, std::uint64_t particles, bool force, const SolverStats* solver,
              const std::string& note = "") {
    const double now = MPI_Wtime();
    steps_since_ += 1;
    if (!force && now - last_wall_ < every_) return;
    const double interval = std::max(now - last_wall_, 1e-12);
    const double rate = static_cast<double>(particles) * steps_since_ / interval;
    const double sim_per_wall = (t - last_time_) / interval;
    const double eta = sim_per_wall > 0 ? (end_ - t) / sim_per_wall : -1;
    const std::string newton =
        solver ? fmt::format("  newton {} ksp {}{}", solver->newton_iterations, solver->ksp_iterations,
                             solver->substeps > 1 ? fmt::format(" ({} substeps)", solver->substeps) : "")
               : "";
    if (rank0_)
      fmt::print("step {:>8}  t {:.6e}  dt {:.3e}  particles {:>10}  {:.3e} particle-steps/s{}{}  ETA {}\n",
                 step, t, dt, particles, rate, newton, note.empty() ? "" : "  " + note, format_duration(eta));
    std::fflush(stdout);
    last_wall_ = now, last_time_ = t, steps_since_ = 0;
  }
  double elapsed() const { return MPI_Wtime() - start_; }

 private:
  bool rank0_;
  double every_, end_, start_, last_wall_, last_time_;
  long steps_since_ = 0;
};

// The step that produced a non-finite value is not finished. For a method that checks its own
// state (MPM) the file holds every particle's last finite state (all but the failed particles
// advanced to step + 1, those at step); for the others, the state the step left, non-finite values
// included (the last checkpoint has the last good one). Written collectively before the error
// reaches main.
void write_failure_state(MPI_Comm comm, const std::string& dir, const Space& space, const Method& method,
                         const OutputFields& fields, Real t, long step, const ParticleStateError& error) {
  OutputFields all = fields;
  for (const ParticleField& f : space.particles().fields())
    if (f.name() != "id" && f.name() != "position" &&
        std::find(all.stored.begin(), all.stored.end(), f.name()) == all.stored.end())
      all.stored.push_back(f.name());
  const std::string path = fmt::format("{}/failed_step_{:06d}.h5", dir, error.step());
  ParticleWriter::write_file(comm, path, output_view(space, method, all), all.all(), t, step);
  if (mpi::rank(comm) == 0 && method.checks_finite_state())
    fmt::print(stderr, "nendo: the last finite particle state is in {}\n", path);
  else if (mpi::rank(comm) == 0)
    fmt::print(stderr, "nendo: the state after the failed step, non-finite values included, is in {}\n",
               path);
}

// Where the time went (max over ranks), like PETSc's -log_view in one line per stage.
void print_stage_profile(MPI_Comm comm, const Method& method, double wall) {
  std::vector<StageTime> stages = method.stage_times();
  if (stages.empty()) return;
  std::string line = "nendo: time per stage (max over ranks):";
  for (StageTime& stage : stages) {
    double max = 0;
    MPI_Reduce(&stage.seconds, &max, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
    line += fmt::format(" {} {:.2f} s ({:.0f}%)", stage.name, max, wall > 0 ? 100 * max / wall : 0.0);
  }
  if (mpi::rank(comm) == 0) fmt::print("{}\n", line);
}

// What a step sends, per rank (the weak-scaling model's volumes and counts, docs/scaling.md),
// and the particle halo copies each rank holds at the end (particle methods).
void print_traffic(MPI_Comm comm, long steps, const mpi_time::Traffic& traffic, std::size_t halo_copies) {
  if (steps <= 0) return;
  const double n = double(steps), ranks = mpi::size(comm);
  double most[4] = {traffic.messages / n, traffic.bytes / n, traffic.collectives / n, double(halo_copies)};
  double sum[3] = {most[0], most[1], most[3]};
  MPI_Allreduce(MPI_IN_PLACE, most, 4, MPI_DOUBLE, MPI_MAX, comm);
  MPI_Allreduce(MPI_IN_PLACE, sum, 3, MPI_DOUBLE, MPI_SUM, comm);
  if (mpi::rank(comm) == 0)
    fmt::print(
        "nendo: per step and rank: {:.1f} messages, {:.0f} bytes sent (max {:.1f}, {:.0f}); "
        "{:.1f} collective calls; halo copies at the end {:.0f} (max {:.0f})\n",
        sum[0] / ranks, sum[1] / ranks, most[0], most[1], most[2], sum[2] / ranks, most[3]);
}

// The share of the steps spent in MPI calls (communication and the wait for slower ranks) and
// the imbalance of the rest, each rank's own work: what load balancing and overlap act on. Then
// the rate of the steps alone (no set-up, output or checkpoints: validation.md §8) and the
// particles per rank at the end; jobs/scaling/ reads both lines.
void print_mpi_profile(MPI_Comm comm, double step_seconds, double mpi_seconds, long steps,
                       std::size_t local_particles, const mpi_time::Traffic& traffic,
                       std::size_t halo_copies) {
  const double share = step_seconds > 0 ? mpi_seconds / step_seconds : 0, work = step_seconds - mpi_seconds;
  double shares[3] = {share, -share, share}, works[2] = {work, work};
  MPI_Allreduce(MPI_IN_PLACE, shares, 2, MPI_DOUBLE, MPI_MAX, comm);
  MPI_Allreduce(MPI_IN_PLACE, shares + 2, 1, MPI_DOUBLE, MPI_SUM, comm);
  MPI_Allreduce(MPI_IN_PLACE, works, 1, MPI_DOUBLE, MPI_MAX, comm);
  MPI_Allreduce(MPI_IN_PLACE, works + 1, 1, MPI_DOUBLE, MPI_SUM, comm);
  const int ranks = mpi::size(comm);
  const double mean_work = works[1] / ranks;
  if (mpi::rank(comm) == 0)
    fmt::print(
        "nendo: MPI calls took {:.1f}% of the step time (mean over ranks; min {:.1f}%, max {:.1f}%); "
        "work per rank max/mean {:.3f}\n",
        100 * shares[2] / ranks, -100 * shares[1], 100 * shares[0],
        mean_work > 0 ? works[0] / mean_work : 1.0);
  double seconds = step_seconds, particles[2] = {double(local_particles), double(local_particles)};
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, comm);
  MPI_Allreduce(MPI_IN_PLACE, particles, 1, MPI_DOUBLE, MPI_MAX, comm);
  MPI_Allreduce(MPI_IN_PLACE, particles + 1, 1, MPI_DOUBLE, MPI_SUM, comm);
  if (mpi::rank(comm) == 0)
    fmt::print(
        "nendo: {} steps took {:.3f} s (max over ranks), {:.4e} particle-steps/s; particles per rank "
        "max/mean {:.3f}\n",
        steps, seconds, seconds > 0 ? particles[1] * double(steps) / seconds : 0.0,
        particles[1] > 0 ? particles[0] * ranks / particles[1] : 1.0);
  print_traffic(comm, steps, traffic, halo_copies);
}

// Everything but the particles that the next step needs, for a checkpoint.
CheckpointMeta checkpoint_meta(const Scene& scene, const Space& space, const Method& method,
                               const std::string& run_id, long scheduled_through, long step, Real t, Real dt,
                               bool finished, int output_index, Real next_output) {
  CheckpointMeta meta;
  meta.scheduled_through = scheduled_through;
  meta.step = step, meta.time = t, meta.dt = dt, meta.finished = finished;
  meta.ranks = space.ranks();
  meta.method = scene.method;
  meta.run_id = run_id;
  meta.output_index = output_index;
  meta.next_output = next_output;
  meta.scene_text = scene.source_text;
  meta.overrides = scene.overrides;
  meta.splitters.assign(space.partition().splitters().begin(), space.partition().splitters().end());
  meta.method_state = method.save_state();
  meta.rows = checkpoint_rows(space.comm(), space.particles(), space.geometry());
  const ParticleSet& ps = space.particles();
  std::uint64_t next_id = 0;
  for (std::size_t p = 0; p < ps.size(); ++p) next_id = std::max<std::uint64_t>(next_id, ps.ids()[p] + 1);
  MPI_Allreduce(MPI_IN_PLACE, &next_id, 1, MPI_UINT64_T, MPI_MAX, space.comm());
  meta.next_id = next_id;
  return meta;
}

// A fixed step above the method's stability limit blows up within a few steps: refused before the
// first output, with the limit.
void refuse_unstable_fixed_step(const Scene& scene, const Method& method, const Space& space) {
  if (scene.time.cfl || !scene.time.dt) return;
  const Real limit = method.step_limit(space);
  if (*scene.time.dt <= limit) return;
  throw SceneError(scene_location(scene, "time.dt"), "time.dt",
                   fmt::format("the fixed step {:g} s is above the stable limit of the first step, {:.4g} s "
                               "(dx / max over particles of wave speed + |v|, for {}); set time.dt to at "
                               "most that, or set time.cfl (e.g. 0.5) to choose every step from it",
                               *scene.time.dt, limit, scene.method));
}

// What a restart read: the particles and bytes over all ranks and on the rank with the most, and
// how many had to move to their owner afterwards (none when the row index planned the reads).
void report_restart_read(MPI_Comm comm, const Resumed& resumed, std::size_t particles_read,
                         std::size_t bytes_per_particle, std::size_t particles_sent) {
  std::uint64_t read[2] = {particles_read, particles_read}, sent = particles_sent;
  MPI_Allreduce(MPI_IN_PLACE, &read[0], 1, MPI_UINT64_T, MPI_SUM, comm);
  MPI_Allreduce(MPI_IN_PLACE, &read[1], 1, MPI_UINT64_T, MPI_MAX, comm);
  MPI_Allreduce(MPI_IN_PLACE, &sent, 1, MPI_UINT64_T, MPI_SUM, comm);
  if (mpi::rank(comm) != 0) return;
  const std::string how =
      resumed.partition ? fmt::format("by its row index of {} runs", resumed.checkpoint.meta.rows.total_runs)
                        : "in equal slices (the checkpoint has no row index for this grid)";
  fmt::print(
      "nendo: restart: read {} particles ({} bytes) {}, max per rank {} ({} bytes); {} moved to "
      "another rank after reading\n",
      read[0], read[0] * bytes_per_particle, how, read[1], read[1] * bytes_per_particle, sent);
}

// A fresh run seeds the bodies; a restart reads the checkpoint and lands the particles on the
// partition they were written with when the rank count is the same (else a balanced one): the one
// its row index planned when it has one.
std::unique_ptr<Space> make_space(MPI_Comm comm, const Scene& scene, Method& method,
                                  const std::optional<Resumed>& resumed, ParticleSet particles) {
  if (!resumed) method.seed(comm, scene, particles);
  const std::size_t particles_read = particles.size(), bytes_per_particle = particles.bytes_per_particle();
  auto space = std::make_unique<Space>(comm, geometry_of(scene), std::move(particles));
  const std::vector<std::uint64_t>& splitters =
      resumed ? resumed->checkpoint.meta.splitters : std::vector<std::uint64_t>{};
  if (resumed && resumed->partition)
    space->distribute(*resumed->partition);
  else if (resumed && static_cast<int>(splitters.size()) == mpi::size(comm) + 1)
    space->distribute(Partition(std::vector<BlockKey>(splitters.begin(), splitters.end())));
  else
    space->distribute();
  if (resumed) {
    report_restart_read(comm, *resumed, particles_read, bytes_per_particle,
                        space->migration().particles_sent());
    method.restore(*space, resumed->checkpoint.meta.method_state);
  } else {
    method.initialize(*space);
  }
  return space;
}

// PETSc reads these itself when it finalises (or never reports them used).
bool read_by_petsc_at_exit(const std::string& name) {
  for (const char* prefix : {"log_", "options_left", "options_view", "malloc", "memory_view", "objects_dump",
                             "checkstack", "fp_trap", "info", "history", "on_error", "no_signal_handler"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

std::vector<std::string> unused_petsc_options() {
  std::vector<std::string> unused;
  for (const std::string& name : PetscSession::unused_options())
    if (!read_by_petsc_at_exit(name)) unused.push_back("-" + name);
  return unused;
}

// A PETSc option that nothing will read is a mistake (a typo, or an option for another method):
// refused before the first step for a method that makes no PETSc solver, whose options would all
// have been read by now. Every rank has the same options, so every rank reaches the same verdict.
void refuse_unused_petsc_options(const Scene& scene) {
  const std::vector<std::string> unused = unused_petsc_options();
  if (unused.empty()) return;
  std::string names;
  for (const std::string& name : unused) names += (names.empty() ? "" : ", ") + name;
  throw InputError(
      fmt::format("the PETSc option(s) {} would not be used: method '{}'{} solves nothing with "
                  "PETSc (nendo's own options start with --; see nendo run --help)",
                  names, scene.method, scene.method == "mpm" ? " without implicit: true" : ""));
}

// For a method with PETSc solvers, options are read when the solvers are made, during the steps:
// what is still unread at the end is reported as -options_left would.
void warn_unused_petsc_options(MPI_Comm comm) {
  if (mpi::rank(comm) != 0) return;
  for (const std::string& name : unused_petsc_options())
    fmt::print(stderr,
               "nendo: warning: the PETSc option {} was given but no PETSc object used it (a typo?)\n", name);
}

void print_summary(MPI_Comm comm, const RunSummary& s) {
  if (mpi::rank(comm) != 0) return;
  const long steps = s.steps - s.first_step;
  fmt::print("nendo: {} steps to t = {:.6g} in {:.2f} s ({:.3e} particle-steps/s), {} outputs\n", steps,
             s.time, s.wall_seconds,
             s.wall_seconds > 0 ? static_cast<double>(s.particles) * double(steps) / s.wall_seconds : 0.0,
             s.outputs);
  if (s.catalyst_executions > 0)
    fmt::print("nendo: Catalyst ran the scripts {} times in {:.2f} s\n", s.catalyst_executions,
               s.catalyst_seconds);
  if (!s.stopped_by.empty())
    fmt::print("nendo: stopped by {} at step {}; resume with --restart latest (checkpoint {})\n",
               s.stopped_by, s.steps, s.last_checkpoint);
}

// The time loop, once the run's folder is settled.
RunSummary advance(MPI_Comm comm, const Scene& scene, const RunOptions& options, Method& method, Space& space,
                   const std::optional<Resumed>& resumed, RunFolder& folder, StopRequest& stop,
                   CatalystOutput& catalyst, double walltime) {
  const int rank = mpi::rank(comm);
  const std::string& dir = folder.output_dir();
  CheckpointSettings checkpoint_settings = scene.checkpoint;
  checkpoint_settings.dir = folder.checkpoint_dir();
  Checkpointer checkpoints(comm, checkpoint_settings, walltime);
  const LoadBalancePolicy balance{scene.balance.every_steps, scene.balance.threshold, scene.balance.by_time};
  checkpoints.prepare(resumed ? resumed->checkpoint.meta.step : -1);

  const OutputFields fields =
      select_output_fields(scene.output.fields, scene, method, space.particles(), rank, "output");
  const CheckpointMeta* from = resumed ? &resumed->checkpoint.meta : nullptr;
  ParticleWriter writer(comm, dir, fields.all(), from ? static_cast<int>(from->output_index) : 0,
                        output_storage(scene), output_labels(scene));
  DiagnosticsCsv diagnostics(comm, dir, {},
                             from ? std::optional<std::int64_t>(from->scheduled_through) : std::nullopt);
  std::unique_ptr<SolverLog> solver_log;
  if (method.solver_stats())
    solver_log =
        std::make_unique<SolverLog>(comm, dir, from ? std::optional<long>(from->step) : std::nullopt);

  RunSummary summary;
  long step = from ? from->step : 0;
  Real t = from ? from->time : 0, dt = from ? from->dt : 0;
  Real next_output = from ? from->next_output : 0;
  // An output off the schedule (the last state of a --steps run) is replaced after a restart by
  // the scheduled one that takes its index, so that a chain of runs writes what one run writes.
  bool unscheduled_output = false;
  auto write_output = [&](bool scheduled) {
    const RunPhase output_phase(RunPhase::Output);
    const GlobalDiagnostics g = method.diagnostics(space);
    std::optional<FileMesh> mesh;
    if (method.has_mesh()) mesh = file_mesh(space, method);
    writer.write(output_view(space, method, fields), t, step, mesh ? &*mesh : nullptr);
    DiagnosticsRow row;
    row.step = step, row.time = t, row.dt = dt, row.particles = g.particles;
    row.kinetic_energy = g.kinetic_energy, row.elastic_energy = g.elastic_energy;
    row.momentum = g.momentum, row.mass = g.mass;
    diagnostics.append(row);
    ++summary.outputs;
    if (scene.output.every && scheduled) next_output = next_multiple(t, *scene.output.every);
    unscheduled_output = !scheduled;
  };
  auto output_due = [&] {
    if (scene.output.every_steps) return step % *scene.output.every_steps == 0;
    return t >= next_output - 1e-9 * *scene.output.every;
  };
  auto write_checkpoint = [&](bool finished) {
    const RunPhase checkpoint_phase(RunPhase::Checkpoint);
    summary.last_checkpoint = checkpoints.write(
        space.particles(),
        checkpoint_meta(scene, space, method, folder.run_id(), step - (unscheduled_output ? 1 : 0), step, t,
                        dt, finished, writer.next_index() - (unscheduled_output ? 1 : 0), next_output));
  };

  const std::uint64_t particles_total = space.global_particles();
  if (rank == 0) {
    fmt::print("nendo: {} {}D, {} particles on {} ranks, output in {}/\n", scene.method, scene.dimension,
               particles_total, mpi::size(comm), dir);
    if (from)
      fmt::print("nendo: restarting from {} (step {}, t = {:.17g}, written on {} ranks)\n",
                 resumed->checkpoint.path, from->step, from->time, from->ranks);
  }
  Progress progress(comm, options.progress_seconds, t, scene.time.end);
  // Before the first checkpoint, its cost is guessed at 100 MB/s (for the wall-time budget).
  const double checkpoint_guess = 1e-8 * static_cast<double>(particles_total) *
                                  static_cast<double>(space.particles().bytes_per_particle());
  if (!from) {  // a restart's first state was written and shown by the run it continues
    write_output(true);
    catalyst.process(space, method, step, t);
  }
  double step_seconds = 0, step_mpi_seconds = 0;  // in method.advance(), this rank
  mpi_time::Traffic step_traffic;                 // the same
  double work_since_check = 0;                    // the same outside MPI calls, for the balancer
  const RunPhase steps_phase(RunPhase::Steps);    // nested in set-up: PETSc charges each stage its own time
  while (t < scene.time.end && (!options.max_steps || step < *options.max_steps)) {
    const double step_start = MPI_Wtime();
    const mpi_time::Stopwatch mpi_in_step;
    const mpi_time::Traffic traffic_before = mpi_time::traffic();
    const Real before = t;
    Real landing = scene.time.end;
    if (scene.output.every) landing = std::min(landing, next_output);
    if (scene.checkpoint.every > 0) landing = std::min(landing, next_multiple(t, scene.checkpoint.every));
    dt = next_dt(scene, method, space, t, landing);
    const bool lands = dt == landing - t;
    try {
      method.advance(space, t, dt);
      if (!method.checks_finite_state()) require_finite_state(space, step + 1);
      const double seconds = MPI_Wtime() - step_start, in_mpi = mpi_in_step.seconds();
      step_seconds += seconds, step_mpi_seconds += in_mpi, work_since_check += seconds - in_mpi;
      step_traffic += mpi_time::traffic() - traffic_before;
    } catch (const ParticleStateError& e) {  // thrown on every rank alike
      write_failure_state(comm, dir, space, method, fields, t, step, e);
      throw;
    } catch (const StrayParticleError& e) {  // from the migration, on every rank alike
      const ParticleStateError error(step + 1, e.id(), e.problem());
      write_failure_state(comm, dir, space, method, fields, t, step, error);
      throw error;
    } catch (const SolverError& e) {  // the particles hold the good state at e.reached()
      if (e.reached() > t) t = e.reached(), ++step;
      write_checkpoint(false);
      if (rank == 0)
        fmt::print(stderr, "nendo: the last good state (t = {:.17g}) is in {}\n", t, summary.last_checkpoint);
      throw;
    }
    t = lands ? landing : t + dt, ++step;
    space.maybe_rebalance(step, balance, work_since_check);
    if (balance.every_steps > 0 && step % balance.every_steps == 0) work_since_check = 0;
    const bool last = !(t < scene.time.end) || (options.max_steps && step >= *options.max_steps);
    if (solver_log) solver_log->append(step, t, dt, *method.solver_stats());
    // Counted every step: methods may insert and delete particles (slave SPH, emitters).
    progress.report(step, t, dt, space.global_particles(), last, method.solver_stats(),
                    method.progress_note());
    catalyst.process(space, method, step, t, last);
    const bool due = output_due();
    if (due || last) write_output(due || !(t < scene.time.end));
    const double checkpoint_cost =
        checkpoints.last_write_seconds() > 0 ? checkpoints.last_write_seconds() : checkpoint_guess;
    const StopReason reason = stop.poll(MPI_Wtime() - step_start, checkpoint_cost);
    if (checkpoints.due(step, before, t) || (last && checkpoints.enabled()) || reason != StopReason::None)
      write_checkpoint(!(t < scene.time.end));
    if (reason != StopReason::None && !last) {
      summary.stopped_by = stop.describe();
      break;
    }
  }
  summary.first_step = from ? from->step : 0;
  summary.steps = step, summary.time = t, summary.particles = space.global_particles();
  summary.wall_seconds = progress.elapsed();
  summary.catalyst_executions = catalyst.executions(), summary.catalyst_seconds = catalyst.seconds();
  print_stage_profile(comm, method, summary.wall_seconds);
  print_mpi_profile(comm, step_seconds, step_mpi_seconds, summary.steps - summary.first_step,
                    space.particles().size(), step_traffic, space.halo_copies());
  print_summary(comm, summary);
  warn_unused_petsc_options(comm);
  return summary;
}

}  // namespace

RunSummary run_simulation(MPI_Comm comm, const Scene& scene, const RunOptions& options) {
  const RunPhase set_up(RunPhase::SetUp);                  // -log_view's stages (PetscLog.hpp)
  refuse_unfit_job(comm, scene, options.memory_per_rank);  // before any allocation or output
  PetscSession::add_options(
      scene.sections.get<ImplicitSettings>().petsc_options);  // before the solvers read them
  std::unique_ptr<Method> method = make_method(scene);
  const RunPaths paths = resolve_run_paths(scene, options.output_dir);
  const std::string& dir = paths.output_dir;
  const double walltime = options.walltime.value_or(scene.checkpoint.walltime);
  StopRequest stop(comm, walltime);  // from here on a signal means "stop at the next step boundary"

  // The Catalyst scripts, a restart and the output folder are checked before any other work (and
  // before the output directory is made; the scripts write into it).
  CatalystOutput catalyst(comm, scene, *method, options.catalyst_scripts, dir);
  std::optional<Resumed> resumed;
  if (options.restart)
    resumed = load_restart(comm, *options.restart, restart_directory(comm, paths), scene,
                           options.allow_scene_change, *method);
  ParticleSet particles = resumed ? std::move(resumed->particles) : make_particles(*method, scene.dimension);
  std::unique_ptr<Space> space_owner = make_space(comm, scene, *method, resumed, std::move(particles));
  Space& space = *space_owner;
  if (!resumed) refuse_unstable_fixed_step(scene, *method, space);
  if (!method->solver_stats()) refuse_unused_petsc_options(scene);  // no PETSc solver reads them later
  RunFolder folder(comm, scene, paths,
                   RunRecord{options.command, options.overwrite, options.allow_scene_change, options.quiet},
                   resumed ? &resumed->checkpoint : nullptr);
  try {
    RunSummary summary =
        advance(comm, scene, options, *method, space, resumed, folder, stop, catalyst, walltime);
    folder.finish(kExitFinished, summary.time >= scene.time.end ? "finished" : "stopped",
                  summary.stopped_by.empty() ? "" : "stopped by " + summary.stopped_by, summary.steps,
                  summary.time);
    return summary;
  } catch (const std::exception& e) {
    folder.finish(exit_status_of(e), "failed", e.what());
    throw;
  }
}

}  // namespace nendo
