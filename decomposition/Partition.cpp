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

namespace {

// Block j goes to rank floor(P * prefix_j / W), prefix_j being the weight of every block before it
// (before: of the blocks before keys[0]); splitter r is the first block assigned to >= r. Splitters
// no block here reaches stay kBlockKeyEnd.
std::vector<BlockKey> first_keys_assigned(int ranks, const std::vector<BlockKey>& keys,
                                          const std::vector<std::uint64_t>& weights, std::uint64_t before,
                                          std::uint64_t total) {
  std::vector<BlockKey> candidates(ranks + 1, kBlockKeyEnd);
  candidates[0] = 0;
  unsigned __int128 prefix = before;
  int next = 1;
  for (std::size_t j = 0; j < keys.size() && next < ranks; ++j) {
    const int assigned = static_cast<int>(prefix * ranks / total);
    while (next <= assigned && next < ranks) candidates[next++] = keys[j];
    prefix += weights[j];
  }
  return candidates;
}

}  // namespace

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
  const std::vector<BlockKey> candidates = first_keys_assigned(ranks, keys, weights, before, total);
  std::vector<BlockKey> splitters(ranks + 1);
  MPI_Allreduce(candidates.data(), splitters.data(), ranks + 1, MPI_UINT64_T, MPI_MIN, comm);
  splitters[ranks] = kBlockKeyEnd;
  return Partition(std::move(splitters));
}

Partition Partition::balanced(int ranks, const std::vector<BlockKey>& keys,
                              const std::vector<std::uint64_t>& weights) {
  std::uint64_t total = 0;
  for (auto w : weights) total += w;
  if (total == 0) return Partition(ranks);
  std::vector<BlockKey> splitters = first_keys_assigned(ranks, keys, weights, 0, total);
  splitters[ranks] = kBlockKeyEnd;
  return Partition(std::move(splitters));
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
