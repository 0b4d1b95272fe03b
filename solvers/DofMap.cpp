#include "solvers/DofMap.hpp"

namespace nendo {

DofMap::DofMap(MPI_Comm comm, const std::vector<char>& active, int block_size)
    : comm_(comm), block_size_(block_size), local_(active.size(), -1) {
  for (std::size_t i = 0; i < active.size(); ++i)
    if (active[i]) {
      local_[i] = static_cast<PetscInt>(nodes_.size());
      nodes_.push_back(i);
    }
  long long count = static_cast<long long>(nodes_.size()), first = 0, total = 0;
  MPI_Exscan(&count, &first, 1, MPI_LONG_LONG, MPI_SUM, comm);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0) first = 0;  // MPI_Exscan leaves rank 0's result undefined
  MPI_Allreduce(&count, &total, 1, MPI_LONG_LONG, MPI_SUM, comm);
  first_ = static_cast<PetscInt>(first);
  global_ = static_cast<PetscInt>(total);
}

}  // namespace nendo
