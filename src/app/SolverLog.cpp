#include "app/SolverLog.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "core/Error.hpp"
#include "core/Mpi.hpp"

namespace nendo {

namespace {
constexpr const char* kHeader =
    "step,time,dt,substeps,newton_iterations,ksp_iterations,line_search_halvings,gradient_steps,"
    "relative_residual,residual_cells";
}

SolverLog::SolverLog(MPI_Comm comm, const std::string& directory, std::optional<long> resume_after_step)
    : path_(directory + "/solver.csv") {
  int ok = 1;
  if (mpi::rank(comm) == 0) {
    std::vector<std::string> kept;
    if (resume_after_step) {
      std::ifstream in(path_);
      std::string line;
      for (bool header = true; std::getline(in, line); header = false)
        if (!header && !line.empty() && std::stol(line.substr(0, line.find(','))) <= *resume_after_step)
          kept.push_back(line);
    }
    file_ = std::fopen(path_.c_str(), "w");
    if (file_) {
      std::fprintf(file_, "%s\n", kHeader);
      for (const std::string& line : kept) std::fprintf(file_, "%s\n", line.c_str());
      std::fflush(file_);
    } else {
      ok = 0;
    }
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, comm);
  if (!ok) throw CollectiveError("cannot write " + path_);
}

SolverLog::~SolverLog() {
  if (file_) std::fclose(file_);
}

void SolverLog::append(long step, double time, double dt, const SolverStats& s) {
  if (!file_) return;
  fmt::print(file_, "{},{:.17g},{:.17g},{},{},{},{},{},{:.6e},{:.6e}\n", step, time, dt, s.substeps,
             s.newton_iterations, s.ksp_iterations, s.line_search_halvings, s.gradient_steps, s.residual,
             s.scaled_residual);
  std::fflush(file_);
}

}  // namespace nendo
