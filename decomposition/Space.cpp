#include "decomposition/Space.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/Mpi.hpp"

namespace nendo {

Space::Space(MPI_Comm comm, const BlockGeometry& geometry, ParticleSet particles)
    : comm_(comm),
      rank_(mpi::rank(comm)),
      geometry_(geometry),
      partition_(mpi::size(comm)),
      particles_(std::move(particles)),
      migration_(comm),
      ghost_(comm, geometry),
      halo_(comm, geometry.dimension) {
  blocks_ = sort_by_block(particles_, geometry_);
}

std::uint64_t Space::global_particles() const {
  std::uint64_t local = particles_.size(), total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_UINT64_T, MPI_SUM, comm_);
  return total;
}

// Particles scattered over the ranks in no particular order (freshly seeded) go first to a
// partition of equal counts, so that no rank holds more than its share plus the buffers of one
// exchange (a partition of equal key ranges gave one rank up to the whole problem for a body that
// fills part of its key range); then the balance by block weights, which decides the result.
void Space::distribute() {
  std::vector<BlockKey> keys;
  keys.reserve(particles_.size());
  const int dim = particles_.dimension();
  const Real* x = particles_.positions();
  for (std::size_t p = 0; p < particles_.size(); ++p)
    if (geometry_.addressable(x + dim * p)) keys.push_back(geometry_.key_of(x + dim * p));
  partition_ = Partition::by_count(comm_, keys);
  std::vector<BlockKey>().swap(keys);
  migrate();
  rebalance();
}

void Space::distribute(const Partition& partition) {
  partition_ = partition;
  migrate();
}

void Space::migrate() {
  blocks_ = migration_.migrate(particles_, geometry_, partition_);
  ghost_current_ = false;
  halo_current_ = false;
  ++layout_version_;
  laid_out_count_ = particles_.size();
  if (tracks_motion_) {
    const Real* x = particles_.positions();
    laid_out_at_.assign(x, x + particles_.dimension() * particles_.size());
  } else {
    laid_out_at_ = {};
  }
}

bool Space::migrate_if_moved(Real slack) {
  const int dim = particles_.dimension();
  const Real* x = particles_.positions();
  // The largest squared displacement here, and 1 where the set changed since the layout.
  Real moved[2] = {0, laid_out_ && laid_out_count_ == particles_.size() ? Real(0) : Real(1)};
  if (moved[1] == 0 && std::isfinite(slack)) {
    if (laid_out_at_.size() != dim * particles_.size()) moved[1] = 1;  // positions were not kept
    for (std::size_t p = 0; p < particles_.size() && moved[1] == 0; ++p) {
      Real d2 = 0;
      for (int a = 0; a < dim; ++a) {
        const Real d = x[dim * p + a] - laid_out_at_[dim * p + a];
        d2 += d * d;
      }
      moved[0] = std::max(moved[0], d2);
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, moved, 2, mpi::datatype<Real>(), MPI_MAX, comm_);
  if (moved[1] == 0 && moved[0] <= slack * slack) return false;
  laid_out_ = true;
  tracks_motion_ = std::isfinite(slack);  // an infinite slack needs no positions
  migrate();
  return true;
}

void Space::rebalance() {
  partition_ = Partition::balanced(comm_, blocks_.keys, block_weights(blocks_, geometry_));
  migrate();
}

bool Space::maybe_rebalance(long step, const LoadBalancePolicy& policy, double work_seconds) {
  if (policy.every_steps <= 0 || step % policy.every_steps != 0) return false;
  std::vector<std::uint64_t> weights = block_weights(blocks_, geometry_);
  if (policy.by_time) weights = timed_weights(std::move(weights), work_seconds);
  if (load_imbalance(comm_, weights) <= policy.threshold) return false;
  partition_ = Partition::balanced(comm_, blocks_.keys, weights);
  migrate();
  return true;
}

GhostExchange& Space::ghost() {
  if (!ghost_current_) ghost_.build(blocks_, partition_);
  ghost_current_ = true;
  return ghost_;
}

ParticleHalo& Space::halo() {
  if (!halo_current_) halo_.build(particles_, blocks_, geometry_, partition_);
  halo_current_ = true;
  return halo_;
}

}  // namespace nendo
