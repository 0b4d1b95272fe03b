#include "decomposition/Partition.hpp"

#include <algorithm>

#include "core/Error.hpp"
#include "core/Mpi.hpp"

namespace nendo {

Partition::Partition(int ranks) : splitters_(ranks + 1, kBlockKeyEnd) { splitters_[0] = 0; }

Partition::Partition(std::vector<BlockKey> splitters) : splitters_(std::move(splitters)) {
  if (splitters_.size() < 2 || splitters_.front() != 0 || splitters_.back() != kBlockKeyEnd ||
      !std::is_sorted(splitters_.begin(), splitters_.end()))
    throw Error("invalid partition splitters");
}

int Partition::owner(BlockKey key) const {
  auto it = std::upper_bound(splitters_.begin() + 1, splitters_.end() - 1, key);
  return static_cast<int>(it - splitters_.begin()) - 1;
}

Partition Partition::balanced(MPI_Comm comm, const std::vector<BlockKey>& keys,
                              const std::vector<std::uint64_t>& weights) {
  const int ranks = mpi::size(comm);
  std::uint64_t local = 0;
  for (auto w : weights) local += w;
  std::uint64_t before = 0, total = 0;
  MPI_Exscan(&local, &before, 1, MPI_UINT64_T, MPI_SUM, comm);
  if (mpi::rank(comm) == 0) before = 0;  // MPI_Exscan leaves rank 0's result undefined
  MPI_Allreduce(&local, &total, 1, MPI_UINT64_T, MPI_SUM, comm);
  if (total == 0) return Partition(ranks);

  // Block j goes to rank floor(P * prefix_j / W); splitter r is the first block assigned to >= r.
  std::vector<BlockKey> candidates(ranks + 1, kBlockKeyEnd);
  candidates[0] = 0;
  unsigned __int128 prefix = before;
  int next = 1;
  for (std::size_t j = 0; j < keys.size() && next < ranks; ++j) {
    const int assigned = static_cast<int>(prefix * ranks / total);
    while (next <= assigned && next < ranks) candidates[next++] = keys[j];
    prefix += weights[j];
  }
  std::vector<BlockKey> splitters(ranks + 1);
  MPI_Allreduce(candidates.data(), splitters.data(), ranks + 1, MPI_UINT64_T, MPI_MIN, comm);
  splitters[ranks] = kBlockKeyEnd;
  return Partition(std::move(splitters));
}

Partition Partition::by_count(MPI_Comm comm, std::vector<BlockKey>& keys) {
  const int ranks = mpi::size(comm);
  std::sort(keys.begin(), keys.end());
  std::uint64_t total = keys.size();
  MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_UINT64_T, MPI_SUM, comm);
  if (total == 0 || ranks == 1) return Partition(ranks);
  // Splitter r: the least key with at least r * total / P particles below it.
  std::vector<BlockKey> lo(ranks + 1, 0), hi(ranks + 1, kBlockKeyEnd);
  std::vector<std::uint64_t> below(ranks + 1);
  for (;;) {
    bool open = false;
    for (int r = 1; r < ranks; ++r) {
      const BlockKey mid = lo[r] + (hi[r] - lo[r]) / 2;
      below[r] = lo[r] < hi[r] ? std::lower_bound(keys.begin(), keys.end(), mid) - keys.begin() : 0;
      open = open || lo[r] < hi[r];
    }
    if (!open) break;  // the same on every rank: lo and hi follow the global counts
    MPI_Allreduce(MPI_IN_PLACE, below.data(), ranks + 1, MPI_UINT64_T, MPI_SUM, comm);
    for (int r = 1; r < ranks; ++r) {
      if (lo[r] == hi[r]) continue;
      const BlockKey mid = lo[r] + (hi[r] - lo[r]) / 2;
      const unsigned __int128 target = static_cast<unsigned __int128>(total) * r / ranks;
      if (below[r] >= target)
        hi[r] = mid;
      else
        lo[r] = mid + 1;
    }
  }
  lo[0] = 0, lo[ranks] = kBlockKeyEnd;
  return Partition(std::move(lo));
}

Partition Partition::uniform(int ranks, BlockKey min_key, BlockKey max_key) {
  std::vector<BlockKey> splitters(ranks + 1);
  const unsigned __int128 span = static_cast<unsigned __int128>(max_key - min_key) + 1;
  for (int r = 0; r <= ranks; ++r) splitters[r] = min_key + static_cast<BlockKey>(span * r / ranks);
  splitters[0] = 0;
  splitters[ranks] = kBlockKeyEnd;
  return Partition(std::move(splitters));
}

}  // namespace nendo
