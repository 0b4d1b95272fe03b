#pragma once
// DIR/diagnostics.csv: one line per output time with the run's global numbers, written by rank 0.
// Pure formatting: the caller computes the global values (reductions included) and passes the
// same row on every rank.
//
//   step,time,dt,particles,kinetic_energy,elastic_energy,momentum_x,momentum_y,momentum_z,mass[,extra...]
//
// Reals are written with %.17g (they read back bit for bit), integers as integers; each line is
// flushed when written, so the file is current while the run goes on.
#include <mpi.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace nendo {

struct DiagnosticsRow {
  std::int64_t step = 0;
  double time = 0;
  double dt = 0;
  std::uint64_t particles = 0;
  double kinetic_energy = 0;
  double elastic_energy = 0;
  std::array<double, 3> momentum = {0, 0, 0};  // momentum_z is 0 in 2D
  double mass = 0;
  std::vector<double> extra;  // one value per extra column, in their order
};

class DiagnosticsCsv {
 public:
  // Collective. directory must exist. A new run (resume_after_step empty) starts the file over
  // with the header. A restart passes the step it restarts from: the rows of the existing file
  // with step <= resume_after_step are kept (a missing file starts over), later rows are dropped,
  // and the header must match. Extra column names must be non-empty and free of ',', '"' and line
  // breaks. Throws nendo::Error naming the path on every rank on failure.
  DiagnosticsCsv(MPI_Comm comm, const std::string& directory, std::vector<std::string> extra_columns = {},
                 std::optional<std::int64_t> resume_after_step = std::nullopt);
  ~DiagnosticsCsv();
  DiagnosticsCsv(const DiagnosticsCsv&) = delete;
  DiagnosticsCsv& operator=(const DiagnosticsCsv&) = delete;

  // Collective (one small broadcast of rank 0's status). Rank 0 appends the row and flushes;
  // the other ranks only learn whether it worked. row.extra must have one value per extra column.
  void append(const DiagnosticsRow& row);

  const std::string& path() const { return path_; }
  const std::vector<std::string>& columns() const { return columns_; }
  // The header line (no newline) and one formatted line (no newline), for tests and tools.
  std::string header() const;
  std::string format(const DiagnosticsRow& row) const;

 private:
  MPI_Comm comm_;
  std::string path_;
  std::vector<std::string> columns_;
  std::size_t extra_count_ = 0;
  std::FILE* file_ = nullptr;  // rank 0 only
};

}  // namespace nendo
