#include "app/StopRequest.hpp"

#include <algorithm>
#include <csignal>

namespace nendo {
namespace {

volatile std::sig_atomic_t received_signal = 0;

extern "C" void remember_signal(int number) { received_signal = number; }

struct sigaction previous_term, previous_usr1;

}  // namespace

StopRequest::StopRequest(MPI_Comm comm, double walltime_seconds)
    : comm_(comm), budget_(walltime_seconds), start_(MPI_Wtime()) {
  received_signal = 0;
  struct sigaction action {};
  action.sa_handler = remember_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // MPI and file calls in progress carry on
  sigaction(SIGTERM, &action, &previous_term);
  sigaction(SIGUSR1, &action, &previous_usr1);
}

StopRequest::~StopRequest() {
  sigaction(SIGTERM, &previous_term, nullptr);
  sigaction(SIGUSR1, &previous_usr1, nullptr);
}

StopReason StopRequest::poll(double step_seconds, double checkpoint_seconds) {
  slowest_step_ = std::max(slowest_step_, step_seconds);
  // [signal, walltime]: the signal's number (any rank's), and rank 0's wall-clock verdict so that
  // every rank decides alike even if their clocks differ.
  int local[2] = {static_cast<int>(received_signal), 0};
  int rank = 0;
  MPI_Comm_rank(comm_, &rank);
  if (rank == 0 && budget_ > 0)
    local[1] = MPI_Wtime() - start_ + 2 * slowest_step_ + checkpoint_seconds >= budget_ ? 1 : 0;
  int global[2] = {0, 0};
  MPI_Allreduce(local, global, 2, MPI_INT, MPI_MAX, comm_);
  signal_ = global[0];
  reason_ = global[0] != 0 ? StopReason::Signal : global[1] != 0 ? StopReason::Walltime : StopReason::None;
  return reason_;
}

std::string StopRequest::describe() const {
  if (reason_ == StopReason::Walltime) return "the wall-time budget";
  if (signal_ == SIGTERM) return "SIGTERM";
  if (signal_ == SIGUSR1) return "SIGUSR1";
  return "signal " + std::to_string(signal_);
}

}  // namespace nendo
