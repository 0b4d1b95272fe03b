#include "decomposition/Space.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/Mpi.hpp"
#include "decomposition/LoadBalance.hpp"

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

namespace {

// The balanced partition of blocks that lie anywhere (a block's particles may be on several
// ranks): each rank sends its blocks' particle counts to their owners in `provisional`, a
// partition in key order, which merge them and place the splitters as Partition::balanced does
// with the blocks gathered there. The same partition as moving the particles there first.
Partition balanced_by_counts(MPI_Comm comm, const ParticleBlocks& blocks, const BlockGeometry& geometry,
                             const Partition& provisional) {
  const int ranks = provisional.ranks();
  std::vector<int> send_counts(ranks, 0), recv_counts(ranks), send_at(ranks + 1, 0), recv_at(ranks + 1, 0);
  std::vector<std::uint64_t> sent;  // (key, particles) per block, in key order, so by owner
  for (std::size_t b = 0; b < blocks.count(); ++b) {
    send_counts[provisional.owner(blocks.keys[b])] += 2;
    sent.push_back(blocks.keys[b]);
    sent.push_back(blocks.particles(b));
  }
  MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, comm);
  for (int r = 0; r < ranks; ++r) {
    send_at[r + 1] = send_at[r] + send_counts[r];
    recv_at[r + 1] = recv_at[r] + recv_counts[r];
  }
  std::vector<std::uint64_t> received(recv_at[ranks]);
  MPI_Alltoallv(sent.data(), send_counts.data(), send_at.data(), MPI_UINT64_T, received.data(),
                recv_counts.data(), recv_at.data(), MPI_UINT64_T, comm);
  std::vector<std::pair<BlockKey, std::uint64_t>> counts;
  for (std::size_t k = 0; k < received.size(); k += 2) counts.emplace_back(received[k], received[k + 1]);
  std::sort(counts.begin(), counts.end());
  std::vector<BlockKey> keys;
  std::vector<std::uint64_t> particles;  // per block, summed over the ranks that sent it
  for (const auto& [key, n] : counts) {
    if (keys.empty() || keys.back() != key) keys.push_back(key), particles.push_back(0);
    particles.back() += n;
  }
  std::vector<std::uint64_t> weights(keys.size());
  for (std::size_t b = 0; b < keys.size(); ++b) weights[b] = block_weight(particles[b], geometry);
  return Partition::balanced(comm, keys, weights);
}

}  // namespace

void Space::distribute() {
  BlockKey lo = blocks_.keys.empty() ? kBlockKeyEnd : blocks_.keys.front();
  BlockKey hi = blocks_.keys.empty() ? 0 : blocks_.keys.back();
  BlockKey global_lo = 0, global_hi = 0;
  MPI_Allreduce(&lo, &global_lo, 1, MPI_UINT64_T, MPI_MIN, comm_);
  MPI_Allreduce(&hi, &global_hi, 1, MPI_UINT64_T, MPI_MAX, comm_);
  // Only the blocks' counts visit the provisional key-range partition: the particles move once,
  // to the balanced one, so that no rank holds more than its share on the way (a key range can
  // hold most of the particles).
  if (global_lo > global_hi) {  // no particles anywhere
    migrate();
    rebalance();
    return;
  }
  partition_ =
      balanced_by_counts(comm_, blocks_, geometry_, Partition::uniform(ranks(), global_lo, global_hi));
  migrate();
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
  // The largest squared displacement here, and 1 where the set changed since the layout. An
  // infinite slack keeps any layout a migration made (distribute's, a re-balance's): it needs no
  // positions from it, so the first call does not lay the particles out again.
  const bool laid_out = laid_out_ || (!std::isfinite(slack) && layout_version_ > 0);
  Real moved[2] = {0, laid_out && laid_out_count_ == particles_.size() ? Real(0) : Real(1)};
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
  if (!halo_current_) halo_.build(particles_, blocks_, geometry_, partition_, halo_fields_);
  halo_current_ = true;
  return halo_;
}

void Space::set_halo_fields(std::vector<std::string> fields) {
  halo_current_ = halo_current_ && fields == halo_fields_;
  halo_fields_ = std::move(fields);
}

}  // namespace nendo
