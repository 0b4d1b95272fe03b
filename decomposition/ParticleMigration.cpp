#include "decomposition/ParticleMigration.hpp"

#include <algorithm>
#include <map>

namespace nendo {

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
  for (std::size_t p = 0; p < particles.size(); ++p) {
    const BlockKey key = geometry.key_of(x + dim * p);
    if (key != last_key) last_key = key, last_owner = partition.owner(key);
    if (last_owner == me) continue;
    leaving[last_owner].push_back(p);
    keep[p] = false;
  }
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
