#pragma once
// Block weights and the re-balancing decision. The new partition comes from Partition::balanced()
// (one exclusive scan, one allreduce); the particles then move with ParticleMigration.
#include <mpi.h>

#include <vector>

#include "decomposition/ParticleBlocks.hpp"
#include "decomposition/Partition.hpp"

namespace nendo {

struct LoadBalancePolicy {
  int every_steps = 100;   // consider re-balancing at most this often (0: never)
  double threshold = 1.1;  // ... and only when max/mean load exceeds this
};

// Work per block: its particles plus its grid nodes (P2G/G2P scale with the first, the grid update
// with the second).
std::vector<std::uint64_t> block_weights(const ParticleBlocks& blocks, const BlockGeometry& geometry);
// max over ranks / mean over ranks of the summed block weights (collective); 1 when all is empty.
double load_imbalance(MPI_Comm comm, const std::vector<std::uint64_t>& weights);
Partition balanced_partition(MPI_Comm comm, const ParticleBlocks& blocks, const BlockGeometry& geometry);

}  // namespace nendo
