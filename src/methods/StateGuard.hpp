#pragma once
// The non-finite guard for methods that do not check their own state (all but MPM, which checks
// every new value before storing it and keeps the particle's last good state).
#include "decomposition/Space.hpp"

namespace nendo {

// Collective: if any Real field of any local particle holds a NaN or an infinity after `step`,
// every rank throws the same ParticleStateError naming the lowest such particle id and, for it,
// the first such field ("non-finite velocity").
void require_finite_state(const Space& space, long step);

}  // namespace nendo
