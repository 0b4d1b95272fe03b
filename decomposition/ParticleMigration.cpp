#include "decomposition/ParticleMigration.hpp"

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
  for (const auto& [rank, indices] : leaving) {
    particles.pack(indices.data(), indices.size(), outgoing[rank]);
    particles_sent_ += indices.size();
  }
  particles.compact(keep);
  const std::size_t stride = particles.bytes_per_particle();
  for (const Message& m : exchange_.discover(outgoing))
    particles.unpack_append(m.bytes.data(), m.bytes.size() / stride);
  return sort_(particles, geometry);
}

}  // namespace nendo
