#pragma once
// The once-per-frame state transitions of spec 003 §4.3 for one particle, decided from its state
// at the start of the pass (so a particle changes at most once per frame).
#include <cmath>
#include <cstdint>

#include "core/Types.hpp"

namespace nendo::pbd {

enum PowderState : std::int32_t { kFlow = 0, kRest = 1 };

struct TransitionRule {
  Real density_rate = 10;  // τ_ρ (1/s)
  bool magnitude = true;   // |Δρ| (B8), or dilation only
  Real speed = 0.313;      // τ_v (m/s)
  bool rest_above = true;  // flow → rest when |v_ave − v_i| > τ_v (B6), or below
};

// ratio, previous: ρ/ρ_0 now and at the end of the last frame (previous < 0: none yet);
// relative_speed: |v_ave − v_i| over the neighbours other than i, or < 0 if it has none.
inline std::int32_t next_state(const TransitionRule& rule, std::int32_t state, Real ratio, Real previous,
                               Real dt, Real relative_speed) {
  if (state == kRest) {  // Eq. (8), relative to ρ_0
    if (previous < 0) return kRest;
    const Real change = ratio - previous;
    const Real rate = (rule.magnitude ? std::fabs(change) : -change) / dt;
    return rate > rule.density_rate ? kFlow : kRest;
  }
  if (relative_speed < 0) return kFlow;  // Eq. (9): no neighbours, no transition
  return (relative_speed > rule.speed) == rule.rest_above ? kRest : kFlow;
}

}  // namespace nendo::pbd
