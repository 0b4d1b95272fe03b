#include "decomposition/ParticleBlocks.hpp"

#include <algorithm>
#include <numeric>

namespace nendo {

ParticleBlocks sort_by_block(ParticleSet& particles, const BlockGeometry& geometry) {
  const std::size_t n = particles.size();
  const int dim = particles.dimension();
  const Real* x = particles.positions();
  const ParticleId* id = particles.ids();
  std::vector<BlockKey> key(n);
  for (std::size_t p = 0; p < n; ++p) key[p] = geometry.key_of(x + dim * p);

  auto before = [&](std::size_t a, std::size_t b) {
    return key[a] < key[b] || (key[a] == key[b] && id[a] < id[b]);
  };
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  bool sorted = true;
  for (std::size_t p = 1; p < n && sorted; ++p) sorted = before(p - 1, p);
  if (!sorted) {
    std::sort(order.begin(), order.end(), before);
    particles.reorder(order);
  }

  ParticleBlocks blocks;
  for (std::size_t i = 0; i < n; ++i) {
    const BlockKey k = key[order[i]];
    if (blocks.keys.empty() || blocks.keys.back() != k) {
      if (!blocks.keys.empty()) blocks.offsets.push_back(i);
      blocks.keys.push_back(k);
    }
  }
  if (!blocks.keys.empty()) blocks.offsets.push_back(n);
  return blocks;
}

}  // namespace nendo
