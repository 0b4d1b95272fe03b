#pragma once
// DIR/solver.csv: one line per step of an implicit run, written by rank 0 — what the Newton–Krylov
// solver did (spreadsheets and jobs/ scripts read it):
//
//   step,time,dt,substeps,newton_iterations,ksp_iterations,line_search_halvings,gradient_steps,
//   relative_residual,residual_cells
//
// A restart from step s keeps the rows up to s and drops the rest, like diagnostics.csv.
#include <mpi.h>

#include <cstdio>
#include <optional>
#include <string>

#include "methods/Method.hpp"

namespace nendo {

class SolverLog {
 public:
  // Collective; the directory exists. Throws nendo::Error on every rank when it cannot be written.
  SolverLog(MPI_Comm comm, const std::string& directory, std::optional<long> resume_after_step);
  ~SolverLog();
  SolverLog(const SolverLog&) = delete;
  SolverLog& operator=(const SolverLog&) = delete;

  void append(long step, double time, double dt, const SolverStats& stats);  // rank 0 writes
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;  // rank 0 only
};

}  // namespace nendo
