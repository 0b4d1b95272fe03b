#pragma once
// Wall time this rank spends inside MPI calls that can wait for other ranks: collectives, waits,
// tests, probes and blocking point-to-point calls. Measured through MPI's profiling interface
// (each such MPI_X is defined here and calls PMPI_X between two clock reads), so every library of
// the process is counted — nendo's exchanges, PETSc's reductions, HDF5's metadata collectives —
// without a change at any call site. MPI-IO is not counted (output has its own timing).
//
// The share of a step spent here is the communication cost plus the wait for slower ranks (load
// imbalance); the rest of the step is this rank's own work, which the load balancer can weigh.

#include <cstdint>

namespace nendo::mpi_time {

// Seconds inside such calls on this rank since MPI_Init.
double seconds();

// What this rank has sent since MPI_Init, counted through the same interface: point-to-point
// messages (blocking and non-blocking sends, the send half of MPI_Sendrecv) and their bytes, and
// collective calls (blocking and non-blocking). A weak-scaling model takes its volumes and message
// counts from these (docs/scaling.md). Collectives' own internal messages are not counted.
struct Traffic {
  std::uint64_t messages = 0, bytes = 0, collectives = 0;
  Traffic operator-(const Traffic& o) const {
    return {messages - o.messages, bytes - o.bytes, collectives - o.collectives};
  }
  Traffic& operator+=(const Traffic& o) {
    messages += o.messages, bytes += o.bytes, collectives += o.collectives;
    return *this;
  }
};
Traffic traffic();

// The MPI time of a stretch of code: Stopwatch w; ...; w.seconds().
class Stopwatch {
 public:
  Stopwatch() : start_(mpi_time::seconds()) {}
  double seconds() const { return mpi_time::seconds() - start_; }

 private:
  double start_;
};

}  // namespace nendo::mpi_time
