#include "io/CollectiveError.hpp"

#include <climits>

#include "core/Error.hpp"
#include "core/Mpi.hpp"

namespace nendo {

void raise_collectively(MPI_Comm comm, const std::string& local_error) {
  const int rank = mpi::rank(comm);
  const int mine = local_error.empty() ? INT_MAX : rank;
  int first = INT_MAX;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == INT_MAX) return;
  int length = rank == first ? static_cast<int>(local_error.size()) : 0;
  MPI_Bcast(&length, 1, MPI_INT, first, comm);
  std::string message = rank == first ? local_error : std::string(static_cast<std::size_t>(length), ' ');
  MPI_Bcast(message.data(), length, MPI_CHAR, first, comm);
  throw CollectiveError(message);
}

}  // namespace nendo
