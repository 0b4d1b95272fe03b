#include "methods/pbd_powder/Emitter.hpp"

#include <cmath>

#include "core/SplitMix.hpp"

namespace nendo::pbd {
namespace {

// Jitter in [-1, 1) from the emitter seed, the particle id and the axis.
Real uniform(std::uint64_t seed, ParticleId id, int axis) {
  const std::uint64_t bits =
      splitmix64(splitmix64(seed) ^ splitmix64(id * 4 + static_cast<std::uint64_t>(axis)));
  return static_cast<Real>(bits >> 11) * 0x1.0p-52 - 1;
}

}  // namespace

Emitter::Emitter(const EmitterSettings& settings, int index, Real spacing, int dimension)
    : settings_(settings), index_(index), dimension_(dimension), spacing_(spacing) {
  const Real speed =
      std::sqrt(settings.velocity[0] * settings.velocity[0] + settings.velocity[1] * settings.velocity[1] +
                settings.velocity[2] * settings.velocity[2]);
  if (speed > 0)
    for (int a = 0; a < 3; ++a) direction_[a] = settings.velocity[a] / speed;
  if (is_disc()) {
    // Points (a Δx, b Δx) in the plane normal to the axis with a² + b² ≤ (r/Δx)² (29 for r = 3Δx).
    origin_ = settings.center;
    const int n = static_cast<int>(std::floor(settings.radius / spacing + 1e-9));
    const int u = (settings.axis + 1) % 3, w = (settings.axis + 2) % 3;
    const Real r2 = settings.radius * settings.radius * (1 + 1e-9);
    for (int b = dimension == 3 ? -n : 0; b <= (dimension == 3 ? n : 0); ++b)
      for (int a = -n; a <= n; ++a) {
        Real p[3] = {0, 0, 0};
        p[dimension == 3 ? u : 1 - settings.axis] = a * spacing;
        if (dimension == 3) p[w] = b * spacing;
        if (p[0] * p[0] + p[1] * p[1] + p[2] * p[2] > r2) continue;
        offsets_.insert(offsets_.end(), p, p + 3);
      }
  } else {
    // Lattice points (i + 1/2) Δx from min, inside [min, max].
    origin_ = settings.min;
    int count[3] = {1, 1, 1};
    for (int a = 0; a < dimension; ++a)
      count[a] =
          std::max(1, static_cast<int>(std::floor((settings.max[a] - settings.min[a]) / spacing + 1e-9)));
    for (int k = 0; k < count[2]; ++k)
      for (int j = 0; j < count[1]; ++j)
        for (int i = 0; i < count[0]; ++i) {
          const Real p[3] = {(i + 0.5) * spacing, (j + 0.5) * spacing,
                             dimension == 3 ? (k + 0.5) * spacing : 0};
          offsets_.insert(offsets_.end(), p, p + 3);
        }
  }
}

std::uint64_t Emitter::due(Real t, Real dt) const {
  if (emitted >= settings_.count || t + 1e-9 * dt < settings_.start) return 0;
  const std::uint64_t lattice = lattice_size();
  if (settings_.rate) {  // a whole lattice once the rate has made it due
    const Real made = *settings_.rate * (t + dt - settings_.start);
    if (made < static_cast<Real>(std::min(emitted + lattice, settings_.count)) * (1 - 1e-12)) return 0;
  }
  return std::min<std::uint64_t>(lattice, settings_.count - emitted);
}

void Emitter::position(std::uint64_t serial, std::size_t k, Real* x) const {
  const ParticleId who = id(serial + k);
  for (int a = 0; a < 3; ++a) x[a] = origin_[a] + offsets_[3 * k + a];
  for (int a = 0; a < dimension_; ++a) x[a] += settings_.jitter * spacing_ * uniform(settings_.seed, who, a);
  if (dimension_ == 2) x[2] = 0;
}

}  // namespace nendo::pbd
