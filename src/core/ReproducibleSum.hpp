#pragma once
// Global sums of doubles that do not depend on the order of the terms or on how they are split
// over ranks, so that diagnostics are bitwise identical on any rank count and across restarts.
// Each term is scaled by a power of two fixed by the largest term of its column over all ranks,
// truncated to a 128-bit integer and summed as an integer (integer addition is associative); the
// result is within 2^-96 of the largest term of exact, far inside a double's rounding.
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace nendo {

namespace detail {
inline void add_int128(void* in, void* inout, int* length, MPI_Datatype*) {
  auto* a = static_cast<__int128*>(in);
  auto* b = static_cast<__int128*>(inout);
  for (int i = 0; i < *length; ++i) b[i] += a[i];
}
}  // namespace detail

// Collective. columns[c] holds this rank's terms of sum c; returns the global sums, the same on
// every rank. Non-finite terms make their sum the plain (order-dependent) MPI sum.
inline std::vector<double> reproducible_sums(MPI_Comm comm, const std::vector<std::vector<double>>& columns) {
  const int n = static_cast<int>(columns.size());
  std::vector<double> largest(n, 0.0), plain(n, 0.0);
  for (int c = 0; c < n; ++c)
    for (double term : columns[c]) largest[c] = std::fmax(largest[c], std::fabs(term)), plain[c] += term;
  MPI_Allreduce(MPI_IN_PLACE, largest.data(), n, MPI_DOUBLE, MPI_MAX, comm);
  MPI_Allreduce(MPI_IN_PLACE, plain.data(), n, MPI_DOUBLE, MPI_SUM, comm);  // NaN/inf detection
  // Terms become integers below 2^97: a sum of up to 2^30 of them fits in 127 bits.
  std::vector<int> shift(n, 0);
  for (int c = 0; c < n; ++c)
    if (largest[c] > 0 && std::isfinite(largest[c])) shift[c] = std::ilogb(largest[c]) - 96;
  std::vector<__int128> sums(n, 0);
  for (int c = 0; c < n; ++c)
    if (std::isfinite(plain[c]))  // every rank agrees: plain is global
      for (double term : columns[c]) sums[c] += static_cast<__int128>(std::ldexp(term, -shift[c]));
  MPI_Datatype int128;
  MPI_Type_contiguous(16, MPI_BYTE, &int128);
  MPI_Type_commit(&int128);
  MPI_Op add;
  MPI_Op_create(&detail::add_int128, 1, &add);
  MPI_Allreduce(MPI_IN_PLACE, sums.data(), n, int128, add, comm);
  MPI_Op_free(&add);
  MPI_Type_free(&int128);
  std::vector<double> result(n);
  for (int c = 0; c < n; ++c)
    result[c] = std::isfinite(plain[c]) ? std::ldexp(static_cast<double>(sums[c]), shift[c]) : plain[c];
  return result;
}

// Collective: Σ_i x_i y_i over every rank's n terms, by the same integer accumulation, so that a
// Krylov solver's dot products (and hence its iterates) do not depend on the rank count. Two
// allreduces; a non-finite term makes the result NaN.
inline double reproducible_dot(MPI_Comm comm, const double* x, const double* y, std::size_t n) {
  static MPI_Datatype int128 = MPI_DATATYPE_NULL;
  static MPI_Op add = MPI_OP_NULL;
  if (int128 == MPI_DATATYPE_NULL) {
    MPI_Type_contiguous(16, MPI_BYTE, &int128);
    MPI_Type_commit(&int128);
    MPI_Op_create(&detail::add_int128, 1, &add);
  }
  double largest = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double term = std::fabs(x[i] * y[i]);
    if (!(term <= largest)) largest = term != term ? std::numeric_limits<double>::infinity() : term;
  }
  MPI_Allreduce(MPI_IN_PLACE, &largest, 1, MPI_DOUBLE, MPI_MAX, comm);
  if (!std::isfinite(largest)) return std::numeric_limits<double>::quiet_NaN();
  if (largest == 0) return 0;
  // Terms scaled below 2^81 and truncated to integers, each split exactly into t = hi 2^40 + lo
  // (hi truncated, so lo has t's sign and hi 2^40 + trunc(lo) = trunc(t)): two 64-bit sums
  // without overflow for up to 2^22 terms, and no slow double-to-__int128 conversion per term.
  const int shift = std::ilogb(largest) - 80;
  const double scale = std::ldexp(1.0, -shift);  // a power of two: x y scale is exactly ldexp(x y, -shift)
  constexpr double kHigh = 0x1p-40, kHighBack = 0x1p40;
  std::int64_t high = 0, low = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double t = x[i] * y[i] * scale;
    const auto h = static_cast<std::int64_t>(t * kHigh);
    high += h;
    low += static_cast<std::int64_t>(t - static_cast<double>(h) * kHighBack);
  }
  __int128 sum = (static_cast<__int128>(high) << 40) + low;
  MPI_Allreduce(MPI_IN_PLACE, &sum, 1, int128, add, comm);
  return std::ldexp(static_cast<double>(sum), shift);
}

}  // namespace nendo
