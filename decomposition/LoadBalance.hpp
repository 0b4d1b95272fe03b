#pragma once
// Block weights and the re-balancing decision. The new partition comes from Partition::balanced()
// (one exclusive scan, one allreduce); the particles then move with ParticleMigration.
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "decomposition/ParticleBlocks.hpp"
#include "decomposition/Partition.hpp"

namespace nendo {

struct LoadBalancePolicy {
  int every_steps = 100;   // consider re-balancing at most this often (0: never)
  double threshold = 1.1;  // ... and only when max/mean load exceeds this
  // The load: false, counted (block_weights); true, each rank's measured work time since the last
  // check, shared among its blocks in proportion to their counted weights.
  bool by_time = false;
};

// Work per block: its particles plus its grid nodes (P2G/G2P scale with the first, the grid update
// with the second).
std::vector<std::uint64_t> block_weights(const ParticleBlocks& blocks, const BlockGeometry& geometry);
// The weight of one block of `particles` particles.
inline std::uint64_t block_weight(std::uint64_t particles, const BlockGeometry& geometry) {
  return particles + static_cast<std::uint64_t>(geometry.nodes_per_block());
}
// The counted weights rescaled so that they sum to this rank's measured work (in nanoseconds):
// a rank whose blocks cost more per particle than the count says (more neighbours, a costlier
// material, a slower core) hands over fewer of them. Unchanged when the rank counted or measured
// nothing.
std::vector<std::uint64_t> timed_weights(std::vector<std::uint64_t> counted, double work_seconds);
// max over ranks / mean over ranks of the summed block weights (collective); 1 when all is empty.
double load_imbalance(MPI_Comm comm, const std::vector<std::uint64_t>& weights);

}  // namespace nendo
