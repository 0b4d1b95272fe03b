// The cost of the non-finite guard (methods/StateGuard.hpp) that runs after every step of the
// methods that do not check their own state: one pass over every Real field of every particle.
// 1 M particles on one rank, with the field sizes of powder PBD (43 doubles, 348 B with the rest)
// and of slave SPH masters (about 40 doubles). Google Benchmark:
//   mpirun -np 1 build/jobs/bench/nendo_guard_bench
#include <benchmark/benchmark.h>
#include <mpi.h>

#include "decomposition/Space.hpp"
#include "methods/StateGuard.hpp"

namespace {

std::unique_ptr<nendo::Space> make_space(std::size_t particles, int real_components) {
  nendo::ParticleSet ps(3);
  ps.add_field("state", nendo::FieldType::Real, real_components - 3);  // besides the position
  ps.add_field("material", nendo::FieldType::Int32, 1);
  ps.resize(particles);
  for (std::size_t p = 0; p < particles; ++p) {
    ps.ids()[p] = p;
    for (int a = 0; a < 3; ++a) ps.positions()[3 * p + a] = 0.01 * static_cast<double>((p >> (7 * a)) & 127);
    for (int k = 0; k < real_components - 3; ++k) ps.real("state")[(real_components - 3) * p + k] = 0.5 * k;
  }
  nendo::BlockGeometry g;
  g.dx = 0.02;
  auto space = std::make_unique<nendo::Space>(MPI_COMM_WORLD, g, std::move(ps));
  space->distribute();
  return space;
}

void RequireFiniteState(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0));
  const int components = static_cast<int>(state.range(1));
  const std::unique_ptr<nendo::Space> space = make_space(n, components);
  long step = 0;
  for (auto _ : state) nendo::require_finite_state(*space, ++step);
  state.counters["particle-steps/s"] =
      benchmark::Counter(static_cast<double>(n) * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["bytes/particle"] = 8.0 * components;  // scanned per particle and step
}
BENCHMARK(RequireFiniteState)->Args({1'000'000, 43})->Args({1'000'000, 12})->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  MPI_Finalize();
  return 0;
}
