#pragma once
// Turning one rank's failure into the same nendo::CollectiveError on every rank, so that a check
// made on one rank (rank 0 looks at the directory, each rank at its own fields) never leaves the
// other ranks waiting in the next collective call.
#include <mpi.h>

#include <climits>
#include <string>

#include "core/Error.hpp"
#include "core/Mpi.hpp"

namespace nendo {

// Collective over comm. If local_error is non-empty on any rank, every rank throws
// nendo::CollectiveError with the message of the lowest such rank; otherwise returns on every rank.
inline void raise_collectively(MPI_Comm comm, const std::string& local_error) {
  const int mine = local_error.empty() ? INT_MAX : mpi::rank(comm);
  int first = INT_MAX;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == INT_MAX) return;
  std::string message = local_error;
  mpi::broadcast(message, first, comm);
  throw CollectiveError(message);
}

}  // namespace nendo
