#pragma once
// The owned particle blocks of a rank: after sort_by_block(), the particles of block keys[b] are
// [offsets[b], offsets[b+1]) of the ParticleSet, sorted by id.
#include <vector>

#include "decomposition/BlockGeometry.hpp"
#include "decomposition/ParticleSet.hpp"

namespace nendo {

struct ParticleBlocks {
  std::vector<BlockKey> keys;
  std::vector<std::size_t> offsets{0};

  std::size_t count() const { return keys.size(); }
  std::size_t begin(std::size_t b) const { return offsets[b]; }
  std::size_t end(std::size_t b) const { return offsets[b + 1]; }
  std::size_t particles(std::size_t b) const { return offsets[b + 1] - offsets[b]; }
};

// Sorts particles by (block key, id) and returns the blocks. Keeps its buffers between calls, so
// sorting every step allocates nothing once the particle count is steady.
class BlockSort {
 public:
  ParticleBlocks operator()(ParticleSet& particles, const BlockGeometry& geometry);
  // With the block key of every particle already known: key[p] for particle p.
  ParticleBlocks operator()(ParticleSet& particles, const std::vector<BlockKey>& key);

 private:
  std::vector<BlockKey> key_;
  std::vector<std::size_t> order_;
  std::vector<std::size_t> bucket_, next_;
};

inline ParticleBlocks sort_by_block(ParticleSet& particles, const BlockGeometry& geometry) {
  return BlockSort()(particles, geometry);
}

}  // namespace nendo
