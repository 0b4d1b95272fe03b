#include "decomposition/LoadBalance.hpp"

#include <numeric>

#include "core/Mpi.hpp"

namespace nendo {

std::vector<std::uint64_t> block_weights(const ParticleBlocks& blocks, const BlockGeometry& geometry) {
  std::vector<std::uint64_t> w(blocks.count());
  for (std::size_t b = 0; b < blocks.count(); ++b) w[b] = block_weight(blocks.particles(b), geometry);
  return w;
}

std::vector<std::uint64_t> timed_weights(std::vector<std::uint64_t> counted, double work_seconds) {
  const double total = static_cast<double>(std::accumulate(counted.begin(), counted.end(), std::uint64_t{0}));
  if (total <= 0 || !(work_seconds > 0)) return counted;
  const double nanoseconds_per_unit = 1e9 * work_seconds / total;
  for (std::uint64_t& w : counted)
    w = static_cast<std::uint64_t>(static_cast<double>(w) * nanoseconds_per_unit + 0.5);
  return counted;
}

double load_imbalance(MPI_Comm comm, const std::vector<std::uint64_t>& weights) {
  const std::uint64_t local = std::accumulate(weights.begin(), weights.end(), std::uint64_t{0});
  std::uint64_t max = 0, total = 0;
  MPI_Allreduce(&local, &max, 1, MPI_UINT64_T, MPI_MAX, comm);
  MPI_Allreduce(&local, &total, 1, MPI_UINT64_T, MPI_SUM, comm);
  if (total == 0) return 1.0;
  return static_cast<double>(max) * mpi::size(comm) / static_cast<double>(total);
}

}  // namespace nendo
