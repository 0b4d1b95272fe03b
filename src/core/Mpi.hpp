#pragma once
// Thin helpers over the MPI C API: rank/size queries and datatype traits.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace nendo::mpi {

inline int rank(MPI_Comm comm) {
  int r = 0;
  MPI_Comm_rank(comm, &r);
  return r;
}

inline int size(MPI_Comm comm) {
  int s = 1;
  MPI_Comm_size(comm, &s);
  return s;
}

template <class T>
MPI_Datatype datatype();
template <>
inline MPI_Datatype datatype<double>() {
  return MPI_DOUBLE;
}
template <>
inline MPI_Datatype datatype<std::int32_t>() {
  return MPI_INT32_T;
}
template <>
inline MPI_Datatype datatype<std::int64_t>() {
  return MPI_INT64_T;
}
template <>
inline MPI_Datatype datatype<std::uint64_t>() {
  return MPI_UINT64_T;
}
template <>
inline MPI_Datatype datatype<std::uint8_t>() {
  return MPI_UINT8_T;
}

// Collective: every rank's text becomes root's.
inline void broadcast(std::string& text, int root, MPI_Comm comm) {
  unsigned long long size = text.size();
  MPI_Bcast(&size, 1, MPI_UNSIGNED_LONG_LONG, root, comm);
  text.resize(size);
  MPI_Bcast(text.data(), static_cast<int>(size), MPI_CHAR, root, comm);
}

// Collective: every rank's values become root's (trivially copyable T, any size: sent in pieces
// below INT_MAX bytes).
template <class T>
void broadcast(std::vector<T>& values, int root, MPI_Comm comm) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::uint64_t count = values.size();
  MPI_Bcast(&count, 1, MPI_UINT64_T, root, comm);
  values.resize(count);
  auto* bytes = reinterpret_cast<unsigned char*>(values.data());
  const std::size_t total = count * sizeof(T), piece = INT_MAX / 2;
  for (std::size_t at = 0; at < total; at += piece)
    MPI_Bcast(bytes + at, static_cast<int>(std::min(piece, total - at)), MPI_BYTE, root, comm);
}

// Collective: every rank's values, in rank order, on every rank (trivially copyable T). Counts
// are in elements of T, so the total may exceed INT_MAX bytes.
template <class T>
std::vector<T> all_gather(const std::vector<T>& mine, MPI_Comm comm) {
  static_assert(std::is_trivially_copyable_v<T>);
  const int ranks = size(comm);
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(ranks)), offsets(static_cast<std::size_t>(ranks) + 1, 0);
  MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  for (int r = 0; r < ranks; ++r) offsets[r + 1] = offsets[r] + counts[r];
  std::vector<T> all(static_cast<std::size_t>(offsets[ranks]));
  MPI_Datatype element;
  MPI_Type_contiguous(static_cast<int>(sizeof(T)), MPI_BYTE, &element);
  MPI_Type_commit(&element);
  MPI_Allgatherv(mine.data(), count, element, all.data(), counts.data(), offsets.data(), element, comm);
  MPI_Type_free(&element);
  return all;
}

}  // namespace nendo::mpi
