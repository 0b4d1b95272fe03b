// The paper's figures as measurements (spec 001 §8 tests 6-9), on 2 ranks: the β sweep of Fig. 5
// (the twist a bar keeps on the floor grows with β), the localisation of Fig. 6 (slab groups) and
// Fig. 7 (per-region groups give each region its own weights, a global group one for all).
#include <gtest/gtest.h>

#include <cmath>

#include "ShapeMatchingHarness.hpp"

namespace nendo {
namespace {

using testing::SmRun;
using testing::SmVertex;

// The spec's bar (§7.4): 7 × 7 × 25 vertices, 0.04 m apart, long axis x, twisted example 90°.
std::string spec_bar(const std::string& body_keys, const std::string& extra) {
  return "nendo: 1\nmethod: shape_matching\ndimension: 3\ngravity: [0, -9.8, 0]\n"
         "time: {end: 10.0, dt: 0.0166666666666667}\ngrid: {dx: 0.12, block: 4}\n"
         "materials: {rubber: {model: neo_hookean, E: 1.0e6, nu: 0.3, density: 1000}}\n"
         "bodies:\n  - {shape: box, min: [0, 0, 0], max: [0.96, 0.24, 0.24], particles_per_cell: 3, "
         "material: "
         "rubber, examples: [{type: twist, angle: 90}]" +
         (body_keys.empty() ? "" : ", " + body_keys) +
         "}\n"
         "colliders: [{shape: plane, point: [0, 0, 0], normal: [0, 1, 0], friction: 0.5}]\n" +
         extra;
}

// End-to-end twist (§8 test 7): the rotation about x between the first and last cross-sections,
// each centred, by 2-D Procrustes on (y, z).
Real twist_degrees(const std::vector<SmVertex>& vs) {
  Real h00 = 0, h01 = 0, h10 = 0, h11 = 0;
  auto section = [&](int i) {
    std::vector<const SmVertex*> s;
    for (const SmVertex& v : vs)
      if (static_cast<int>(v.id % 25) == i) s.push_back(&v);
    return s;
  };
  const auto a = section(0), b = section(24);
  Real ca[2] = {0, 0}, cb[2] = {0, 0};
  for (std::size_t k = 0; k < a.size(); ++k)
    for (int c = 0; c < 2; ++c) ca[c] += a[k]->x[1 + c] / a.size(), cb[c] += b[k]->x[1 + c] / b.size();
  for (std::size_t k = 0; k < a.size(); ++k) {
    const Real ay = a[k]->x[1] - ca[0], az = a[k]->x[2] - ca[1], by = b[k]->x[1] - cb[0],
               bz = b[k]->x[2] - cb[1];
    h00 += ay * by, h01 += ay * bz, h10 += az * by, h11 += az * bz;
  }
  return std::atan2(h01 - h10, h00 + h11) * 180 / M_PI;
}

// Fig. 5: the bar starts in its twisted example on the floor (friction 0.5); after 10 s the twist
// it keeps, and the weight of the example, grow with β; with β = 0 (plain shape matching) the twist
// is gone. The scheme does not damp (symplectic, §8 test 6), so that the bar settles in 10 s the
// velocities are damped by k_d = 0.02 per step, the most spec A7 allows.
TEST(ShapeMatchingPhysics, TwistKeptOnTheFloorGrowsWithBeta) {
  std::vector<Real> kept, weight;
  for (const char* beta : {"0", "0.9", "0.99", "0.995", "0.999"}) {
    SmRun run(MPI_COMM_WORLD, spec_bar("initial_example: 1",
                                       std::string("shape_matching: {damping: 0.02, beta: ") + beta + "}\n"));
    run.steps(600);
    const std::vector<SmVertex> vs = run.gather();
    kept.push_back(std::fabs(twist_degrees(vs)));
    Real w = 0;
    for (const SmVertex& v : vs) w += v.weights[1] / vs.size();
    weight.push_back(w);
    if (mpi::rank(MPI_COMM_WORLD) == 0)
      std::printf("beta %s: twist kept %.2f degrees of 90, mean W'_1 %.3f\n", beta, kept.back(), w);
  }
  EXPECT_LT(kept.front(), 9.0);
  EXPECT_LT(weight.front(), 1e-12);
  for (std::size_t k = 1; k < kept.size(); ++k) {
    EXPECT_GE(kept[k], kept[k - 1]) << "beta index " << k;
    EXPECT_GT(weight[k], weight[k - 1]) << "beta index " << k;
  }
  EXPECT_GT(kept.back(), kept.front() + 15);
}

// Fig. 7: dropped on an inclined floor, a global group gives every region the same weight; per-
// region groups give each its own (spread > 0.05 after impact).
TEST(ShapeMatchingPhysics, PerRegionGroupsLocaliseTheExampleEffect) {
  const std::string incline =
      "colliders: [{shape: plane, point: [0, 0, 0], normal: [0.4, 1, 0], friction: 0.5}]\n";
  auto spread = [&](const char* groups) {
    std::string scene = spec_bar(std::string("groups: ") + groups, "");
    scene.replace(scene.find("colliders:"), std::string::npos, incline);
    SmRun run(MPI_COMM_WORLD, scene, {"bodies.0.min=[0, 0.5, 0]", "bodies.0.max=[0.96, 0.74, 0.24]"});
    run.steps(72);  // 1.2 s: the bar has hit the incline and slides
    Real mean = 0, square = 0;
    const std::vector<SmVertex> vs = run.gather();
    for (const SmVertex& v : vs)
      mean += v.weights[1] / vs.size(), square += v.weights[1] * v.weights[1] / vs.size();
    return std::sqrt(std::max<Real>(0, square - mean * mean));
  };
  const Real global = spread("global"), per_region = spread("per_region");
  if (mpi::rank(MPI_COMM_WORLD) == 0)
    std::printf("spread of W'_1: global %.3g, per region %.3g\n", global, per_region);
  EXPECT_EQ(global, 0.0);
  EXPECT_GT(per_region, 0.05);
}

// Fig. 6 (§8 test 9, with the driven half posed instead of driven): two slab groups along the bar;
// the half that is in the twisted example takes its weight, the half at rest does not.
TEST(ShapeMatchingPhysics, SlabGroupsSeparateTheHalves) {
  SmRun run(MPI_COMM_WORLD, spec_bar("groups: slabs, group_slabs: 2, initial_example: 1", ""),
            {"gravity=[0, 0, 0]"});
  // Put the second half (x > 0.48) back to its rest shape.
  ParticleSet& ps = run.space->particles();
  for (std::size_t p = 0; p < ps.size(); ++p)
    if (ps.real("rest")[3 * p] > 0.48 + 1e-9) std::copy_n(ps.real("rest") + 3 * p, 3, ps.positions() + 3 * p);
  run.space->migrate();
  run.step();
  Real twisted = 0, rest = 0;
  int nt = 0, nr = 0;
  for (const SmVertex& v : run.gather()) {
    if (v.group == 0) twisted += v.weights[1], ++nt;
    if (v.group == 1) rest += v.weights[1], ++nr;
  }
  ASSERT_GT(nt, 0);
  ASSERT_GT(nr, 0);
  if (mpi::rank(MPI_COMM_WORLD) == 0)
    std::printf("W'_1: twisted half %.3f, rest half %.3f\n", twisted / nt, rest / nr);
  EXPECT_GT(twisted / nt, 0.5);
  EXPECT_LT(rest / nr, 0.05);
}

}  // namespace
}  // namespace nendo
