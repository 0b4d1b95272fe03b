#include "decomposition/ParticleBlocks.hpp"

#include <algorithm>
#include <numeric>

namespace nendo {

ParticleBlocks BlockSort::operator()(ParticleSet& particles, const BlockGeometry& geometry) {
  const int dim = particles.dimension();
  const Real* x = particles.positions();
  key_.resize(particles.size());
  for (std::size_t p = 0; p < particles.size(); ++p) key_[p] = geometry.key_of(x + dim * p);
  return (*this)(particles, key_);
}

// Particles move little between sorts, so the order is a counting sort by block, with the blocks
// found from the runs of equal keys (a few per block), and an insertion sort by id inside each
// block (nearly sorted already): O(n), no comparison sort of all particles.
ParticleBlocks BlockSort::operator()(ParticleSet& particles, const std::vector<BlockKey>& key) {
  const std::size_t n = particles.size();
  const ParticleId* id = particles.ids();
  ParticleBlocks blocks;
  for (std::size_t p = 0; p < n; ++p)
    if (p == 0 || key[p] != key[p - 1]) blocks.keys.push_back(key[p]);
  std::sort(blocks.keys.begin(), blocks.keys.end());
  blocks.keys.erase(std::unique(blocks.keys.begin(), blocks.keys.end()), blocks.keys.end());

  // bucket_[p]: the block index of particle p, looked up once per run of equal keys.
  bucket_.resize(n);
  blocks.offsets.assign(blocks.keys.size() + 1, 0);
  for (std::size_t p = 0; p < n; ++p) {
    bucket_[p] = p > 0 && key[p] == key[p - 1]
                     ? bucket_[p - 1]
                     : std::lower_bound(blocks.keys.begin(), blocks.keys.end(), key[p]) - blocks.keys.begin();
    ++blocks.offsets[bucket_[p] + 1];
  }
  std::partial_sum(blocks.offsets.begin(), blocks.offsets.end(), blocks.offsets.begin());

  order_.resize(n);
  next_.assign(blocks.offsets.begin(), blocks.offsets.end() - 1);
  for (std::size_t p = 0; p < n; ++p) order_[next_[bucket_[p]]++] = p;
  bool identity = true;
  for (std::size_t b = 0; b < blocks.count(); ++b) {
    for (std::size_t i = blocks.begin(b) + 1; i < blocks.end(b); ++i) {
      const std::size_t q = order_[i];
      std::size_t j = i;
      for (; j > blocks.begin(b) && id[order_[j - 1]] > id[q]; --j) order_[j] = order_[j - 1];
      order_[j] = q;
    }
  }
  for (std::size_t i = 0; i < n && identity; ++i) identity = order_[i] == i;
  if (!identity) particles.reorder(order_);
  return blocks;
}

}  // namespace nendo
