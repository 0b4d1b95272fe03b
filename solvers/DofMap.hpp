#pragma once
// The global numbering of a distributed system's unknowns (DESIGN.md "Implicit systems"): each
// rank numbers its owned active nodes (or vertices) in its own order, and rank r's first node is
// the exclusive scan of the counts below it (one MPI_Exscan). Each node carries block_size
// unknowns, numbered consecutively. Ghost copies learn the numbers of the nodes they mirror
// through the method's own ghost exchange; nothing is ever gathered on one rank.
#include <mpi.h>
#include <petscsys.h>

#include <cstddef>
#include <vector>

namespace nendo {

class DofMap {
 public:
  DofMap() = default;
  // active[i] != 0 for each owned node i that carries unknowns. Collective.
  DofMap(MPI_Comm comm, const std::vector<char>& active, int block_size);

  MPI_Comm comm() const { return comm_; }
  int block_size() const { return block_size_; }
  // Owned active nodes, and the unknowns they carry (the local size of vectors and matrices).
  PetscInt owned_nodes() const { return static_cast<PetscInt>(nodes_.size()); }
  PetscInt local_size() const { return owned_nodes() * block_size_; }
  PetscInt first_node() const { return first_; }
  PetscInt global_nodes() const { return global_; }
  // The owned node of local index l, and the local index of owned node i (or -1: inactive).
  std::size_t node(PetscInt l) const { return nodes_[static_cast<std::size_t>(l)]; }
  PetscInt local(std::size_t i) const { return local_[i]; }
  // The global (block) number of owned node i, or -1.
  PetscInt global(std::size_t i) const { return local_[i] < 0 ? -1 : first_ + local_[i]; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int block_size_ = 1;
  PetscInt first_ = 0, global_ = 0;
  std::vector<std::size_t> nodes_;
  std::vector<PetscInt> local_;
};

}  // namespace nendo
