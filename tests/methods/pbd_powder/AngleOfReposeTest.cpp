// Issue 28: the angle of repose of a poured heap is a property of the material, not of the
// binning. The heap test's pour (2000 particles from 0.12 m) with floor and particle friction
// μ ∈ {0.4, 0.6, 0.8}, three emitter seeds each, after the pour and 1.85 s of settling (180
// frames; 240 give 21.3°, 30.3°, 37.6°); θ(μ) is the median over the seeds and five bin alignments of the
// spec's test 7(d) flank estimator. A dry granular heap stands near its friction angle: |θ − arctan μ| ≤ 10°,
// and θ grows with μ. Before rest_when: stopped and friction between particles it stood at 15.1°,
// 13.9°, 14.9° whatever μ (the flow → rest threshold set the angle; docs/methods/pbd-powder.md).
// One rank: the heap is a few blocks wide, so a second rank adds no speed; the rank-count
// invariance of the same code is PbdPowderTest's.
#include <gtest/gtest.h>

#include <cmath>

#include "PowderHarness.hpp"
#include "core/Mpi.hpp"

namespace nendo {
namespace {

using testing::Heap;
using testing::measure_heap;
using testing::pour_scene;
using testing::PowderRun;

TEST(PbdPowderPhysics, AngleOfReposeFollowsTheFrictionAngle) {
  std::vector<Real> angles;
  for (Real mu : {0.4, 0.6, 0.8}) {
    std::vector<Real> all;
    for (int seed = 1; seed <= 3; ++seed) {
      PowderRun run(MPI_COMM_WORLD, pour_scene(2000, 0.12, "friction: " + std::to_string(mu), "", mu, seed));
      run.advance(180);
      const Heap heap = measure_heap(run.gather());
      all.insert(all.end(), heap.angles.begin(), heap.angles.end());
    }
    angles.push_back(testing::median(all));
    const Real friction_angle = std::atan(mu) * 180 / M_PI;
    if (mpi::rank(MPI_COMM_WORLD) == 0)
      std::printf("mu %.1f: angle of repose %.1f deg (median of %zu), arctan mu %.1f deg\n", mu,
                  angles.back(), all.size(), friction_angle);
    EXPECT_NEAR(angles.back(), friction_angle, 10.0) << "friction " << std::to_string(mu);
  }
  EXPECT_LT(angles[0], angles[1]);
  EXPECT_LT(angles[1], angles[2]);
}

}  // namespace
}  // namespace nendo
