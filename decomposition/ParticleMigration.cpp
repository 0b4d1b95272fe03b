#include "decomposition/ParticleMigration.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace nendo {

// Collective, before any particle moves: a position that no block holds (this rank's lowest such
// id is `stray`, or the largest id for none) stops every rank alike.
void ParticleMigration::require_addressable(const ParticleSet& particles, ParticleId stray) const {
  const int dim = particles.dimension();
  const Real* x = particles.positions();
  ParticleId first = 0;
  MPI_Allreduce(&stray, &first, 1, MPI_UINT64_T, MPI_MIN, exchange_.comm());
  if (first == std::numeric_limits<ParticleId>::max()) return;
  int finite = 1;  // of the lowest id's position, from its rank
  if (stray == first) {
    std::size_t p = 0;
    while (particles.ids()[p] != first) ++p;
    for (int a = 0; a < dim; ++a) finite = finite && std::isfinite(x[dim * p + a]);
  }
  int all_finite = 1;
  MPI_Allreduce(&finite, &all_finite, 1, MPI_INT, MPI_MIN, exchange_.comm());
  throw StrayParticleError(first, all_finite
                                      ? "position outside the addressable domain (±2^20 blocks per axis)"
                                      : "non-finite position");
}

ParticleBlocks ParticleMigration::migrate(ParticleSet& particles, const BlockGeometry& geometry,
                                          const Partition& partition) {
  const int me = exchange_.rank();
  const int dim = particles.dimension();
  const Real* x = particles.positions();
  std::map<int, std::vector<std::size_t>> leaving;
  std::vector<bool>& keep = keep_;
  keep.assign(particles.size(), true);
  // Particles in one block share an owner: look it up once per run of equal keys.
  BlockKey last_key = kBlockKeyEnd;
  int last_owner = me;
  ParticleId stray = std::numeric_limits<ParticleId>::max();
  for (std::size_t p = 0; p < particles.size(); ++p) {
    if (!geometry.addressable(x + dim * p)) {
      stray = std::min(stray, particles.ids()[p]);
      continue;
    }
    const BlockKey key = geometry.key_of(x + dim * p);
    if (key != last_key) last_key = key, last_owner = partition.owner(key);
    if (last_owner == me) continue;
    leaving[last_owner].push_back(p);
    keep[p] = false;
  }
  require_addressable(particles, stray);
  std::map<int, Bytes> outgoing;
  holes_.clear();
  for (const auto& [rank, indices] : leaving) {
    particles.pack(indices.data(), indices.size(), outgoing[rank]);
    particles_sent_ += indices.size();
    holes_.insert(holes_.end(), indices.begin(), indices.end());
  }
  // A step sends a few particles away: arrivals fill their slots, the rest are appended, and the
  // sort drops the slots left empty, so no field is moved before the sort moves it. A bulk
  // redistribution (start, re-balance) compacts first, so the arrays do not grow past capacity.
  const bool bulk = holes_.size() > particles.size() / 8;
  if (bulk) {
    particles.compact(keep);
    holes_.clear();
  }
  const std::size_t stride = particles.bytes_per_particle();
  std::size_t filled = 0;
  for (const Message& m : exchange_.discover(outgoing)) {
    const std::size_t count = m.bytes.size() / stride;
    const std::size_t over = std::min(count, holes_.size() - filled);
    particles.unpack_over(m.bytes.data(), holes_.data() + filled, over);
    for (std::size_t i = filled; i < filled + over; ++i) keep[holes_[i]] = true;
    filled += over;
    particles.unpack_append(m.bytes.data() + over * stride, count - over);
  }
  return sort_(particles, geometry, bulk ? nullptr : &keep);
}

}  // namespace nendo
