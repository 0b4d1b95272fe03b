#pragma once
// A particle source of spec 003 §8: a lattice of spacing Δx in a disc (one layer per emission) or a
// box, emitted every frame or at a rate until `count` particles. Every rank computes the same
// emission (positions, jitter from a counter-based hash of the seed and the id) and keeps the
// particles whose block it owns, so ids are globally unique with no communication.
#include <cstdint>
#include <vector>

#include "core/Types.hpp"
#include "methods/pbd_powder/PbdPowderSettings.hpp"

namespace nendo::pbd {

class Emitter {
 public:
  static constexpr ParticleId kEmittedBit = ParticleId(1) << 62;

  Emitter(const EmitterSettings& settings, int index, Real spacing, int dimension);

  // Particles to emit in the frame [t, t + dt): 0, a lattice, or the last, cut one.
  std::uint64_t due(Real t, Real dt) const;
  std::size_t lattice_size() const { return offsets_.size() / 3; }
  // Position of the k-th particle of the emission that starts at progress `emitted` (jittered).
  void position(std::uint64_t emitted, std::size_t k, Real* x) const;
  ParticleId id(std::uint64_t serial) const { return kEmittedBit | (ParticleId(index_) << 44) | serial; }
  // The direction emitted particles leave along (unit; zero if the emitter's velocity is zero).
  const Vec3& direction() const { return direction_; }
  const Vec3& origin() const { return origin_; }
  const EmitterSettings& settings() const { return settings_; }
  bool is_disc() const { return settings_.shape == "disc"; }

  std::uint64_t emitted = 0;     // particles so far (checkpointed)
  std::uint64_t last_count = 0;  // size of the last emission (checkpointed)

 private:
  EmitterSettings settings_;
  int index_, dimension_;
  Real spacing_;
  Vec3 origin_{}, direction_{};
  std::vector<Real> offsets_;  // lattice points relative to origin_, 3 per point
};

}  // namespace nendo::pbd
