#pragma once
// A fresh, empty directory for one MPI test: $NENDO_BINARY_DIR/tests/<group>/npP/<test>, so that the
// 1..4-rank runs of a test never share files. Collective over MPI_COMM_WORLD.
#include <mpi.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace nendo {

inline std::string fresh_directory(const std::string& group, const std::string& test) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const char* binary = std::getenv("NENDO_BINARY_DIR");
  const std::filesystem::path directory =
      std::filesystem::path(binary ? binary : ".") / "tests" / group / ("np" + std::to_string(ranks)) / test;
  if (rank == 0) {
    std::filesystem::remove_all(directory);
    std::filesystem::create_directories(directory);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return directory.string();
}

}  // namespace nendo
