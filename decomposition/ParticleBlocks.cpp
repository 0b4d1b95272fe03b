#include "decomposition/ParticleBlocks.hpp"

#include <algorithm>
#include <numeric>

namespace nendo {

// Particles move little between sorts, so the order is a counting sort by block, with the blocks
// found from the runs of equal keys (a few per block), and an insertion sort by id inside each
// block (nearly sorted already): O(n), no comparison sort of all particles.
ParticleBlocks BlockSort::operator()(ParticleSet& particles, const BlockGeometry& geometry,
                                     const std::vector<bool>* keep) {
  const std::size_t n = particles.size();
  const int dim = particles.dimension();
  const Real* x = particles.positions();
  const ParticleId* id = particles.ids();
  key_.resize(n);
  for (std::size_t p = 0; p < n; ++p) key_[p] = geometry.key_of(x + dim * p);
  std::size_t dropped = 0;
  if (keep)
    for (std::size_t p = 0; p < keep->size(); ++p)
      if (!(*keep)[p]) key_[p] = kBlockKeyEnd, ++dropped;  // sorts after every block, then cut off

  ParticleBlocks blocks;
  for (std::size_t p = 0; p < n; ++p)
    if (p == 0 || key_[p] != key_[p - 1]) blocks.keys.push_back(key_[p]);
  std::sort(blocks.keys.begin(), blocks.keys.end());
  blocks.keys.erase(std::unique(blocks.keys.begin(), blocks.keys.end()), blocks.keys.end());

  // bucket_[p]: the block index of particle p, looked up once per run of equal keys.
  bucket_.resize(n);
  blocks.offsets.assign(blocks.keys.size() + 1, 0);
  for (std::size_t p = 0; p < n; ++p) {
    bucket_[p] =
        p > 0 && key_[p] == key_[p - 1]
            ? bucket_[p - 1]
            : std::lower_bound(blocks.keys.begin(), blocks.keys.end(), key_[p]) - blocks.keys.begin();
    ++blocks.offsets[bucket_[p] + 1];
  }
  std::partial_sum(blocks.offsets.begin(), blocks.offsets.end(), blocks.offsets.begin());

  order_.resize(n);
  next_.assign(blocks.offsets.begin(), blocks.offsets.end() - 1);
  for (std::size_t p = 0; p < n; ++p) order_[next_[bucket_[p]]++] = p;
  if (dropped > 0) {  // the last block holds the dropped particles: cut it from the order
    blocks.keys.pop_back();
    blocks.offsets.pop_back();
    order_.resize(n - dropped);
  }
  bool identity = order_.size() == n;
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
