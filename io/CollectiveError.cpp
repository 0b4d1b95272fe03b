#include "io/CollectiveError.hpp"

#include <climits>

#include "core/Error.hpp"
#include "core/Mpi.hpp"

namespace nendo {

void raise_collectively(MPI_Comm comm, const std::string& local_error) {
  const int mine = local_error.empty() ? INT_MAX : mpi::rank(comm);
  int first = INT_MAX;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == INT_MAX) return;
  std::string message = local_error;
  mpi::broadcast(message, first, comm);
  throw CollectiveError(message);
}

}  // namespace nendo
