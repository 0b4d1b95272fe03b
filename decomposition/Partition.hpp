#pragma once
// The space-filling-curve partition: rank r owns the block keys [split_r, split_{r+1}). Every rank
// holds the P+1 splitters, so the owner of any block is a binary search. The partition is a pure
// function of (block weights, rank count), so a run restarted on another rank count recomputes it.
#include <mpi.h>

#include <vector>

#include "decomposition/BlockKey.hpp"

namespace nendo {

class Partition {
 public:
  // Everything on rank 0 until the first balance.
  explicit Partition(int ranks);
  explicit Partition(std::vector<BlockKey> splitters);

  // keys: this rank's blocks, sorted, disjoint from other ranks' and in rank order (every key here
  // is >= every key on lower ranks); weights: integer work per block. One exclusive scan, one
  // allreduce of the total and one allreduce (min) of the P+1 splitters.
  static Partition balanced(MPI_Comm comm, const std::vector<BlockKey>& keys,
                            const std::vector<std::uint64_t>& weights);
  // Equal particle counts for particles anywhere (keys: one per particle of this rank, in any
  // order; `keys` is sorted in place): the splitters found by bisection over the key space, 64
  // allreduces of P counts, nothing gathered. A provisional partition for freshly seeded
  // particles, so that no rank receives more than its share before the first balance.
  static Partition by_count(MPI_Comm comm, std::vector<BlockKey>& keys);
  // Key ranges of equal length between min_key and max_key (a provisional partition for blocks
  // scattered over ranks in no particular order, before the first balance).
  static Partition uniform(int ranks, BlockKey min_key, BlockKey max_key);

  int ranks() const { return static_cast<int>(splitters_.size()) - 1; }
  int owner(BlockKey key) const;
  BlockKey begin(int rank) const { return splitters_[rank]; }
  BlockKey end(int rank) const { return splitters_[rank + 1]; }
  const std::vector<BlockKey>& splitters() const { return splitters_; }
  bool operator==(const Partition& other) const { return splitters_ == other.splitters_; }
  bool operator!=(const Partition& other) const { return !(*this == other); }

 private:
  std::vector<BlockKey> splitters_;
};

}  // namespace nendo
