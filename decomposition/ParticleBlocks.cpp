#include "decomposition/ParticleBlocks.hpp"

#include <algorithm>
#include <numeric>

namespace nendo {

ParticleBlocks BlockSort::operator()(ParticleSet& particles, const BlockGeometry& geometry) {
  const std::size_t n = particles.size();
  const int dim = particles.dimension();
  const Real* x = particles.positions();
  const ParticleId* id = particles.ids();
  key_.resize(n);
  for (std::size_t p = 0; p < n; ++p) key_[p] = geometry.key_of(x + dim * p);

  auto before = [&](std::size_t a, std::size_t b) {
    return key_[a] < key_[b] || (key_[a] == key_[b] && id[a] < id[b]);
  };
  order_.resize(n);
  std::iota(order_.begin(), order_.end(), 0);
  bool sorted = true;
  for (std::size_t p = 1; p < n && sorted; ++p) sorted = before(p - 1, p);
  if (!sorted) {
    std::sort(order_.begin(), order_.end(), before);
    particles.reorder(order_);
  }

  ParticleBlocks blocks;
  for (std::size_t i = 0; i < n; ++i) {
    const BlockKey k = key_[order_[i]];
    if (blocks.keys.empty() || blocks.keys.back() != k) {
      if (!blocks.keys.empty()) blocks.offsets.push_back(i);
      blocks.keys.push_back(k);
    }
  }
  if (!blocks.keys.empty()) blocks.offsets.push_back(n);
  return blocks;
}

}  // namespace nendo
