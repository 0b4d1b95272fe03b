// The machine's own ceilings for one core, the roofline the MPM kernels are compared with
// (docs/performance.md): peak double-precision FMA throughput with 4-wide lanes (what the kernels
// use: AVX2 and AVX-512 machines alike) and the memory bandwidth of a STREAM triad
// a[i] = b[i] + s c[i] on arrays far larger than the caches. Medians of 5.
//
//   build/jobs/bench/nendo_roofline_bench [--megabytes 512]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/Lanes4.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// 12 independent chains of 4-wide FMAs: enough in flight to cover the FMA latency on the cores
// the project runs on. Returns GFLOP/s (an FMA is 2 flops per lane).
double fma_gflops() {
  constexpr int kChains = 12;
  constexpr long kIterations = 20'000'000;
  std::vector<double> rates;
  for (int repeat = 0; repeat < 5; ++repeat) {
    nendo::Lanes4 acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = nendo::Lanes4{1.0 + c, 2.0, 3.0, 4.0} * 1e-3;
    const nendo::Lanes4 a = {0.999999, 0.999998, 0.999997, 0.999996};
    const nendo::Lanes4 b = {1e-7, 2e-7, 3e-7, 4e-7};
    const auto start = Clock::now();
    for (long i = 0; i < kIterations; ++i)
      for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * a + b;
    const double t = seconds_since(start);
    double sum = 0;
    for (int c = 0; c < kChains; ++c) sum += acc[c][0] + acc[c][3];
    if (sum == 42.0) std::printf(" ");  // keeps the chains alive
    rates.push_back(2.0 * 4 * kChains * kIterations / t / 1e9);
  }
  return median(rates);
}

// STREAM triad: 24 bytes per element counted (two reads and one write; the write-allocate read
// that a cache without streaming stores adds is not counted, as STREAM does). Returns GB/s.
double triad_gbytes(std::size_t megabytes) {
  const std::size_t n = megabytes * 1024 * 1024 / (3 * sizeof(double));
  std::vector<double> a(n, 0.0), b(n, 1.0), c(n, 2.0);
  std::vector<double> rates;
  for (int repeat = 0; repeat < 5; ++repeat) {
    const auto start = Clock::now();
    for (std::size_t i = 0; i < n; ++i) a[i] = b[i] + 3.0 * c[i];
    const double t = seconds_since(start);
    rates.push_back(24.0 * n / t / 1e9);
    if (a[n / 2] != 7.0) std::abort();
  }
  return median(rates);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t megabytes = 512;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--megabytes" && i + 1 < argc) {
      megabytes = std::stoul(argv[++i]);
    } else {
      std::fprintf(stderr, "unknown option %s (usage: [--megabytes N])\n", arg.c_str());
      return 2;
    }
  }
  std::printf("peak FMA, 4-wide lanes: %.1f GFLOP/s per core (median of 5)\n", fma_gflops());
  std::printf("STREAM triad, %zu MB: %.1f GB/s per core (median of 5)\n", megabytes, triad_gbytes(megabytes));
  return 0;
}
