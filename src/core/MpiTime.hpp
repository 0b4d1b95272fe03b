#pragma once
// Wall time this rank spends inside MPI calls that can wait for other ranks: collectives, waits,
// tests, probes and blocking point-to-point calls. Measured through MPI's profiling interface
// (each such MPI_X is defined here and calls PMPI_X between two clock reads), so every library of
// the process is counted — nendo's exchanges, PETSc's reductions, HDF5's metadata collectives —
// without a change at any call site. MPI-IO is not counted (output has its own timing).
//
// The share of a step spent here is the communication cost plus the wait for slower ranks (load
// imbalance); the rest of the step is this rank's own work, which the load balancer can weigh.

namespace nendo::mpi_time {

// Seconds inside such calls on this rank since MPI_Init.
double seconds();

// The MPI time of a stretch of code: Stopwatch w; ...; w.seconds().
class Stopwatch {
 public:
  Stopwatch() : start_(mpi_time::seconds()) {}
  double seconds() const { return mpi_time::seconds() - start_; }

 private:
  double start_;
};

}  // namespace nendo::mpi_time
