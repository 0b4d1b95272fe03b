#pragma once
// Stopping a run early but cleanly: SIGTERM or SIGUSR1 (what a batch system sends before the time
// limit; mpirun forwards SIGUSR1 to every rank) or a wall-time budget about to run out. A signal may
// reach one rank only, so the ranks agree once per step (one allreduce) and all stop at the same
// step boundary, where the driver writes a checkpoint and exits 0.
#include <mpi.h>

#include <string>

namespace nendo {

enum class StopReason { None = 0, Walltime = 1, Signal = 2 };

class StopRequest {
 public:
  // Installs the handlers for SIGTERM and SIGUSR1 (replacing PETSc's); walltime_seconds <= 0 means
  // no budget. The budget counts from this constructor.
  StopRequest(MPI_Comm comm, double walltime_seconds);
  ~StopRequest();
  StopRequest(const StopRequest&) = delete;
  StopRequest& operator=(const StopRequest&) = delete;

  // Collective, once per step. step_seconds: the wall time of the step just taken;
  // checkpoint_seconds: of the last checkpoint written (0 if none yet). The budget is spent when
  // what remains would not cover two more steps and a checkpoint.
  StopReason poll(double step_seconds, double checkpoint_seconds);
  // "SIGTERM", "SIGUSR1" or "the wall-time budget" after poll() returned a reason (any rank).
  std::string describe() const;

 private:
  MPI_Comm comm_;
  double budget_;
  double start_;
  double slowest_step_ = 0;
  int signal_ = 0;  // agreed by poll: the signal that some rank received
  StopReason reason_ = StopReason::None;
};

}  // namespace nendo
