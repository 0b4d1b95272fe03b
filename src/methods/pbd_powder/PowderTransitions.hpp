#pragma once
// The once-per-frame state transitions of spec 003 §4.3 for one particle, decided from its state
// at the start of the pass (so a particle changes at most once per frame).
#include <cmath>
#include <cstdint>

#include "core/Types.hpp"

namespace nendo::pbd {

enum PowderState : std::int32_t { kFlow = 0, kRest = 1 };

// When a flowing particle comes to rest (Eq. 9, §10 B6). The paper's reason for Eq. (9) is that "the
// dynamic friction between particles becomes larger than the force making the particle flow";
// `stopped` tests that directly (an extension, issue 28): the particle has been stopped (its speed
// relative to its neighbours is below τ_v) where friction can hold it (held_by_friction).
enum class RestWhen { kAbove, kBelow, kStopped };

struct TransitionRule {
  Real density_rate = 10;  // τ_ρ (1/s)
  bool magnitude = true;   // |Δρ| (B8), or dilation only
  Real speed = 0.313;      // τ_v (m/s)
  RestWhen rest_when = RestWhen::kAbove;
  Real friction = 0.6;  // μ between particles (kStopped)
  Real gravity = 9.81;  // |g| (kStopped)
};

// What holds a particle where it is (kStopped), each split along −g (up) and across it: the frame's
// mean support (the acceleration its constraints and collisions gave it, friction excluded), and,
// for a particle on the free surface, the surface's outward normal.
struct Support {
  Real up = 0, across = 0;
  bool surface = false;
  Real normal_up = 0, normal_across = 0;
};

// Coulomb for a grain on a slope of angle θ: the slope pushes along its normal (up = g cos θ,
// across = g sin θ), and friction holds the grain while tan θ ≤ μ.
inline bool within_cone(const TransitionRule& rule, Real up, Real across) {
  return up > 0 && across <= rule.friction * up;
}

// On a free surface steeper than the friction angle: no friction holds it, whatever bonds it has.
inline bool too_steep(const TransitionRule& rule, const Support& support) {
  return support.surface && !within_cone(rule, support.normal_up, support.normal_across);
}

// Held up (at least half its weight carried) and, on the free surface, by a push within the
// friction cone on a surface no steeper than arctan μ. Inside the powder a stopped grain is jammed:
// there its support is the unconverged stack's noise (4 Jacobi iterations), not a slope's normal.
inline bool held_by_friction(const TransitionRule& rule, const Support& support) {
  if (support.up < 0.5 * rule.gravity) return false;
  if (!support.surface) return true;
  return within_cone(rule, support.up, support.across) &&
         within_cone(rule, support.normal_up, support.normal_across);
}

// ratio, previous: ρ/ρ_0 now and at the end of the last frame (previous < 0: none yet);
// relative_speed: |v_ave − v_i| over the neighbours other than i, or < 0 if it has none.
inline std::int32_t next_state(const TransitionRule& rule, std::int32_t state, Real ratio, Real previous,
                               Real dt, Real relative_speed, const Support& support = {}) {
  if (state == kRest) {  // Eq. (8), relative to ρ_0
    if (previous < 0) return kRest;
    const Real change = ratio - previous;
    const Real rate = (rule.magnitude ? std::fabs(change) : -change) / dt;
    if (rule.rest_when == RestWhen::kStopped && too_steep(rule, support)) return kFlow;
    return rate > rule.density_rate ? kFlow : kRest;
  }
  if (relative_speed < 0) return kFlow;  // Eq. (9): no neighbours, no transition
  switch (rule.rest_when) {
    case RestWhen::kAbove:
      return relative_speed > rule.speed ? kRest : kFlow;
    case RestWhen::kBelow:
      return relative_speed < rule.speed ? kRest : kFlow;
    case RestWhen::kStopped:
      return relative_speed < rule.speed && held_by_friction(rule, support) ? kRest : kFlow;
  }
  return kFlow;
}

}  // namespace nendo::pbd
