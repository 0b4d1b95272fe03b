#pragma once
// The validation tests' numbers for docs/validation.md: rank 0 writes
// $NENDO_BINARY_DIR/validation/<name>.csv (ctest sets the variable; nothing is written when it is
// unset), aside and renamed, so that concurrent 1- and 2-rank runs never leave a mix.
// jobs/validation/plot_*.py turn the files into the plots of the docs.
#include <mpi.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/Mpi.hpp"
#include "core/Types.hpp"

namespace nendo::testing {

inline void write_csv(const std::string& name, const std::string& header,
                      const std::vector<std::vector<Real>>& rows) {
  if (mpi::rank(MPI_COMM_WORLD) != 0) return;
  const char* binary = std::getenv("NENDO_BINARY_DIR");
  if (binary == nullptr) return;
  const std::filesystem::path dir = std::filesystem::path(binary) / "validation";
  std::filesystem::create_directories(dir);
  const std::filesystem::path aside = dir / (name + ".csv." + std::to_string(::getpid()));
  {
    std::ofstream out(aside);
    out << header << '\n';
    out.precision(17);
    for (const auto& row : rows) {
      for (std::size_t k = 0; k < row.size(); ++k) out << (k ? "," : "") << row[k];
      out << '\n';
    }
  }
  std::filesystem::rename(aside, dir / (name + ".csv"));
}

}  // namespace nendo::testing
