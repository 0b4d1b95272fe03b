#pragma once
// Where a particle id sits in a local array, for methods that keep neighbours by id (mesh rings,
// adjacency): a flat open-addressing table with linear probing, rebuilt in O(n) when the particles
// were reordered. Lookups happen only then, never in a step's hot loops. The slot is the id's low
// bits: ids of neighbours are close numbers (lattice and mesh numberings), so lookups of one
// neighbourhood touch nearby slots and stay in cache, where a scrambling hash would miss on each.
#include <cstdint>
#include <vector>

#include "core/Types.hpp"

namespace nendo {

class IdIndex {
 public:
  static constexpr std::uint32_t kAbsent = ~std::uint32_t(0);

  // Indexes ids[0..n) (distinct, none equal to ~0).
  void build(const ParticleId* ids, std::size_t n) {
    int bits = 4;
    while ((std::size_t(1) << bits) < 2 * n) ++bits;
    mask_ = (std::size_t(1) << bits) - 1;
    keys_.assign(mask_ + 1, kEmpty);
    values_.resize(mask_ + 1);
    for (std::size_t i = 0; i < n; ++i) {
      std::size_t slot = hash(ids[i]);
      while (keys_[slot] != kEmpty) slot = (slot + 1) & mask_;
      keys_[slot] = ids[i];
      values_[slot] = static_cast<std::uint32_t>(i);
    }
  }

  std::uint32_t find(ParticleId id) const {
    for (std::size_t slot = hash(id);; slot = (slot + 1) & mask_) {
      if (keys_[slot] == id) return values_[slot];
      if (keys_[slot] == kEmpty) return kAbsent;
    }
  }

 private:
  static constexpr ParticleId kEmpty = ~ParticleId(0);
  std::size_t hash(ParticleId id) const { return static_cast<std::size_t>(id ^ (id >> 40)) & mask_; }

  std::vector<ParticleId> keys_;
  std::vector<std::uint32_t> values_;
  std::size_t mask_ = 15;
};

}  // namespace nendo
