#pragma once
// The particles a kernel method's step reads: this rank's owned particles at indices [0, owned()),
// then the halo copies at [owned(), size()) — one index space ("combined" indices) that neighbour
// lists and per-step arrays share. The view refers to the two sets, keeps their ids side by side,
// and gathers the fields a method asks for into arrays the method keeps, so their storage is reused
// from step to step. After the halo update of a few fields (ParticleHalo::update), gathering just
// those refreshes them along a kept layout.
#include <cstdint>
#include <string>
#include <vector>

#include "decomposition/IdIndex.hpp"
#include "decomposition/ParticleSet.hpp"

namespace nendo {

class OwnedHaloView {
 public:
  // The owned particles and their halo copies as they are now: counts and ids. Both sets must
  // outlive the gathers that follow, and keep their particles until the next assign().
  void assign(const ParticleSet& owned, const ParticleSet& halo);

  std::size_t owned() const { return owned_; }
  std::size_t size() const { return ids_.size(); }
  ParticleId id(std::size_t i) const { return ids_[i]; }
  const std::vector<ParticleId>& ids() const { return ids_; }

  // The named field of the owned particles then of the halo copies into out: `width` values per
  // particle, the field's components padded with zeros (width 0: the components). T is the
  // field's type (Real, std::int32_t or std::uint64_t).
  template <class T>
  void gather(const std::string& field, std::vector<T>& out, int width = 0) const;

  // The combined index of `id`, or IdIndex::kAbsent; the first call after assign() indexes the
  // ids (O(size())).
  std::uint32_t find(ParticleId id);

 private:
  void require_unchanged() const;

  const ParticleSet* owned_set_ = nullptr;
  const ParticleSet* halo_set_ = nullptr;
  std::size_t owned_ = 0;
  std::vector<ParticleId> ids_;
  IdIndex index_;
  bool indexed_ = false;
};

}  // namespace nendo
