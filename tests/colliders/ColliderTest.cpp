// Analytic colliders (spec 002 §11.1): φ and n of every shape against closed forms in 2D and 3D,
// n against the normalised central difference of φ, the three boundary types on a plane, moving
// colliders, scene order, and the block helper against the per-node call.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "colliders/Collider.hpp"
#include "core/Error.hpp"

namespace nendo {
namespace {

ColliderSettings plane(Vec3 point, Vec3 normal, std::string boundary = "separate", Real friction = 0,
                       Vec3 velocity = {}) {
  ColliderSettings s;
  s.shape = "plane", s.boundary = boundary, s.friction = friction, s.velocity = velocity;
  s.point = point, s.normal = normal;
  return s;
}

ColliderSettings box(Vec3 min, Vec3 max, bool inside) {
  ColliderSettings s;
  s.shape = "box", s.boundary = "separate", s.min = min, s.max = max, s.inside = inside;
  return s;
}

ColliderSettings sphere(Vec3 center, Real radius, bool inside) {
  ColliderSettings s;
  s.shape = "sphere", s.boundary = "separate", s.center = center, s.radius = radius, s.inside = inside;
  return s;
}

ColliderSettings cylinder(Vec3 center, Real radius, int axis, bool inside) {
  ColliderSettings s;
  s.shape = "cylinder", s.boundary = "separate", s.center = center, s.radius = radius, s.axis = axis;
  s.inside = inside;
  return s;
}

// φ and n of a single collider at x (time 0), compared with expected values to 1e-14.
template <int D>
void expect_phi_normal(const ColliderSettings& settings, Vec3 x, Real phi, Vec3 n) {
  const ColliderSet set({settings}, D);
  SCOPED_TRACE(settings.shape + (settings.inside ? " inside" : " outside") + " at (" + std::to_string(x[0]) +
               ", " + std::to_string(x[1]) + ", " + std::to_string(x[2]) + ")");
  EXPECT_NEAR(set[0].phi<D>(x.data(), 0), phi, 1e-14);
  Vec3 normal = {7, 7, 7};  // the third component must stay untouched in 2D
  set[0].normal<D>(x.data(), 0, normal.data());
  for (int a = 0; a < D; ++a) EXPECT_NEAR(normal[a], n[a], 1e-14) << "axis " << a;
  if (D == 2) {
    EXPECT_EQ(normal[2], 7);
  }
}

const Real r2 = std::sqrt(0.5);

TEST(ColliderShape, Plane) {
  // 3D: y = 1, material above.
  const ColliderSettings floor = plane({0, 1, 0}, {0, 1, 0});
  expect_phi_normal<3>(floor, {5, 3, -2}, 2, {0, 1, 0});
  expect_phi_normal<3>(floor, {5, 1, -2}, 0, {0, 1, 0});
  expect_phi_normal<3>(floor, {5, 0.25, -2}, -0.75, {0, 1, 0});
  // A tilted plane through (1, 2, 3) with normal (1, 2, 2)/3, given unnormalised.
  const ColliderSettings tilted = plane({1, 2, 3}, {1, 2, 2});
  expect_phi_normal<3>(tilted, {2, 4, 5}, (1 + 4 + 4) / 3.0, {1 / 3.0, 2 / 3.0, 2 / 3.0});
  expect_phi_normal<3>(tilted, {0, 0, 3}, (-1 - 4) / 3.0, {1 / 3.0, 2 / 3.0, 2 / 3.0});
  // 2D: normal (-3, 4)/5 through (1, 1); z of the point is ignored.
  const ColliderSettings line = plane({1, 1, 0}, {-3, 4, 0});
  expect_phi_normal<2>(line, {1, 3, 99}, 8 / 5.0, {-0.6, 0.8, 0});
  expect_phi_normal<2>(line, {5, 4, -99}, 0, {-0.6, 0.8, 0});
  expect_phi_normal<2>(line, {2, 0, 0}, -7 / 5.0, {-0.6, 0.8, 0});
}

TEST(ColliderShape, BoxInside) {
  // Material kept in [0,2]x[0,4]x[0,6]: φ = distance to the nearest wall, n into the box.
  const ColliderSettings b = box({0, 0, 0}, {2, 4, 6}, true);
  expect_phi_normal<3>(b, {0.5, 2, 3}, 0.5, {1, 0, 0});
  expect_phi_normal<3>(b, {1, 3.75, 3}, 0.25, {0, -1, 0});
  expect_phi_normal<3>(b, {1, 2, 5.5}, 0.5, {0, 0, -1});
  expect_phi_normal<3>(b, {2, 2, 3}, 0, {-1, 0, 0});                       // on the x = 2 wall
  expect_phi_normal<3>(b, {1, -0.5, 3}, -0.5, {0, 1, 0});                  // below the y = 0 wall
  expect_phi_normal<3>(b, {3, 5, 3}, -std::sqrt(2.0), {-r2, -r2, 0});      // off an edge
  expect_phi_normal<3>(b, {-1, -2, 8}, -3, {1 / 3.0, 2 / 3.0, -2 / 3.0});  // off a corner
  // 2D: [0,2]x[0,4].
  const ColliderSettings b2 = box({0, 0, 0}, {2, 4, 0}, true);
  expect_phi_normal<2>(b2, {0.5, 2, 50}, 0.5, {1, 0, 0});
  expect_phi_normal<2>(b2, {1, 3.5, 0}, 0.5, {0, -1, 0});
  expect_phi_normal<2>(b2, {1, 4, 0}, 0, {0, -1, 0});
  expect_phi_normal<2>(b2, {-3, 8, 0}, -5, {0.6, -0.8, 0});
}

TEST(ColliderShape, BoxOutside) {
  // A solid box [0,2]x[0,4]x[0,6]: the exact signed distance, n away from the box.
  const ColliderSettings b = box({0, 0, 0}, {2, 4, 6}, false);
  expect_phi_normal<3>(b, {0.5, 2, 3}, -0.5, {-1, 0, 0});
  expect_phi_normal<3>(b, {1, 3.75, 3}, -0.25, {0, 1, 0});
  expect_phi_normal<3>(b, {2, 2, 3}, 0, {1, 0, 0});
  expect_phi_normal<3>(b, {1, -0.5, 3}, 0.5, {0, -1, 0});
  expect_phi_normal<3>(b, {3, 5, 3}, std::sqrt(2.0), {r2, r2, 0});
  expect_phi_normal<3>(b, {-1, -2, 8}, 3, {-1 / 3.0, -2 / 3.0, 2 / 3.0});
  const ColliderSettings b2 = box({0, 0, 0}, {2, 4, 0}, false);
  expect_phi_normal<2>(b2, {1.5, 2, 0}, -0.5, {1, 0, 0});
  expect_phi_normal<2>(b2, {0, 2, 0}, 0, {-1, 0, 0});
  expect_phi_normal<2>(b2, {5, -4, 0}, 5, {0.6, -0.8, 0});
}

TEST(ColliderShape, Sphere) {
  const ColliderSettings solid = sphere({1, 2, 3}, 2, false);
  expect_phi_normal<3>(solid, {1, 2, 6}, 1, {0, 0, 1});
  expect_phi_normal<3>(solid, {1, 0, 3}, 0, {0, -1, 0});
  expect_phi_normal<3>(solid, {1 + 2 / 3.0, 2 + 2 / 3.0, 3 + 1 / 3.0}, -1, {2 / 3.0, 2 / 3.0, 1 / 3.0});
  expect_phi_normal<3>(solid, {1, 2, 3}, -2, {1, 0, 0});  // the centre: n = e_x by convention
  const ColliderSettings hollow = sphere({1, 2, 3}, 2, true);
  expect_phi_normal<3>(hollow, {1, 2, 6}, -1, {0, 0, -1});
  expect_phi_normal<3>(hollow, {1, 0, 3}, 0, {0, 1, 0});
  expect_phi_normal<3>(hollow, {1 + 2 / 3.0, 2 + 2 / 3.0, 3 + 1 / 3.0}, 1, {-2 / 3.0, -2 / 3.0, -1 / 3.0});
  // 2D: a disc; z ignored.
  const ColliderSettings disc = sphere({1, 2, 0}, 1, false);
  expect_phi_normal<2>(disc, {4, 6, 30}, 4, {0.6, 0.8, 0});
  expect_phi_normal<2>(disc, {1.6, 2.8, 0}, 0, {0.6, 0.8, 0});
  const ColliderSettings bowl = sphere({1, 2, 0}, 1, true);
  expect_phi_normal<2>(bowl, {1.3, 2.4, 0}, 0.5, {-0.6, -0.8, 0});
  expect_phi_normal<2>(bowl, {4, 6, 0}, -4, {-0.6, -0.8, 0});
}

TEST(ColliderShape, Cylinder) {
  // 3D, axis z through (1, 2, *), radius 1: the z coordinate does not matter.
  const ColliderSettings solid = cylinder({1, 2, 0}, 1, 2, false);
  expect_phi_normal<3>(solid, {1, 4, 7}, 1, {0, 1, 0});
  expect_phi_normal<3>(solid, {1.6, 2.8, -3}, 0, {0.6, 0.8, 0});
  expect_phi_normal<3>(solid, {1.3, 1.6, 100}, -0.5, {0.6, -0.8, 0});
  const ColliderSettings pipe = cylinder({1, 2, 0}, 1, 2, true);
  expect_phi_normal<3>(pipe, {1, 4, 7}, -1, {0, -1, 0});
  expect_phi_normal<3>(pipe, {1.3, 1.6, 100}, 0.5, {-0.6, 0.8, 0});
  // Axis x through (*, 0, 0), radius 5.
  const ColliderSettings along_x = cylinder({9, 0, 0}, 5, 0, false);
  expect_phi_normal<3>(along_x, {-4, 6, 8}, 5, {0, 0.6, 0.8});
  // 2D, axis y through x = 1, radius 0.5: the slab 0.5 <= x <= 1.5.
  const ColliderSettings slab = cylinder({1, 7, 0}, 0.5, 1, false);
  expect_phi_normal<2>(slab, {2, -3, 0}, 0.5, {1, 0, 0});
  expect_phi_normal<2>(slab, {0.75, 40, 0}, -0.25, {-1, 0, 0});
  expect_phi_normal<2>(slab, {1.5, 0, 0}, 0, {1, 0, 0});
  const ColliderSettings channel = cylinder({1, 7, 0}, 0.5, 1, true);
  expect_phi_normal<2>(channel, {0.75, 40, 0}, 0.25, {1, 0, 0});
  expect_phi_normal<2>(channel, {-1, 40, 0}, -1.5, {1, 0, 0});
  // 2D, axis x through y = 2, radius 1: the slab 1 <= y <= 3.
  expect_phi_normal<2>(cylinder({0, 2, 0}, 1, 0, false), {5, 4, 0}, 1, {0, 1, 0});
}

// n = ∇φ/|∇φ| by central differences (h = 1e-6) at random points, skipping points whose stencil
// crosses a kink of φ (one-sided differences disagree), and |∇φ| = 1: φ is a distance.
template <int D>
void check_normal_is_gradient(const ColliderSettings& settings) {
  SCOPED_TRACE(settings.shape + (settings.inside ? " inside" : " outside") + " in " + std::to_string(D) +
               "D");
  const ColliderSet set({settings}, D);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<Real> coordinate(-3, 5);
  const Real h = 1e-6;
  int checked = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    Real x[D], n[D], gradient[D];
    for (int a = 0; a < D; ++a) x[a] = coordinate(rng);
    const Real phi = set[0].phi<D>(x, 0);
    bool smooth = true;
    Real length = 0;
    for (int a = 0; a < D; ++a) {
      Real plus[D], minus[D];
      std::copy(x, x + D, plus), std::copy(x, x + D, minus);
      plus[a] += h, minus[a] -= h;
      const Real up = set[0].phi<D>(plus, 0), down = set[0].phi<D>(minus, 0);
      if (std::fabs((up - phi) - (phi - down)) > 1e-4 * h) smooth = false;
      gradient[a] = (up - down) / (2 * h);
      length += gradient[a] * gradient[a];
    }
    if (!smooth) continue;
    ++checked;
    length = std::sqrt(length);
    ASSERT_NEAR(length, 1, 1e-6) << "|grad phi| at trial " << trial;
    set[0].normal<D>(x, 0, n);
    for (int a = 0; a < D; ++a)
      ASSERT_NEAR(n[a], gradient[a] / length, 1e-6) << "axis " << a << " trial " << trial;
  }
  EXPECT_GT(checked, 1800);
}

TEST(ColliderShape, NormalIsTheNormalisedGradientOfPhi) {
  for (bool inside : {true, false}) {
    check_normal_is_gradient<3>(box({-1, 0, 0.5}, {2, 3, 4}, inside));
    check_normal_is_gradient<2>(box({-1, 0, 0}, {2, 3, 0}, inside));
    check_normal_is_gradient<3>(sphere({1, 0.5, 1}, 1.5, inside));
    check_normal_is_gradient<2>(sphere({1, 0.5, 0}, 1.5, inside));
    for (int axis = 0; axis < 3; ++axis)
      check_normal_is_gradient<3>(cylinder({1, 0.5, 1}, 1.5, axis, inside));
    for (int axis = 0; axis < 2; ++axis)
      check_normal_is_gradient<2>(cylinder({1, 0.5, 0}, 1.5, axis, inside));
  }
  check_normal_is_gradient<3>(plane({1, 2, 3}, {1, -2, 2}));
  check_normal_is_gradient<2>(plane({1, 2, 0}, {1, -2, 0}));
}

TEST(ColliderShape, MovingShapeIsTheShapeAtZeroTranslated) {
  ColliderSettings moving = sphere({1, 2, 3}, 2, false);
  moving.velocity = {0.5, -1, 2};
  const ColliderSet set({moving}, 3);
  const Real t = 2;
  const Real x[3] = {2, 2, 7}, shifted[3] = {2 - 1, 2 + 2, 7 - 4};
  const ColliderSet at_rest({sphere({1, 2, 3}, 2, false)}, 3);
  EXPECT_EQ(set[0].phi<3>(x, t), at_rest[0].phi<3>(shifted, 0));
  EXPECT_NEAR(set[0].phi<3>(x, t), 0, 1e-15);  // (2, 2, 7) is on the sphere centred at (2, 0, 7)
  Real n[3];
  set[0].normal<3>(x, t, n);
  EXPECT_NEAR(n[0], 0, 1e-15);
  EXPECT_NEAR(n[1], 1, 1e-15);
  EXPECT_NEAR(n[2], 0, 1e-15);
}

// The response of one collider, the floor y = 0 (normal +y), to velocity v at a point below it.
Vec3 respond(const std::string& boundary, Real friction, Vec3 v, Vec3 x = {0.3, -0.1, 0.2}) {
  const ColliderSet set({plane({0, 0, 0}, {0, 1, 0}, boundary, friction)}, 3);
  set.project<3>(x.data(), v.data(), 0);
  return v;
}

void expect_vector(const Vec3& actual, const Vec3& expected) {
  for (int a = 0; a < 3; ++a) EXPECT_DOUBLE_EQ(actual[a], expected[a]) << "component " << a;
}

TEST(ColliderResponse, SeparateKineticFriction) {
  // v_n = -2, v_t = (4, 0, 0): ‖v_t‖ = 4 > μ_f |v_n| = 1, so v_t shrinks by 1 and v_n goes.
  expect_vector(respond("separate", 0.5, {4, -2, 0}), {3, 0, 0});
  // v_t = (3, 0, 4), ‖v_t‖ = 5: scale 1 - 0.5·2/5 = 0.8.
  expect_vector(respond("separate", 0.5, {3, -2, 4}), {2.4, 0, 3.2});
  // Frictionless: the tangential part is kept whole.
  expect_vector(respond("separate", 0, {3, -2, 4}), {3, 0, 4});
}

TEST(ColliderResponse, SeparateStaticFriction) {
  expect_vector(respond("separate", 0.5, {0.5, -2, 0}), {0, 0, 0});  // ‖v_t‖ = 0.5 < 1
  expect_vector(respond("separate", 0.5, {0, -2, -1}), {0, 0, 0});   // ‖v_t‖ = 1 = μ_f|v_n|: sticks
}

TEST(ColliderResponse, SeparateZeroTangentialGuard) {
  // μ_f = 0 and v_t = 0: the kinetic formula would divide 0 by 0; the guard gives v_rel' = 0.
  const Vec3 v = respond("separate", 0, {0, -2, 0});
  expect_vector(v, {0, 0, 0});
  for (Real c : v) EXPECT_FALSE(std::isnan(c));
}

TEST(ColliderResponse, Separating) {
  const Vec3 away = {1.25, 2, -0.75};
  const Vec3 kept = respond("separate", 0.5, away);
  EXPECT_EQ(std::memcmp(kept.data(), away.data(), sizeof(Vec3)), 0) << "separate: unchanged bit for bit";
  expect_vector(respond("separate", 0.5, {1.25, 0, -0.75}), {1.25, 0, -0.75});  // v_n = 0 separates
  expect_vector(respond("slip", 0.5, away), {1.25, 0, -0.75});
  expect_vector(respond("sticky", 0.5, away), {0, 0, 0});
}

TEST(ColliderResponse, Approaching) {
  expect_vector(respond("slip", 0.5, {4, -2, 1}), {4, 0, 1});  // slip ignores friction
  expect_vector(respond("sticky", 0, {4, -2, 1}), {0, 0, 0});
}

TEST(ColliderResponse, OnTheSurfaceCollides) {
  expect_vector(respond("sticky", 0, {4, -2, 1}, {0.3, 0, 0.2}), {0, 0, 0});  // φ = 0
}

TEST(ColliderResponse, FreeRegionIsUntouchedBitForBit) {
  const Vec3 v = {0.1, -0.3, 1e-300};
  const ColliderSet set({plane({0, 0, 0}, {0, 1, 0}, "sticky"), sphere({5, 5, 5}, 1, false),
                         box({-10, -10, -10}, {10, 10, 10}, true)},
                        3);
  for (const Vec3& x : {Vec3{0, 1e-12, 0}, Vec3{3, 2, 1}, Vec3{-9, 9, 9}}) {
    Vec3 w = v;
    EXPECT_FALSE(set.project<3>(x.data(), w.data(), 0));
    EXPECT_EQ(std::memcmp(w.data(), v.data(), sizeof(Vec3)), 0);
  }
}

TEST(ColliderResponse, MovingPlaneUsesRelativeVelocity) {
  // The floor moves with (0.5, 1, 0): at t = 2 it is y = 2. Material at rest at y = 1.5 is hit.
  const Vec3 x = {0, 1.5, 0};
  for (Real friction : {0.0, 0.5}) {
    const ColliderSet set({plane({0, 0, 0}, {0, 1, 0}, "separate", friction, {0.5, 1, 0})}, 3);
    Vec3 v = {0, 0, 0};
    EXPECT_TRUE(set.project<3>(x.data(), v.data(), 2));
    // v_rel = (-0.5, -1, 0): v_n = -1, ‖v_t‖ = 0.5. μ_f = 0: the material gets the plane's normal
    // velocity and keeps its own tangential one; μ_f = 0.5: it sticks and moves with the plane.
    expect_vector(v, friction == 0 ? Vec3{0, 1, 0} : Vec3{0.5, 1, 0});
  }
  // Above the moving floor nothing happens; and a node moving up faster than the floor separates.
  const ColliderSet set({plane({0, 0, 0}, {0, 1, 0}, "separate", 0, {0.5, 1, 0})}, 3);
  Vec3 v = {0, 0, 0};
  EXPECT_FALSE(set.project<3>(Vec3{0, 2.5, 0}.data(), v.data(), 2));
  expect_vector(v, {0, 0, 0});
  v = {0, 3, 0};
  EXPECT_FALSE(set.project<3>(x.data(), v.data(), 2));
  expect_vector(v, {0, 3, 0});
  // Sticky and slip take the relative velocity too.
  const ColliderSet sticky({plane({0, 0, 0}, {0, 1, 0}, "sticky", 0, {0.5, 1, 0})}, 3);
  v = {3, -4, 5};
  sticky.project<3>(x.data(), v.data(), 2);
  expect_vector(v, {0.5, 1, 0});
  const ColliderSet slip({plane({0, 0, 0}, {0, 1, 0}, "slip", 0, {0.5, 1, 0})}, 3);
  v = {3, -4, 5};
  slip.project<3>(x.data(), v.data(), 2);
  expect_vector(v, {3, 1, 5});
}

TEST(ColliderResponse, TwoDimensions) {
  // 2D floor with normal (0, 1): only two components are read and written.
  const ColliderSet set({plane({0, 0, 0}, {0, 1, 0}, "separate", 0.5)}, 2);
  Real x[2] = {0.3, -0.1}, v[3] = {4, -2, 99};
  set.project<2>(x, v, 0);
  EXPECT_DOUBLE_EQ(v[0], 3);
  EXPECT_DOUBLE_EQ(v[1], 0);
  EXPECT_EQ(v[2], 99);
}

TEST(ColliderSet, CollidersApplyInSceneOrder) {
  // A conveyor floor y = 0 (sticky, moving along x at 1) and a slip wall x = 0, normal +x; a node
  // in the corner moving into both. Floor then wall: (1, 0) then the wall removes v_x -> (0, 0).
  // Wall then floor: (0, -3) then the floor sets (1, 0).
  const ColliderSettings floor = plane({0, 0, 0}, {0, 1, 0}, "sticky", 0, {1, 0, 0});
  const ColliderSettings wall = plane({0, 0, 0}, {1, 0, 0}, "slip");
  const Real x[2] = {-0.1, -0.1};
  Real v[2] = {-3, -3};
  EXPECT_TRUE(ColliderSet({floor, wall}, 2).project<2>(x, v, 0));
  EXPECT_EQ(v[0], 0);
  EXPECT_EQ(v[1], 0);
  v[0] = -3, v[1] = -3;
  EXPECT_TRUE(ColliderSet({wall, floor}, 2).project<2>(x, v, 0));
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(v[1], 0);
}

TEST(ColliderSet, InvalidSettingsNameTheCollider) {
  auto message = [](ColliderSettings bad) {
    try {
      ColliderSet({plane({0, 0, 0}, {0, 1, 0}), bad}, 3);
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  ColliderSettings torus = sphere({0, 0, 0}, 1, false);
  torus.shape = "torus";
  EXPECT_EQ(message(torus), "colliders[1]: shape 'torus' is not a collider shape");
  ColliderSettings glue = sphere({0, 0, 0}, 1, false);
  glue.boundary = "glue";
  EXPECT_EQ(message(glue), "colliders[1]: boundary 'glue' is not one of sticky, slip, separate");
  ColliderSettings negative = sphere({0, 0, 0}, 1, false);
  negative.friction = -0.1;
  EXPECT_EQ(message(negative), "colliders[1]: friction must be at least 0");
  EXPECT_EQ(message(cylinder({0, 0, 0}, 1, 3, false)),
            "colliders[1]: cylinder collider: axis 3 is not one of the 3 axes");
  EXPECT_EQ(message(plane({0, 0, 0}, {0, 0, 0})),
            "colliders[1]: plane collider: normal has no component in the first 3 axes");
}

// project_block gives every node of positive mass what project() gives it, and leaves the others
// and the components beyond D (here a FLIP-like second velocity) untouched.
template <int D>
void check_block_matches_nodes() {
  SCOPED_TRACE(std::to_string(D) + "D");
  ColliderSettings ball = sphere({0.31, 0.52, 0.4}, 0.2, false);
  ball.boundary = "sticky", ball.velocity = {0.1, -0.2, 0.05};
  ColliderSettings walls = box({0.02, 0.03, 0.04}, {0.97, 0.95, 0.9}, true);
  walls.friction = 0.3;
  ColliderSettings tube = cylinder({0.7, 0.1, 0.6}, 0.15, 1, false);
  tube.boundary = "slip";
  const ColliderSet set({plane({0, 0.2, 0}, {0.1, 1, 0.2}, "separate", 0.4), ball, walls, tube}, D);
  const int edge = 4, nodes = D == 3 ? 64 : 16, stride_m = 3, stride_v = 2 * D;
  const Real time = 0.75;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<Real> speed(-2, 2);
  std::bernoulli_distribution empty(0.2);
  NodeBlock block;
  block.origin = {-0.013, 0.002, -0.021};
  block.dx = 1.0 / 32;
  int changed = 0;
  for (std::int64_t bk = 0; bk < (D == 3 ? 9 : 1); ++bk) {
    for (std::int64_t bj = 0; bj < 9; ++bj) {
      for (std::int64_t bi = 0; bi < 9; ++bi) {
        block.first = {bi * edge, bj * edge, bk * edge};
        block.edge = edge;
        std::vector<Real> mass(nodes * stride_m), velocity(nodes * stride_v);
        for (int i = 0; i < nodes; ++i) mass[i * stride_m] = empty(rng) ? 0.0 : 1.0 + speed(rng) * speed(rng);
        for (Real& c : velocity) c = speed(rng);
        std::vector<Real> expected = velocity;
        for (int node = 0; node < nodes; ++node) {
          if (mass[node * stride_m] == 0.0) continue;
          const int local[3] = {node % edge, (node / edge) % edge, node / (edge * edge)};
          Real x[D];
          for (int a = 0; a < D; ++a)
            x[a] = static_cast<Real>(block.first[a] + local[a]) * block.dx + block.origin[a];
          set.project<D>(x, expected.data() + node * stride_v, time);
        }
        const std::vector<Real> before = velocity;
        set.project_block<D>(block, mass.data(), stride_m, velocity.data(), stride_v, time);
        ASSERT_EQ(std::memcmp(velocity.data(), expected.data(), velocity.size() * sizeof(Real)), 0)
            << "block " << bi << " " << bj << " " << bk;
        for (int node = 0; node < nodes; ++node) {
          if (std::memcmp(&velocity[node * stride_v], &before[node * stride_v], D * sizeof(Real)) != 0)
            ++changed;
        }
      }
    }
  }
  EXPECT_GT(changed, 100);  // the blocks do meet the colliders
}

TEST(ColliderSet, BlockMatchesPerNodeProjection) {
  check_block_matches_nodes<2>();
  check_block_matches_nodes<3>();
}

}  // namespace
}  // namespace nendo
