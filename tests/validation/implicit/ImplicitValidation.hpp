#pragma once
// Helpers shared by the implicit validation tests (tests/validation/implicit/).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "MpmHarness.hpp"

namespace nendo::testing {

inline std::string num(Real x) {
  char s[32];
  std::snprintf(s, sizeof s, "%.17g", x);
  return s;
}

// Short form for labels: 0.005, 1e+07.
inline std::string label(Real x) {
  char s[32];
  std::snprintf(s, sizeof s, "%g", x);
  return s;
}

// Rank 0 prints one labelled figure.
inline void report(const std::string& what, Real value) {
  if (mpi::rank(MPI_COMM_WORLD) == 0) std::printf("  %-66s %.6g\n", what.c_str(), value);
}

// The positions of all particles by id (0 .. n−1 as seeded), on every rank. Collective.
inline std::vector<Real> positions_by_id(MpmRun& run) {
  ParticleSet& ps = run.particles();
  const int d = run.scene.dimension;
  long local = static_cast<long>(ps.size()), total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  std::vector<Real> x(static_cast<std::size_t>(total) * d, 0.0);
  for (std::size_t p = 0; p < ps.size(); ++p) {
    const ParticleId id = ps.ids()[p];
    EXPECT_LT(id, static_cast<ParticleId>(total));
    if (id >= static_cast<ParticleId>(total)) continue;
    for (int a = 0; a < d; ++a) x[d * id + a] = ps.positions()[d * p + a];
  }
  MPI_Allreduce(MPI_IN_PLACE, x.data(), static_cast<int>(x.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return x;
}

// The largest distance between corresponding points of two position lists of dimension d.
inline Real largest_distance(const std::vector<Real>& a, const std::vector<Real>& b, int d) {
  Real worst = 0;
  for (std::size_t p = 0; p + d <= a.size(); p += d) {
    Real s = 0;
    for (int k = 0; k < d; ++k) s += (a[p + k] - b[p + k]) * (a[p + k] - b[p + k]);
    worst = std::max(worst, std::sqrt(s));
  }
  return worst;
}

// Steps an implicit run n times and counts the steps whose Newton solve failed and were retried
// in halves (solver_stats().substeps > 1).
inline long step_counting_retries(MpmRun& run, Real dt, long n) {
  long retried = 0;
  for (long k = 0; k < n; ++k) {
    run.step(dt);
    const SolverStats* stats = run.method->solver_stats();
    if (stats && stats->substeps > 1) ++retried;
  }
  return retried;
}

// Wall-clock seconds since construction.
struct Stopwatch {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
};

}  // namespace nendo::testing
