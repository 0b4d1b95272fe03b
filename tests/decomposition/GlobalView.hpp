#pragma once
// Test-only helpers for the decomposition tests: reproducible pseudo-random numbers, a global view
// of distributed data (the solver never gathers global state; a test does, to state what the whole
// system must look like), and partitions that leave some rank with nothing.
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <vector>

#include "core/Mpi.hpp"
#include "core/Types.hpp"
#include "decomposition/Partition.hpp"

namespace nendo::testing {

// splitmix64: a bijection of 64-bit integers, so distinct inputs give distinct ids.
inline std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
inline std::uint64_t hash(std::uint64_t a, std::uint64_t b, std::uint64_t c = 0, std::uint64_t d = 0) {
  return splitmix(splitmix(splitmix(splitmix(a) ^ b) ^ c) ^ d);
}
// Uniform in [0, 1).
inline Real unit(std::uint64_t a, std::uint64_t b, std::uint64_t c = 0) {
  return static_cast<Real>(hash(a, b, c) >> 11) * 0x1.0p-53;
}

// Every rank's `local`, concatenated in rank order, on every rank.
template <class T>
std::vector<T> all_gather(MPI_Comm comm, const std::vector<T>& local) {
  static_assert(std::is_trivially_copyable_v<T>);
  const int ranks = mpi::size(comm);
  int bytes = static_cast<int>(local.size() * sizeof(T));
  std::vector<int> counts(ranks), displs(ranks);
  MPI_Allgather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), 0);
  std::vector<unsigned char> all(displs.back() + counts.back());
  MPI_Allgatherv(local.data(), bytes, MPI_BYTE, all.data(), counts.data(), displs.data(), MPI_BYTE, comm);
  std::vector<T> out(all.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), all.data(), all.size());
  return out;
}

// The number of ranks for which `flag` holds.
inline int count_ranks(MPI_Comm comm, bool flag) {
  int mine = flag ? 1 : 0, total = 0;
  MPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, comm);
  return total;
}

// Partitions of a global, sorted, duplicate-free list of particle-block keys. The Even* cuts give
// the keys in equal counts to a contiguous run of ranks and leave the others a range with no
// particle block in it.
enum class Cut {
  AllOnRankZero,     // Partition(P): ranks 1.. own nothing
  FirstRankEmpty,    // rank 0 owns [0, 0)
  LastRankEmpty,     // rank P-1 owns [end, end)
  LastRankGridOnly,  // rank P-1 owns only keys above every particle block: grid blocks, no particles
};

inline const char* cut_name(Cut cut) {
  switch (cut) {
    case Cut::AllOnRankZero:
      return "AllOnRankZero";
    case Cut::FirstRankEmpty:
      return "FirstRankEmpty";
    case Cut::LastRankEmpty:
      return "LastRankEmpty";
    case Cut::LastRankGridOnly:
      return "LastRankGridOnly";
  }
  return "?";
}

inline Partition cut_keys(const std::vector<BlockKey>& keys, int ranks, Cut cut) {
  if (cut == Cut::AllOnRankZero || keys.empty() || ranks == 1) return Partition(ranks);
  const int first = cut == Cut::FirstRankEmpty ? 1 : 0;
  const int last = cut == Cut::FirstRankEmpty ? ranks : ranks - 1;  // ranks [first, last) share the keys
  const std::size_t n = keys.size(), used = static_cast<std::size_t>(last - first);
  std::vector<BlockKey> splitters(ranks + 1, kBlockKeyEnd);
  for (int r = 0; r <= first; ++r) splitters[r] = 0;
  for (std::size_t i = 1; i < used; ++i) splitters[first + i] = keys[i * n / used];
  if (last < ranks) splitters[last] = cut == Cut::LastRankGridOnly ? keys.back() + 1 : kBlockKeyEnd;
  return Partition(std::move(splitters));
}

}  // namespace nendo::testing
