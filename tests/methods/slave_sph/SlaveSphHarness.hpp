#pragma once
// Runs a slave-SPH scene in-process (parse, seed, distribute, initialise, step) and gathers the
// particle state to every rank, for tests that look between steps.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/Mpi.hpp"
#include "decomposition/GlobalView.hpp"
#include "methods/slave_sph/SlaveSph.hpp"
#include "support/MethodRun.hpp"

namespace nendo::testing {

// One particle of the gathered state.
struct SphParticle {
  ParticleId id;
  std::int32_t kind, body;
  Real x[3], v[3], F[9], volume, mass;
};

struct SphRun : MethodRun {
  using MethodRun::MethodRun;
  SlaveSph& sph() { return static_cast<SlaveSph&>(*method); }
  void run_to(Real end) {
    while (time < end - 1e-12) step();
  }

  // Every particle of every rank, sorted by id, on every rank. Collective.
  std::vector<SphParticle> gather() const {
    const ParticleSet& ps = space->particles();
    std::vector<SphParticle> mine(ps.size());
    for (std::size_t p = 0; p < ps.size(); ++p) {
      SphParticle& q = mine[p];
      q.id = ps.ids()[p];
      q.kind = ps.int32("kind")[p];
      q.body = ps.int32("body")[p];
      std::copy_n(ps.positions() + 3 * p, 3, q.x);
      std::copy_n(ps.real("velocity") + 3 * p, 3, q.v);
      std::copy_n(ps.real("F") + 9 * p, 9, q.F);
      q.volume = ps.real("volume")[p];
      q.mass = ps.real("mass")[p];
    }
    std::vector<SphParticle> all = all_gather(space->comm(), mine);
    std::sort(all.begin(), all.end(), [](const SphParticle& a, const SphParticle& b) { return a.id < b.id; });
    return all;
  }
};

inline std::size_t count_kind(const std::vector<SphParticle>& all, int kind) {
  return std::count_if(all.begin(), all.end(), [&](const SphParticle& p) { return p.kind == kind; });
}

}  // namespace nendo::testing
