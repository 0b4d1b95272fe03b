// Example-based shape matching (spec 001) on 1-4 ranks: the weight rules (§8 test 4), the polar
// decomposition, the meshes, rest and rigid invariance (test 1), example descriptors (test 2), the
// projection (test 3), β = 0 and no examples being classic shape matching (test 5) and agreeing with
// a direct implementation of Müller et al. 2005, bitwise identical results on any rank count
// (each run compared with the same run by one rank alone), and the set-up's share of a body on
// each rank (its vertices and what their regions read, never the whole mesh).
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <Eigen/SVD>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>

#include "ShapeMatchingHarness.hpp"
#include "bodies/TetMesher.hpp"
#include "core/CollectiveError.hpp"
#include "io/GmshMesh.hpp"
#include "methods/shape_matching/BodyShare.hpp"
#include "methods/shape_matching/ExampleProjection.hpp"
#include "methods/shape_matching/ExampleShapes.hpp"
#include "methods/shape_matching/RegionPolar.hpp"
#include "support/FreshDirectory.hpp"

namespace nendo {
namespace {

using shape_matching::Mat3;
using testing::bar_scene;
using testing::SmRun;
using testing::SmVertex;

// ---------------------------------------------------------------------------------------------
// Weight rules (§4.3, §8 test 4).

TEST(ShapeMatchingWeights, SpecUnitCases) {
  Real a[3] = {1.2, -0.5, 0.3};
  shape_matching::remove_negative_weights(a, 3);
  EXPECT_NEAR(a[0], 0.95, 1e-15);
  EXPECT_EQ(a[1], 0.0);
  EXPECT_NEAR(a[2], 0.05, 1e-15);
  Real b[3] = {1.5, -0.3, -0.2};
  shape_matching::remove_negative_weights(b, 3);
  EXPECT_NEAR(b[0], 1.0, 1e-15);
  EXPECT_EQ(b[1], 0.0);
  EXPECT_NEAR(b[2], 0.0, 1e-15);
}

// The paper's literal rule: the smallest negative weight becomes 0 and its magnitude divided by n
// is taken from all the other weights; repeated until none is negative (converges geometrically).
void literal_rule(std::vector<Real>& w) {
  const int n = static_cast<int>(w.size()) - 1;
  for (int it = 0; it < 100000; ++it) {
    const auto j = std::min_element(w.begin(), w.end()) - w.begin();
    if (w[j] >= -1e-300) break;
    const Real a = -w[j];
    for (auto& x : w) x -= a / n;
    w[j] = 0;
  }
  for (auto& x : w) x = std::max<Real>(x, 0);
}

TEST(ShapeMatchingWeights, ActiveSetMatchesTheLimitOfTheLiteralRule) {
  std::mt19937_64 random(7);
  std::uniform_real_distribution<Real> u(-1, 2);
  for (int trial = 0; trial < 5000; ++trial) {
    const int n = 1 + trial % 5;
    std::vector<Real> w(n + 1);
    Real sum = 0;
    for (int k = 1; k <= n; ++k) w[k] = u(random), sum += w[k];
    w[0] = 1 - sum;
    std::vector<Real> literal = w, active = w;
    literal_rule(literal);
    shape_matching::remove_negative_weights(active.data(), n + 1);
    Real total = 0;
    for (int k = 0; k <= n; ++k) {
      EXPECT_GE(active[k], 0.0);
      EXPECT_NEAR(active[k], literal[k], 1e-12) << "trial " << trial << " k " << k;
      total += active[k];
    }
    EXPECT_NEAR(total, 1.0, 1e-13);
  }
}

TEST(ShapeMatchingWeights, BlendTowardRestKeepsTheSum) {
  const Real w[2] = {0.7, 0.5};  // least-squares weights of two examples
  Real W[3];
  shape_matching::example_weights(w, 2, 0.9, W);  // W = (-0.2, 0.7, 0.5) -> (0, 0.6, 0.4)
  EXPECT_NEAR(W[0], 0.1 * 1.0, 1e-15);
  EXPECT_NEAR(W[1], 0.9 * 0.6, 1e-15);
  EXPECT_NEAR(W[2], 0.9 * 0.4, 1e-15);
  EXPECT_NEAR(W[0] + W[1] + W[2], 1.0, 1e-15);
}

// ---------------------------------------------------------------------------------------------
// Polar decomposition and meshes.

TEST(ShapeMatchingPolar, RotationTimesStretchIsTheMatrix) {
  std::mt19937_64 random(3);
  std::uniform_real_distribution<Real> u(-1, 1);
  for (int trial = 0; trial < 2000; ++trial) {
    Mat3 A = Mat3::Identity();
    for (int i = 0; i < 9; ++i) A.data()[i] += 0.6 * u(random);
    if (trial % 7 == 0) A.col(0) *= -1;  // inverted: the SVD route
    const shape_matching::Polar p = shape_matching::polar(A);
    EXPECT_LT((p.R * p.S - A).norm(), 1e-12 * A.norm());
    EXPECT_LT((p.R.transpose() * p.R - Mat3::Identity()).norm(), 1e-12);
    EXPECT_NEAR(p.R.determinant(), 1.0, 1e-12);
    EXPECT_LT((p.S - p.S.transpose()).norm(), 1e-12 * A.norm());
  }
}

// A rotation by `angle` about a random axis.
Mat3 random_rotation(std::mt19937_64& random, Real angle) {
  std::normal_distribution<Real> n(0, 1);
  Eigen::Vector3d axis(n(random), n(random), n(random));
  return Eigen::AngleAxisd(angle, axis.normalized()).toRotationMatrix();
}

// A stretch with eigenvalues in [0.7, 1.4] in a random frame.
Mat3 random_stretch(std::mt19937_64& random) {
  std::uniform_real_distribution<Real> u(0.7, 1.4);
  const Mat3 Q = random_rotation(random, 2.0);
  return Q * Eigen::Vector3d(u(random), u(random), u(random)).asDiagonal() * Q.transpose();
}

// The warm start (item 4a of issue 31) gives polar(A)'s rotation to round-off from any previous
// rotation: within a few iterations from last step's nearby one, through polar() from scratch from
// a rotation 170° away or for an inverted A (the SVD route, bitwise the same as polar()); a flat
// region (det A = 0) converges to the SVD route's rotation.
TEST(ShapeMatchingPolar, WarmStartGivesTheRotationFromScratch) {
  std::mt19937_64 random(5);
  std::uniform_real_distribution<Real> u(0, 1);
  for (int trial = 0; trial < 2000; ++trial) {
    const Mat3 R = random_rotation(random, 3.1 * u(random)), S = random_stretch(random);
    const Mat3 A = R * S;
    const Real step = trial % 3 == 0 ? 1e-4 : trial % 3 == 1 ? 1e-2 : 0.3;  // rotation since the last step
    Real q[4];
    shape_matching::quaternion_of(random_rotation(random, step) * R, q);
    const shape_matching::Polar scratch = shape_matching::polar(A);
    Real q_iterated[4] = {q[0], q[1], q[2], q[3]};
    Mat3 iterated;
    const int iterations = shape_matching::warm_rotation(A, q_iterated, iterated);
    ASSERT_GT(iterations, 0) << "trial " << trial;
    EXPECT_LE(iterations, step < 1e-3 ? 2 : step < 0.1 ? 3 : 5) << "trial " << trial;
    const shape_matching::Polar warm = shape_matching::polar_from(A, q);
    EXPECT_LT((warm.R - scratch.R).norm(), 1e-14) << "trial " << trial;
    EXPECT_LT((warm.S - scratch.S).norm(), 1e-14) << "trial " << trial;
    EXPECT_LT((shape_matching::rotation_matrix(q) - scratch.R).norm(), 1e-14) << "trial " << trial;
  }
}

TEST(ShapeMatchingPolar, WarmStartOnLargeRotationsFlatAndInvertedRegions) {
  std::mt19937_64 random(6);
  for (int trial = 0; trial < 500; ++trial) {
    const Mat3 R = random_rotation(random, 1.0), S = random_stretch(random);
    Real q[4];
    // A region that turned by 170° in one step: Newton from the old rotation meets a Hessian that
    // is not positive definite (for a rigid turn, 2 cos 170° about the axis) and polar() from
    // scratch takes over.
    const Mat3 turn = random_rotation(random, 170 * M_PI / 180);
    shape_matching::quaternion_of(R, q);
    Mat3 unused;
    Real probe[4] = {q[0], q[1], q[2], q[3]};
    EXPECT_EQ(shape_matching::warm_rotation(turn * R, probe, unused), 0) << "trial " << trial;
    Mat3 A = turn * R * S;
    EXPECT_LT((shape_matching::polar_from(A, q).R - shape_matching::polar(A).R).norm(), 1e-14);
    // Flat (every vertex of the region on a floor plane, det A = 0): Newton still applies and
    // gives the SVD route's rotation.
    Mat3 flat = R * S;
    flat.row(1).setZero();
    const shape_matching::Polar svd = shape_matching::polar(flat);
    Real q_flat[4];
    shape_matching::quaternion_of(random_rotation(random, 1e-3) * svd.R, q_flat);
    const shape_matching::Polar warm_flat = shape_matching::polar_from(flat, q_flat);
    Real q_probe[4];
    shape_matching::quaternion_of(random_rotation(random, 1e-3) * svd.R, q_probe);
    EXPECT_GT(shape_matching::warm_rotation(flat, q_probe, unused), 0) << "trial " << trial;
    EXPECT_LT((warm_flat.R - svd.R).norm(), 1e-14) << "trial " << trial;
    EXPECT_LT((warm_flat.S - svd.S).norm(), 1e-14) << "trial " << trial;
    // Inverted: the SVD route, bitwise polar()'s, and its rotation kept for the next step.
    A = R * S;
    A.col(trial % 3) *= -1;
    const shape_matching::Polar warm = shape_matching::polar_from(A, q), scratch = shape_matching::polar(A);
    EXPECT_EQ(std::memcmp(warm.R.data(), scratch.R.data(), sizeof(Real) * 9), 0);
    EXPECT_EQ(std::memcmp(warm.S.data(), scratch.S.data(), sizeof(Real) * 9), 0);
    EXPECT_LT((shape_matching::rotation_matrix(q) - scratch.R).norm(), 1e-14);
  }
}

TEST(ShapeMatchingMesh, KuhnBoxHasTheSpecCountsAndVolume) {
  const TetMesh mesh = box_tet_mesh({0, 0, 0}, {0.96, 0.24, 0.24}, 0.04);  // the spec's bar, §7.4
  EXPECT_EQ(mesh.vertex_count(), 1225u);
  EXPECT_EQ(mesh.tet_count(), 5184u);
  Real volume = 0;
  for (std::size_t t = 0; t < mesh.tet_count(); ++t) {
    EXPECT_GT(mesh.volume(t), 0);
    volume += mesh.volume(t);
  }
  EXPECT_NEAR(volume, 0.96 * 0.24 * 0.24, 1e-12);
  // Interior 1-ring size 15 (§7.4): count the distinct neighbours of a middle vertex.
  const int centre = (3 * 7 + 3) * 25 + 12;
  std::vector<int> ring = {centre};
  for (std::size_t k = 0; k < mesh.tets.size(); k += 4)
    for (int a = 0; a < 4; ++a)
      if (mesh.tets[k + a] == centre)
        for (int b = 0; b < 4; ++b) ring.push_back(mesh.tets[k + b]);
  std::sort(ring.begin(), ring.end());
  EXPECT_EQ(std::unique(ring.begin(), ring.end()) - ring.begin(), 15);
}

TEST(ShapeMatchingMesh, GmshRoundTripAndCylinder) {
  const std::string dir = fresh_directory("methods/shape_matching", "gmsh");
  if (mpi::rank(MPI_COMM_WORLD) != 0) return;
  const TetMesh box = box_tet_mesh({0, 0, 0}, {0.2, 0.1, 0.1}, 0.05);
  for (double version : {4.1, 2.2}) {  // MSH v4 and v2
    const std::string path = dir + "/box-v" + std::to_string(static_cast<int>(version)) + ".msh";
    write_gmsh_tet_mesh(box, path, version);
    std::ifstream file(path);
    std::string format, line;
    while (std::getline(file, line) && line != "$MeshFormat") {
    }
    std::getline(file, format);
    EXPECT_EQ(format.substr(0, 3), version > 3 ? "4.1" : "2.2");
    const TetMesh read = read_gmsh_tet_mesh(path);
    ASSERT_EQ(read.vertices.size(), box.vertices.size());
    for (std::size_t k = 0; k < box.vertices.size(); ++k)
      EXPECT_NEAR(read.vertices[k], box.vertices[k], 1e-15);
    EXPECT_EQ(read.tets, box.tets);
  }
  const TetMesh cylinder = gmsh_cylinder({0, 0, 0}, 0, 0.15, 1.0, 0.05);
  Real volume = 0;
  for (std::size_t t = 0; t < cylinder.tet_count(); ++t) volume += cylinder.volume(t);
  EXPECT_NEAR(volume, M_PI * 0.15 * 0.15, 0.02 * M_PI * 0.15 * 0.15);  // polygonal surface
  EXPECT_GT(cylinder.vertex_count(), 500u);
  EXPECT_THROW(read_gmsh_tet_mesh(dir + "/missing.msh"), Error);
}

// ---------------------------------------------------------------------------------------------
// The method.

Real max_speed(const std::vector<SmVertex>& vs) {
  Real m = 0;
  for (const SmVertex& v : vs)
    m = std::max(m, std::sqrt(v.v[0] * v.v[0] + v.v[1] * v.v[1] + v.v[2] * v.v[2]));
  return m;
}

// §8 test 1: at rest and after a rigid motion, the goals are the positions: nothing moves.
TEST(ShapeMatching, RestAndRigidMotionsStayAtRest) {
  SmRun run(MPI_COMM_WORLD, bar_scene("examples: [{type: twist, angle: 90}]"));
  run.step();
  std::vector<SmVertex> vs = run.gather();
  ASSERT_EQ(vs.size(), 13u * 4 * 4);
  EXPECT_LT(max_speed(vs), 1e-10);
  for (const SmVertex& v : vs) {
    EXPECT_NEAR(v.weights[0], 1.0, 1e-12);
    EXPECT_NEAR(v.weights[1], 0.0, 1e-12);
  }
  // A rigid motion Q x + t of the whole bar.
  const Mat3 Q = Eigen::AngleAxisd(0.7, Eigen::Vector3d(1, 2, 3).normalized()).toRotationMatrix();
  ParticleSet& ps = run.space->particles();
  for (std::size_t p = 0; p < ps.size(); ++p) {
    const Eigen::Vector3d x =
        Q * Eigen::Map<Eigen::Vector3d>(ps.positions() + 3 * p) + Eigen::Vector3d(0.3, 1, -2);
    std::copy_n(x.data(), 3, ps.positions() + 3 * p);
  }
  run.space->migrate();
  run.step();
  vs = run.gather();
  EXPECT_LT(max_speed(vs), 1e-10);
  for (const SmVertex& v : vs) EXPECT_NEAR(v.weights[1], 0.0, 1e-12);
}

// §8 test 3: at x = x^1 the projection finds the example: W' = (1 − β, β).
TEST(ShapeMatching, ProjectionOfAnExampleIsExact) {
  for (const char* groups : {"global", "per_region", "slabs"}) {
    SmRun run(MPI_COMM_WORLD,
              bar_scene(std::string("examples: [{type: twist, angle: 90}], initial_example: 1, groups: ") +
                        groups));
    run.step();
    for (const SmVertex& v : run.gather()) {
      ASSERT_NEAR(v.weights[1], 0.995, 1e-9) << groups << " vertex " << v.id;
      ASSERT_NEAR(v.weights[0], 0.005, 1e-9) << groups << " vertex " << v.id;
    }
  }
}

// §8 test 3, n = 2: a descriptor 0.3 S^1 + 0.2 S^2 + 0.5 S^0 projects to w = (0.3, 0.2).
TEST(ShapeMatching, TwoExamplesProjectLinearly) {
  for (const char* descriptor : {"plain", "frobenius"}) {
    SmRun run(MPI_COMM_WORLD, bar_scene("examples: [{type: twist, angle: 90}, {type: bend, amplitude: 0.1}]",
                                        std::string("shape_matching: {descriptor: ") + descriptor + "}\n"));
    Real w[2] = {0, 0};
    for (const SmVertex& v : run.gather())
      for (int k = 0; k < 2; ++k)
        for (int c = 0; c < 6; ++c)
          w[k] += v.projection[6 * k + c] * (0.3 * v.stretch[c] + 0.2 * v.stretch[6 + c]);
    EXPECT_NEAR(w[0], 0.3, 1e-9) << descriptor;
    EXPECT_NEAR(w[1], 0.2, 1e-9) << descriptor;
  }
}

// §8 test 2: an affine example x^k = G x^0 has S_r^k = sqrt(G^T G) in every region (files read by Gmsh),
// with the paper's S_r from the polar decomposition of A_r.
TEST(ShapeMatching, AffineExampleHasTheRightStretchInEveryRegion) {
  const std::string dir = fresh_directory("methods/shape_matching", "affine");
  Mat3 G;
  G << 1.2, 0.1, 0, 0, 0.9, 0.05, 0.02, 0, 1.1;
  if (mpi::rank(MPI_COMM_WORLD) == 0) {
    TetMesh rest = box_tet_mesh({0, 0, 0}, {0.4, 0.12, 0.12}, 0.04);
    write_gmsh_tet_mesh(rest, dir + "/rest.msh");
    for (std::size_t v = 0; v < rest.vertex_count(); ++v) {
      const Eigen::Vector3d x = G * Eigen::Map<const Eigen::Vector3d>(rest.vertex(v));
      std::copy_n(x.data(), 3, &rest.vertices[3 * v]);
    }
    write_gmsh_tet_mesh(rest, dir + "/affine.msh");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  std::string scene = bar_scene("", "shape_matching: {rotation: A}\n");  // S_r = sqrt(A^T A) exactly
  const std::string body =
      "{shape: box, min: [0, 0, 0], max: [0.48, 0.12, 0.12], particles_per_cell: 3, material: rubber}";
  scene.replace(scene.find("{shape: box"),
                scene.find("}\n", scene.find("{shape: box")) + 1 - scene.find("{shape: box"),
                "{shape: file, path: " + dir +
                    "/rest.msh, particles_per_cell: 3, material: rubber, examples: [{type: "
                    "file, path: " +
                    dir + "/affine.msh}]}");
  SmRun run(MPI_COMM_WORLD, scene);
  Eigen::SelfAdjointEigenSolver<Mat3> eigen(G.transpose() * G);
  const Mat3 U = eigen.operatorSqrt();
  Real expected[6];
  shape_matching::vec6(U - Mat3::Identity(), expected);
  const std::vector<SmVertex> vs = run.gather();
  ASSERT_EQ(vs.size(), 11u * 4 * 4);
  for (const SmVertex& v : vs)
    for (int c = 0; c < 6; ++c)
      ASSERT_NEAR(v.stretch[c], expected[c], 1e-10) << "vertex " << v.id << " entry " << c;
}

// §8 test 5: with β = 0 the examples have no effect: bitwise the run without examples.
TEST(ShapeMatching, BetaZeroIsShapeMatchingWithoutExamples) {
  const std::string floor =
      "colliders: [{shape: plane, point: [0, -0.1, 0], normal: [0.2, 1, 0], friction: 0.5}]\n";
  SmRun with(MPI_COMM_WORLD,
             bar_scene("examples: [{type: twist, angle: 90}], velocity: [0.5, -1, 0]",
                       floor + "shape_matching: {beta: 0}\n"),
             {"gravity=[0, -9.8, 0]"});
  SmRun without(MPI_COMM_WORLD, bar_scene("velocity: [0.5, -1, 0]", floor), {"gravity=[0, -9.8, 0]"});
  with.advance(40);
  without.advance(40);
  const std::vector<SmVertex> a = with.gather(), b = without.gather();
  ASSERT_EQ(a.size(), b.size());
  Real moved = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(std::memcmp(a[i].x, b[i].x, sizeof a[i].x), 0) << "vertex " << a[i].id;
    ASSERT_EQ(std::memcmp(a[i].v, b[i].v, sizeof a[i].v), 0) << "vertex " << a[i].id;
    moved = std::max(moved, std::fabs(a[i].x[1] - a[i].rest[1]));
  }
  EXPECT_GT(moved, 0.05);  // it fell onto the inclined floor
}

// Müller et al. 2005, cluster-based, written out directly: 1-ring clusters with m̃ = m/|N|,
// R from the polar decomposition of A_pq (Eigen's SVD), goals averaged, Eqs. (4)-(5).
std::vector<Real> direct_shape_matching(const TetMesh& mesh, std::vector<Real> x, Real density, Real alpha,
                                        Real h, const Eigen::Vector3d& gravity, int steps) {
  const std::size_t n = mesh.vertex_count();
  std::vector<std::vector<int>> ring(n);
  std::vector<Real> mass(n, 0);
  for (std::size_t t = 0; t < mesh.tet_count(); ++t)
    for (int a = 0; a < 4; ++a) {
      mass[mesh.tets[4 * t + a]] += density * mesh.volume(t) / 4;
      for (int b = 0; b < 4; ++b) ring[mesh.tets[4 * t + a]].push_back(mesh.tets[4 * t + b]);
    }
  for (auto& r : ring) {
    std::sort(r.begin(), r.end());
    r.erase(std::unique(r.begin(), r.end()), r.end());
  }
  std::vector<Real> v(3 * n, 0.0);
  auto at = [](const std::vector<Real>& xs, int i) {
    return Eigen::Vector3d(xs[3 * i], xs[3 * i + 1], xs[3 * i + 2]);
  };
  for (int s = 0; s < steps; ++s) {
    std::vector<Eigen::Vector3d> goal(n, Eigen::Vector3d::Zero());
    std::vector<int> count(n, 0);
    for (std::size_t r = 0; r < n; ++r) {
      Real M = 0;
      Eigen::Vector3d c = Eigen::Vector3d::Zero(), c0 = Eigen::Vector3d::Zero();
      for (int j : ring[r]) {
        const Real m = mass[j] / ring[j].size();
        M += m, c += m * at(x, j), c0 += m * at(mesh.vertices, j);
      }
      c /= M, c0 /= M;
      Mat3 apq = Mat3::Zero(), aqq = Mat3::Zero();
      for (int j : ring[r]) {
        const Real m = mass[j] / ring[j].size();
        const Eigen::Vector3d p = at(x, j) - c, q = at(mesh.vertices, j) - c0;
        apq += m * p * q.transpose(), aqq += m * q * q.transpose();
      }
      Eigen::JacobiSVD<Mat3> svd(apq, Eigen::ComputeFullU | Eigen::ComputeFullV);
      const Mat3 R = svd.matrixU() * svd.matrixV().transpose();
      for (int j : ring[r]) goal[j] += R * (at(mesh.vertices, j) - c0) + c, ++count[j];
    }
    for (std::size_t i = 0; i < n; ++i)
      for (int a = 0; a < 3; ++a) {
        v[3 * i + a] += alpha * (goal[i][a] / count[i] - x[3 * i + a]) / h + h * gravity[a];
        x[3 * i + a] += h * v[3 * i + a];
      }
  }
  return x;
}

TEST(ShapeMatching, AgreesWithADirectImplementationOfMuller2005) {
  const std::string body = "examples: [{type: twist, angle: 120}], initial_example: 1";
  SmRun run(MPI_COMM_WORLD, bar_scene(body, "shape_matching: {beta: 0, alpha: 0.7}\n", 9, 4, 3),
            {"gravity=[0, -9.8, 0]"});
  run.advance(30);
  const TetMesh mesh = box_tet_mesh({0, 0, 0}, {0.32, 0.12, 0.08}, 0.04);
  ExampleSettings twist;
  twist.type = "twist", twist.angle = 120;
  const std::vector<Real> expected = direct_shape_matching(mesh, example_shape(twist, mesh), 1000, 0.7,
                                                           0.0166666666666667, {0, -9.8, 0}, 30);
  const std::vector<SmVertex> vs = run.gather();
  ASSERT_EQ(vs.size(), mesh.vertex_count());
  Real untwisted = 0;
  for (std::size_t i = 0; i < vs.size(); ++i)
    for (int a = 0; a < 3; ++a) {
      ASSERT_NEAR(vs[i].x[a], expected[3 * i + a], 1e-9) << "vertex " << i;
      untwisted = std::max(untwisted, std::fabs(expected[3 * i + a] - example_shape(twist, mesh)[3 * i + a]));
    }
  EXPECT_GT(untwisted, 0.01);  // the bar did untwist (and fall) in the 30 steps
}

// Angular momentum about the origin, Σ m x × v.
Eigen::Vector3d angular_momentum(const std::vector<SmVertex>& vs) {
  Eigen::Vector3d L = Eigen::Vector3d::Zero();
  for (const SmVertex& v : vs)
    L += v.mass * Eigen::Vector3d(v.x[0], v.x[1], v.x[2]).cross(Eigen::Vector3d(v.v[0], v.v[1], v.v[2]));
  return L;
}

// A free bar released from its twisted example. With the matched rotation (the default: the
// rotation that best fits S̃_r q to the current positions) every region's goals are torque-free,
// examples or not, and so is Müller's rotation of A_pq with β = 0: the angular momentum stays zero.
// With the paper's rotation from A_r (spec A3) regions whose A_qq is anisotropic (Kuhn 1-rings)
// exert torques: the bar spins up from nothing.
TEST(ShapeMatching, AngularMomentumIsConservedWithLeastSquaresRotations) {
  const std::string body = "examples: [{type: twist, angle: 90}], initial_example: 1";
  SmRun matched(MPI_COMM_WORLD, bar_scene(body, "shape_matching: {beta: 0.995}\n"));
  SmRun apq(MPI_COMM_WORLD, bar_scene(body, "shape_matching: {beta: 0, rotation: Apq}\n"));
  SmRun a(MPI_COMM_WORLD, bar_scene(body, "shape_matching: {beta: 0, rotation: A}\n"));
  Real speed = 0;
  for (int k = 0; k < 10; ++k) {
    for (SmRun* run : {&matched, &apq, &a}) run->advance(20);
    const std::vector<SmVertex> m = matched.gather(), q = apq.gather();
    speed = std::max(speed, max_speed(m));
    EXPECT_LT(angular_momentum(m).norm(), 1e-12) << "step " << 20 * (k + 1);
    EXPECT_LT(angular_momentum(q).norm(), 1e-12) << "step " << 20 * (k + 1);
  }
  EXPECT_GT(speed, 0.05);  // the bar did move
  EXPECT_GT(angular_momentum(a.gather()).norm(), 1e-4);
}

// Bitwise identical on any rank count: two bodies (a global group with two examples, per-region
// groups with a held end), colliding with the floor and moving across blocks, compared with the
// same run on one rank.
TEST(ShapeMatching, BitwiseIdenticalOnAnyRankCount) {
  const std::string scene =
      "nendo: 1\nmethod: shape_matching\ndimension: 3\ngravity: [0, -9.8, 0]\n"
      "time: {end: 1.0, dt: 0.0166666666666667}\ngrid: {dx: 0.16, block: 3}\n"
      "materials: {rubber: {model: neo_hookean, E: 1.0e6, nu: 0.3, density: 1000}}\n"
      "bodies:\n"
      "  - {shape: box, min: [0.0, 0.1, 0.0], max: [0.48, 0.22, 0.12], particles_per_cell: 4, material: "
      "rubber,\n"
      "     velocity: [1.5, 0, 0.5], examples: [{type: twist, angle: 90}, {type: bend, amplitude: 0.05}]}\n"
      "  - {shape: box, min: [0.7, 0.1, 0.0], max: [0.94, 0.22, 0.12], particles_per_cell: 4, material: "
      "rubber,\n"
      "     groups: slabs, group_slabs: 3, examples: [{type: shear, angle: 20}], fixed_min: [0.85, 0, 0], "
      "fixed_max: "
      "[1, 1, 1]}\n"
      "  - {shape: box, min: [0.2, 0.5, 0.3], max: [0.44, 0.62, 0.42], particles_per_cell: 4, material: "
      "rubber,\n"
      "     groups: per_region, examples: [{type: squash, factor: 0.6}]}\n"
      "colliders: [{shape: plane, point: [0, 0, 0], normal: [0, 1, 0], friction: 0.5}]\n";
  SmRun everyone(MPI_COMM_WORLD, scene);
  SmRun alone(MPI_COMM_SELF, scene);
  everyone.advance(50);
  alone.advance(50);
  const std::vector<SmVertex> a = everyone.gather(), b = alone.gather();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].id, b[i].id);
    ASSERT_EQ(std::memcmp(a[i].x, b[i].x, sizeof a[i].x), 0) << "vertex " << a[i].id;
    ASSERT_EQ(std::memcmp(a[i].v, b[i].v, sizeof a[i].v), 0) << "vertex " << a[i].id;
    ASSERT_EQ(std::memcmp(a[i].weights, b[i].weights, sizeof a[i].weights), 0) << "vertex " << a[i].id;
  }
}

// Issue 31 item 4b: the layout (owners, order, halo copies) is kept however far the vertices move,
// the halo copies getting only their positions, and redone only by the spine (here every 20 steps,
// as a re-balance would); the results stay bitwise those of one rank alone, layout or not. Issue
// 34: no step lays the vertices out again, not even the first (Space::distribute's layout is kept).
TEST(ShapeMatching, KeptLayoutsGiveTheSameResults) {
  const std::string floor =
      "colliders: [{shape: plane, point: [0, -0.05, 0], normal: [0, 1, 0], friction: 0.1}]\n";
  const std::string body = "examples: [{type: twist, angle: 90}], velocity: [3.0, 0, 1.0]";
  SmRun everyone(MPI_COMM_WORLD, bar_scene(body, floor), {"gravity=[0, -9.8, 0]"});
  SmRun alone(MPI_COMM_SELF, bar_scene(body, floor), {"gravity=[0, -9.8, 0]"});
  int kept = 0, redone = 0;
  for (int k = 0; k < 60; ++k) {
    const std::uint64_t layout = everyone.space->layout_version();
    everyone.step();
    alone.step();
    ++(everyone.space->layout_version() == layout ? kept : redone);
    if (k % 20 == 10) everyone.space->migrate();
  }
  EXPECT_EQ(redone, 0);
  EXPECT_EQ(kept, 60);
  const std::vector<SmVertex> a = everyone.gather(), b = alone.gather();
  ASSERT_EQ(a.size(), b.size());
  Real moved = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].id, b[i].id);
    ASSERT_EQ(std::memcmp(a[i].x, b[i].x, sizeof a[i].x), 0) << "vertex " << a[i].id;
    ASSERT_EQ(std::memcmp(a[i].v, b[i].v, sizeof a[i].v), 0) << "vertex " << a[i].id;
    ASSERT_EQ(std::memcmp(a[i].weights, b[i].weights, sizeof a[i].weights), 0) << "vertex " << a[i].id;
    moved = std::max(moved, std::fabs(a[i].x[0] - a[i].rest[0]));
  }
  EXPECT_GT(moved, 1.0);  // several blocks of 0.36 m, most of it in kept layouts
}

// Issue 34: a halo copy carries what a step reads of it (id, position, rest position, rest centroid,
// mass share: 88 bytes), not every field of its vertex (568 bytes here), and the copies are exact.
TEST(ShapeMatching, HaloCopiesCarryOnlyWhatAStepReads) {
  SmRun run(MPI_COMM_WORLD, bar_scene("examples: [{type: twist, angle: 90}]", "", 25, 4, 4));
  run.advance(2);
  const ParticleSet& owned = run.space->particles();
  const ParticleSet& copies = run.space->halo().particles();
  std::vector<std::string> names;
  for (const ParticleField& f : copies.fields()) names.push_back(f.name());
  EXPECT_EQ(names, (std::vector<std::string>{"id", "position", "rest", "rest_centroid", "mass_share"}));
  EXPECT_EQ(copies.bytes_per_particle(), 88u);
  EXPECT_GT(owned.bytes_per_particle(), 500u);
  const auto all = run.gather();
  for (std::size_t q = 0; q < copies.size(); ++q) {
    const auto it = std::lower_bound(all.begin(), all.end(), copies.ids()[q],
                                     [](const SmVertex& v, ParticleId id) { return v.id < id; });
    if (it == all.end() || it->id != copies.ids()[q]) {
      ADD_FAILURE() << "halo copy " << copies.ids()[q] << " is nobody's vertex";
      continue;
    }
    EXPECT_EQ(std::memcmp(copies.real("rest") + 3 * q, it->rest, sizeof it->rest), 0);
  }
  const int with_copies = testing::count_ranks(MPI_COMM_WORLD, copies.size() > 0);
  if (mpi::size(MPI_COMM_WORLD) > 1) {
    EXPECT_GT(with_copies, 0);
  }
}

// ---------------------------------------------------------------------------------------------
// The set-up's share of a body (issue 34): each rank holds its vertices [rN/P, (r+1)N/P), every
// tet its regions read (around their members) and those tets' vertices, bit for bit as in the
// whole mesh, with the examples there; with 2 ranks or more, less than the whole mesh.

// Checks this rank's share of the scene's first body against the whole mesh. `exact`: the share
// is exactly what the set-up reads (cut from a whole mesh), not whole lattice layers.
void expect_share_of_whole_mesh(const Scene& scene, bool exact) {
  const int rank = mpi::rank(MPI_COMM_WORLD), ranks = mpi::size(MPI_COMM_WORLD);
  const BodySettings& body = scene.bodies[0];
  const Real spacing = scene.grid.dx / body.particles_per_cell;
  const shape_matching::BodyShare share = shape_matching::load_body_share(MPI_COMM_WORLD, body, spacing);
  const TetMesh whole = body_tet_mesh(body, spacing);
  const auto n = static_cast<std::int64_t>(whole.vertex_count());
  ASSERT_EQ(share.vertex_count, n);
  ASSERT_EQ(share.first, n * rank / ranks);
  ASSERT_EQ(share.last, n * (rank + 1) / ranks);
  const TetMeshPart& part = share.part;
  ASSERT_EQ(part.vertex_ids.size(), part.mesh.vertex_count());
  for (std::int64_t v = share.first; v < share.last; ++v) ASSERT_EQ(part.vertex_ids[share.local(v)], v);
  for (std::size_t v = 0; v < part.vertex_ids.size(); ++v)
    ASSERT_EQ(std::memcmp(part.mesh.vertex(v), whole.vertex(part.vertex_ids[v]), 3 * sizeof(Real)), 0);
  // Its tets (global corners) hold those the set-up reads, in the whole mesh's order: as a
  // subsequence, each tet matched to the first of its own after the last match.
  const TetMeshPart read = tet_mesh_part_near(whole, share.first, share.last, 2);
  std::size_t at = 0;
  for (std::int64_t t : read.tet_ids) {
    auto same = [&](std::size_t u) {
      for (int a = 0; a < 4; ++a)
        if (part.vertex_ids[part.mesh.tets[4 * u + a]] != whole.tets[4 * t + a]) return false;
      return true;
    };
    while (at < part.mesh.tet_count() && !same(at)) ++at;
    ASSERT_LT(at, part.mesh.tet_count()) << "tet " << t << " is missing or out of order";
    ++at;
  }
  if (exact) {
    EXPECT_EQ(part.vertex_ids, read.vertex_ids);
  }
  if (ranks > 1) {
    EXPECT_LT(part.mesh.vertex_count(), whole.vertex_count());
  }
  const auto& examples = body.method_keys.get<ShapeMatchingBody>().examples;
  ASSERT_EQ(share.examples.size(), examples.size());
  for (std::size_t e = 0; e < examples.size(); ++e) {
    const std::vector<Real> x = example_shape(examples[e], whole);
    for (std::size_t v = 0; v < part.vertex_ids.size(); ++v)
      ASSERT_EQ(std::memcmp(&share.examples[e][3 * v], &x[3 * part.vertex_ids[v]], 3 * sizeof(Real)), 0);
  }
  for (int a = 0; a < 3; ++a) {
    Real lo = INFINITY, hi = -INFINITY;
    for (std::size_t v = 0; v < whole.vertex_count(); ++v)
      lo = std::min(lo, whole.vertex(v)[a]), hi = std::max(hi, whole.vertex(v)[a]);
    EXPECT_EQ(share.lo[a], lo);
    EXPECT_EQ(share.hi[a], hi);
  }
  Real longest = 0;
  for (std::size_t t = 0; t < whole.tet_count(); ++t)
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 4; ++b) {
        const Real *p = whole.vertex(whole.tets[4 * t + a]), *q = whole.vertex(whole.tets[4 * t + b]);
        longest = std::max(longest, std::hypot(p[0] - q[0], p[1] - q[1], p[2] - q[2]));
      }
  EXPECT_EQ(share.longest_edge, longest);
  EXPECT_NEAR(longest, std::sqrt(3.0) * 0.04, 1e-12);  // the cube diagonal
}

// Every seeded particle's fields, bytes by id, from every rank.
std::map<ParticleId, std::vector<unsigned char>> seeded(MPI_Comm comm, const Scene& scene) {
  const std::unique_ptr<Method> method = make_method(scene);
  ParticleSet ps = make_particles(*method, scene.dimension);
  method->seed(comm, scene, ps);
  std::size_t bytes = 0;
  for (const ParticleField& field : ps.fields()) bytes += field.bytes_per_particle();
  std::vector<unsigned char> mine(bytes * ps.size());
  for (std::size_t p = 0; p < ps.size(); ++p) {
    unsigned char* at = &mine[bytes * p];
    for (const ParticleField& field : ps.fields()) {
      field.pack(p, at);
      at += field.bytes_per_particle();
    }
  }
  const std::vector<unsigned char> all = mpi::all_gather(mine, comm);
  std::map<ParticleId, std::vector<unsigned char>> by_id;
  for (std::size_t at = 0; at < all.size(); at += bytes) {
    ParticleId id;
    std::memcpy(&id, &all[at], sizeof id);  // the ids are the first field
    by_id[id].assign(all.begin() + at, all.begin() + at + bytes);
  }
  return by_id;
}

// The lattice of a box in layers along z; a file body read in chunks (MSH 4.1), and a box with an
// example read so; a file body only Gmsh reads (binary MSH 2.2), cut by rank 0. Each rank's seeded
// particles (rings, rest data, example stretches, projections: every field) are bit for bit those
// of one rank set up from the whole.
TEST(ShapeMatchingSetup, EachRankHoldsItsShareOfTheMesh) {
  const std::string dir = fresh_directory("methods/shape_matching", "share");
  const std::string examples = "examples: [{type: twist, angle: 90}, {type: bend, amplitude: 0.05}]";
  const Scene box = parse_scene(testing::bar_scene(examples, "", 4, 4, 25), "test.yaml");
  const Real spacing = box.grid.dx / box.bodies[0].particles_per_cell;
  const TetMesh mesh = body_tet_mesh(box.bodies[0], spacing);
  if (mpi::rank(MPI_COMM_WORLD) == 0) {
    write_gmsh_tet_mesh(mesh, dir + "/bar.msh", 4.1);
    const ExampleSettings twist = box.bodies[0].method_keys.get<ShapeMatchingBody>().examples[0];
    write_gmsh_tet_mesh(TetMesh{example_shape(twist, mesh), mesh.tets}, dir + "/twisted.msh", 4.1);
    write_gmsh_tet_mesh(mesh, dir + "/bar-22-binary.msh", 2.2, true);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const Scene file_body = parse_scene(
      "nendo: 1\nmethod: shape_matching\ndimension: 3\ngravity: [0, 0, 0]\n"
      "time: {end: 1.0, dt: 0.0166666666666667}\ngrid: {dx: 0.12, block: 3}\n"
      "materials: {rubber: {model: neo_hookean, E: 1.0e6, nu: 0.3, density: 1000}}\n"
      "bodies:\n  - {shape: file, path: " +
          dir + "/bar.msh, material: rubber, groups: slabs, " + examples + "}\n",
      "test.yaml");
  const Scene file_example =
      parse_scene(testing::bar_scene("examples: [{type: file, path: " + dir + "/twisted.msh}]", "", 4, 4, 25),
                  "test.yaml");
  const Scene gmsh_body = [&] {
    Scene scene = file_body;
    scene.bodies[0].path = dir + "/bar-22-binary.msh";
    return scene;
  }();
  expect_share_of_whole_mesh(box, false);
  expect_share_of_whole_mesh(file_body, true);
  expect_share_of_whole_mesh(file_example, false);
  expect_share_of_whole_mesh(gmsh_body, true);
  for (const Scene* scene : {&box, &file_body, &file_example, &gmsh_body})
    EXPECT_TRUE(seeded(MPI_COMM_WORLD, *scene) == seeded(MPI_COMM_SELF, *scene));
}

// An example file of another mesh, or of the body's vertices with two tets' corners exchanged, is
// refused on every rank with one message naming the file.
TEST(ShapeMatchingSetup, RefusesAnExampleFileOfAnotherMesh) {
  const std::string dir = fresh_directory("methods/shape_matching", "other-example");
  const Scene box = parse_scene(testing::bar_scene("", "", 4, 4, 25), "test.yaml");
  const Real spacing = box.grid.dx / box.bodies[0].particles_per_cell;
  if (mpi::rank(MPI_COMM_WORLD) == 0) {
    TetMesh mesh = body_tet_mesh(box.bodies[0], spacing);
    std::swap_ranges(mesh.tets.begin() + 4 * 100, mesh.tets.begin() + 4 * 101, mesh.tets.begin() + 4 * 200);
    write_gmsh_tet_mesh(mesh, dir + "/exchanged.msh");
    write_gmsh_tet_mesh(box_tet_mesh({0, 0, 0}, {1, 1, 1}, 0.5), dir + "/other.msh");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (const char* name : {"/exchanged.msh", "/other.msh"}) {
    const Scene scene = parse_scene(
        testing::bar_scene(std::string("examples: [{type: file, path: ") + dir + name + "}]", "", 4, 4, 25),
        "test.yaml");
    std::string message = "no error";
    try {
      shape_matching::load_body_share(MPI_COMM_WORLD, scene.bodies[0], spacing);
    } catch (const CollectiveError& e) {
      message = e.what();
    }
    EXPECT_NE(
        message.find(dir + name + ": an example must have the body's vertices and tets in the same order"),
        std::string::npos)
        << message;
  }
}

TEST(ShapeMatching, RefusesAHaloSmallerThanTheEdges) {
  EXPECT_THROW(
      SmRun(MPI_COMM_WORLD, bar_scene("", "", 5, 3, 3), {"grid.dx=0.05", "bodies.0.particles_per_cell=1"}),
      Error);
}

}  // namespace
}  // namespace nendo
