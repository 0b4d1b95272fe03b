// The spec 004 §8 cantilever against beam theory (validation.md §5): the 0.4 x 0.1 x 0.1 m box
// clamped at x = 0 under its weight, solved statically by one backward Euler step of 100 s (the
// inertia term is 1e-5 of the stiffness), on uniform meshes of levels 0-3. Linear tets lock in
// bending: the tip sag is a fraction of Timoshenko's that tends to 1 as the mesh is refined, as
// the spec's scratch measurement found (§8 "locking note": 0.25, 0.51, 0.78, 0.91). Then the
// level selection at a moderate sag (issue 28): the adaptive hierarchy against its finest level.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "decomposition/GlobalView.hpp"
#include "materials/StvkMaterial.hpp"
#include "methods/fem/HierarchicalFem.hpp"
#include "support/MethodRun.hpp"
#include "support/PetscEnvironment.hpp"

namespace nendo {
namespace {

constexpr Real kLength = 0.4, kSide = 0.1, kDensity = 1000, kYoung = 1e8, kPoisson = 0.3, kGravity = 9.81;

// Timoshenko's tip deflection under a uniform load q: q L⁴/(8 E I) + q L²/(2 κ G A), κ = 10(1+ν)/(12+11ν).
Real timoshenko_sag() {
  const Real area = kSide * kSide, inertia = kSide * kSide * kSide * kSide / 12,
             q = kDensity * kGravity * area;
  const Real shear = kYoung / (2 * (1 + kPoisson)), kappa = 10 * (1 + kPoisson) / (12 + 11 * kPoisson);
  return q * std::pow(kLength, 4) / (8 * kYoung * inertia) +
         q * kLength * kLength / (2 * kappa * shear * area);
}

// The mean downward displacement of the nodes of the free end, on any rank count.
Real tip_sag(int level) {
  const std::string scene =
      "nendo: 1\nmethod: fem\ndimension: 3\ngravity: [0, 0, -9.81]\n"
      "time: {end: 100, dt: 100, integrator: implicit}\ngrid: {dx: 0.45, block: 3}\n"
      "materials: {beam: {model: stvk, E: 1.0e8, nu: 0.3, density: 1000}}\n"
      "bodies: [{shape: box, material: beam, min: [0, 0, 0], max: [0.4, 0.1, 0.1], fixed_min: [-1, -1, -1], "
      "fixed_max: [0, 1, 1]}]\n"
      "fem: {spacing: 0.1, max_level: " +
      std::to_string(level) + ", min_level: " + std::to_string(level) +
      "}\nimplicit: {operator: assembled, newton_tol: 1.0e-8}\n";
  testing::MethodRun run(MPI_COMM_WORLD, scene);
  run.step();
  const ParticleSet& ps = run.space->particles();
  Real sum[2] = {0, 0};
  for (std::size_t p = 0; p < ps.size(); ++p) {
    if (std::abs(ps.positions()[3 * p] - kLength) > 1e-3) continue;
    sum[0] += kSide / 2 - ps.positions()[3 * p + 2];
    sum[1] += 1;
  }
  MPI_Allreduce(MPI_IN_PLACE, sum, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return sum[0] / sum[1];
}

TEST(FemCantilever, StaticSagConvergesToTimoshenkoWithLocking) {
  const Real reference = timoshenko_sag();
  EXPECT_NEAR(reference, 4.01e-4, 0.01e-4);           // the spec's 40.1 mm at E = 1e6
  const Real expected[4] = {0.25, 0.51, 0.78, 0.91};  // spec §8, a linear small-strain code
  Real fraction[4];
  for (int level = 0; level < 4; ++level) {
    fraction[level] = tip_sag(level) / reference;
    EXPECT_NEAR(fraction[level], expected[level], 0.025) << "level " << level;
  }
  for (int level = 1; level < 4; ++level) EXPECT_GT(fraction[level], fraction[level - 1]);
  EXPECT_LT(fraction[3], 1.0);
  // The error halves at least with each halving of the edge (and tends to h²): 1.6, 2.2, 2.5.
  EXPECT_GT((1 - fraction[2]) / (1 - fraction[3]), 2.0);
  EXPECT_GT((1 - fraction[1]) / (1 - fraction[2]), 1.8);
}

// Issue 28, defect 4. At E = 2e6 Pa the uniform level-2 mesh sags 3.9 % of L and level 0, locked,
// 1.3 %: the paper's linear range (material nonlinearity, strains below 0.02 here) keeps every tet
// at level 0, 0.027 L from the fine mesh. The strain-recovery indicator refines where the coarse
// strain field is wrong. Static steps of 100 s (backward Euler) let the selection run between the
// solves, one level per step; 6 steps settle. The distance: the largest over the 20 level-0 nodes.
struct Level0Nodes {
  std::vector<Real> x;        // 3 per node, by id
  int levels[3] = {0, 0, 0};  // active tets per level
};

Level0Nodes static_moderate_sag(int min_level, Real error_tolerance) {
  const std::string scene =
      "nendo: 1\nmethod: fem\ndimension: 3\ngravity: [0, 0, -9.81]\n"
      "time: {end: 600, dt: 100, integrator: implicit}\ngrid: {dx: 0.45, block: 3}\n"
      "materials: {beam: {model: stvk, E: 2.0e6, nu: 0.3, density: 1000}}\n"
      "bodies: [{shape: box, material: beam, min: [0, 0, 0], max: [0.4, 0.1, 0.1], fixed_min: [-1, -1, -1], "
      "fixed_max: [0, 1, 1]}]\n"
      "fem: {spacing: 0.1, max_level: 2}\nimplicit: {operator: assembled}\n";
  testing::MethodRun run(MPI_COMM_WORLD, scene,
                         {"fem.min_level=" + std::to_string(min_level),
                          "fem.error_tolerance=" + std::to_string(error_tolerance)});
  run.advance(6);
  struct Node {
    ParticleId id;
    Real x[3];
  };
  const ParticleSet& ps = run.space->particles();
  std::vector<Node> mine;
  for (std::size_t p = 0; p < ps.size(); ++p)
    if (ps.ids()[p] < 20)
      mine.push_back(
          {ps.ids()[p], {ps.positions()[3 * p], ps.positions()[3 * p + 1], ps.positions()[3 * p + 2]}});
  Level0Nodes out;
  out.x.assign(60, 0.0);
  for (const Node& n : testing::all_gather(MPI_COMM_WORLD, mine)) std::copy_n(n.x, 3, &out.x[3 * n.id]);
  const auto& fem = static_cast<const HierarchicalFem&>(*run.method);
  const fem::TetHierarchy whole = fem.whole_hierarchy();
  for (fem::Index t : fem.active_tets()) ++out.levels[whole.level[t]];
  return out;
}

Real distance(const Level0Nodes& a, const Level0Nodes& b) {
  Real d = 0;
  for (int n = 0; n < 20; ++n)
    d = std::max(d, std::hypot(a.x[3 * n] - b.x[3 * n], a.x[3 * n + 1] - b.x[3 * n + 1],
                               a.x[3 * n + 2] - b.x[3 * n + 2]));
  return d / kLength;
}

TEST(FemCantilever, AdaptiveRunTracksTheFineMeshAtModerateSag) {
  const Level0Nodes fine = static_moderate_sag(2, 0.003);
  Real tip = 0;
  for (int n = 0; n < 20; ++n)
    if (std::abs(fine.x[3 * n] - kLength) < 0.02) tip = std::max(tip, -fine.x[3 * n + 2]);
  EXPECT_GT(tip, 0.03 * kLength);  // a sag of a few per cent of L (bottom tip nodes: 3.9 %)
  // The paper's criterion alone (an error tolerance no strain reaches): level 0 throughout.
  const Level0Nodes paper = static_moderate_sag(0, 1e9);
  EXPECT_EQ(paper.levels[0], 24);
  EXPECT_GT(distance(paper, fine), 0.02);
  // The defaults: well within spec §8 test 5's 0.02 L (measured: 0.0018 L; levels 0/1/2: 6/54/720 tets).
  const Level0Nodes defaults = static_moderate_sag(0, 0.003);
  EXPECT_GT(defaults.levels[2], 0);
  EXPECT_LT(distance(defaults, fine), 0.005);
  // The error falls as the tolerance tightens and tends to the fine mesh (spec §8 test 7; measured:
  // 0.027 L at τ_err = 0.01, which refines nothing here, 0.00024 L at 0.001).
  const Level0Nodes loose = static_moderate_sag(0, 0.01), tight = static_moderate_sag(0, 0.001);
  EXPECT_LE(distance(defaults, fine), distance(loose, fine));
  EXPECT_LE(distance(tight, fine), distance(defaults, fine));
  EXPECT_LT(distance(tight, fine), 0.001);
}

}  // namespace
}  // namespace nendo
