// Seeding bodies into particles: lattice counts against a brute-force count, the same particles
// (ids and positions, bit for bit) on any rank count, and point-file bodies.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>

#include "bodies/BodySeeder.hpp"
#include "core/Mpi.hpp"
#include "io/ParticleWriter.hpp"
#include "materials/Materials.hpp"
#include "scene/SceneLoader.hpp"

namespace nendo {
namespace {

std::string scene_text(const std::string& bodies, int dimension = 3) {
  return "nendo: 1\nmethod: ballistic\ndimension: " + std::to_string(dimension) +
         "\ntime: {end: 1, dt: 0.1}\ngrid: {dx: 0.02}\n"
         "materials:\n  jelly: {model: neo_hookean, E: 1.0e5, nu: 0.3, density: 1000}\n"
         "  snow: {model: snow, E: 1.4e5, nu: 0.2, density: 400}\n"
         "bodies:\n" +
         bodies;
}

ParticleSet seed(MPI_Comm comm, const Scene& scene, SeedResult* result = nullptr) {
  ParticleSet ps(scene.dimension);
  ps.add_field("velocity", FieldType::Real, scene.dimension);
  ps.add_field("mass", FieldType::Real, 1);
  ps.add_field("volume", FieldType::Real, 1);
  ps.add_field("material", FieldType::Int32, 1);
  const SeedResult r = seed_bodies(comm, scene, ps);
  if (result) *result = r;
  return ps;
}

// id -> position of every particle on every rank.
std::map<ParticleId, std::vector<Real>> gather_all(MPI_Comm comm, const ParticleSet& ps) {
  const int d = ps.dimension(), ranks = mpi::size(comm);
  int n = static_cast<int>(ps.size());
  std::vector<int> counts(ranks), displs(ranks);
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
  std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), 0);
  const int total = displs.back() + counts.back();
  std::vector<ParticleId> ids(total);
  MPI_Allgatherv(ps.ids(), n, MPI_UINT64_T, ids.data(), counts.data(), displs.data(), MPI_UINT64_T, comm);
  for (int r = 0; r < ranks; ++r) counts[r] *= d, displs[r] *= d;
  std::vector<Real> x(static_cast<std::size_t>(total) * d);
  MPI_Allgatherv(ps.positions(), n * d, MPI_DOUBLE, x.data(), counts.data(), displs.data(), MPI_DOUBLE, comm);
  std::map<ParticleId, std::vector<Real>> all;
  for (int i = 0; i < total; ++i) {
    EXPECT_TRUE(all.emplace(ids[i], std::vector<Real>(x.begin() + d * i, x.begin() + d * (i + 1))).second)
        << "id " << ids[i] << " seeded twice";
  }
  return all;
}

// Lattice points (i + 1/2) * s inside a predicate, counted by brute force over a bounding range.
template <class Inside>
std::size_t brute_force_count(int d, Real s, Real lo, Real hi, Inside inside) {
  const long a = static_cast<long>(std::floor(lo / s)) - 2, b = static_cast<long>(std::ceil(hi / s)) + 2;
  std::size_t n = 0;
  for (long i = a; i < b; ++i)
    for (long j = a; j < b; ++j)
      for (long k = (d == 3 ? a : 0); k < (d == 3 ? b : 1); ++k) {
        const Real x[3] = {(i + 0.5) * s, (j + 0.5) * s, (k + 0.5) * s};
        n += inside(x);
      }
  return n;
}

TEST(BodySeeder, BoxFillsSubCellCentres) {
  const Scene scene = parse_scene(
      scene_text(
          "  - {shape: box, min: [0, 0, 0], max: [0.1, 0.06, 0.04], material: snow, velocity: [1, 2, 3]}\n"),
      "scene.yaml");
  SeedResult result;
  const ParticleSet ps = seed(MPI_COMM_WORLD, scene, &result);
  const auto all = gather_all(MPI_COMM_WORLD, ps);
  ASSERT_EQ(all.size(), 10u * 6 * 4);  // spacing 0.01 = dx / 2
  EXPECT_EQ(result.next_id, 10u * 6 * 4);
  for (const auto& [id, x] : all)
    for (int a = 0; a < 3; ++a) EXPECT_NEAR(std::fmod(x[a], 0.01), 0.005, 1e-12) << "id " << id;
  for (std::size_t p = 0; p < ps.size(); ++p) {
    EXPECT_DOUBLE_EQ(ps.real("volume")[p], 1e-6);
    EXPECT_DOUBLE_EQ(ps.real("mass")[p], 400 * 1e-6);
    EXPECT_EQ(ps.int32("material")[p], material_index(scene, "snow"));
    EXPECT_EQ(ps.real("velocity")[3 * p + 2], 3.0);
  }
  EXPECT_EQ(material_index(scene, "jelly"), 0);
  EXPECT_EQ(material_index(scene, "snow"), 1);
}

TEST(BodySeeder, SphereAndCylinderMatchBruteForce) {
  const Scene scene =
      parse_scene(scene_text("  - {shape: sphere, center: [0.013, -0.02, 0.05], radius: 0.07, "
                             "material: jelly}\n"
                             "  - {shape: cylinder, center: [0.5, 0.1, 0.5], axis: y, radius: 0.05, "
                             "height: 0.12, material: jelly}\n"),
                  "scene.yaml");
  const auto all = gather_all(MPI_COMM_WORLD, seed(MPI_COMM_WORLD, scene));
  const Real s = 0.01;
  const std::size_t sphere = brute_force_count(3, s, -0.2, 0.2, [](const Real* x) {
    const Real dx = x[0] - 0.013, dy = x[1] + 0.02, dz = x[2] - 0.05;
    return dx * dx + dy * dy + dz * dz < 0.07 * 0.07;
  });
  const std::size_t cylinder = brute_force_count(3, s, 0.0, 0.6, [](const Real* x) {
    const Real dx = x[0] - 0.5, dz = x[2] - 0.5;
    return dx * dx + dz * dz < 0.05 * 0.05 && x[1] >= 0.1 && x[1] < 0.22;
  });
  EXPECT_EQ(all.size(), sphere + cylinder);
  EXPECT_NEAR(sphere * 1e-6, 4.0 / 3.0 * M_PI * std::pow(0.07, 3),
              0.03 * 4.0 / 3.0 * M_PI * std::pow(0.07, 3));
  EXPECT_NEAR(cylinder * 1e-6, M_PI * 0.05 * 0.05 * 0.12, 0.03 * M_PI * 0.05 * 0.05 * 0.12);
}

// Seeding counts first and reserves once: the fields hold what they need and no more (grown one
// particle at a time they held up to twice their size, the largest part of a big run's peak).
TEST(BodySeeder, FieldsHoldExactlyTheSeededParticles) {
  const Scene scene =
      parse_scene(scene_text("  - {shape: sphere, center: [0.013, -0.02, 0.05], radius: 0.07, "
                             "material: jelly}\n"
                             "  - {shape: box, min: [0.2, 0, 0], max: [0.33, 0.1, 0.07], material: snow}\n"
                             "  - {shape: cylinder, center: [0.5, 0.1, 0.5], axis: y, radius: 0.05, "
                             "height: 0.12, material: jelly}\n"),
                  "scene.yaml");
  const ParticleSet ps = seed(MPI_COMM_WORLD, scene);
  EXPECT_GT(ps.size(), 500u);
  EXPECT_EQ(ps.capacity(), ps.size());
}

TEST(BodySeeder, SameParticlesOnAnyRankCount) {
  for (int dimension : {2, 3}) {
    const std::string v = dimension == 3 ? ", 0]" : "]";
    const Scene scene = parse_scene(scene_text("  - {shape: sphere, center: [0.1, 0.2" + v +
                                                   ", radius: 0.09, material: jelly, particles_per_cell: 3}\n"
                                                   "  - {shape: box, min: [-0.3, -0.1" +
                                                   (dimension == 3 ? ", -0.1]" : "]") + ", max: [-0.1, 0.05" +
                                                   (dimension == 3 ? ", 0.02]" : "]") + ", material: snow}\n",
                                               dimension),
                                    "scene.yaml");
    const auto distributed = gather_all(MPI_COMM_WORLD, seed(MPI_COMM_WORLD, scene));
    const auto serial = gather_all(MPI_COMM_SELF, seed(MPI_COMM_SELF, scene));
    EXPECT_EQ(distributed, serial) << dimension << "D";
  }
}

TEST(BodySeeder, PointFileBody) {
  const std::filesystem::path dir = std::filesystem::path(std::getenv("NENDO_BINARY_DIR")) / "tests" /
                                    "bodies" / ("np" + std::to_string(mpi::size(MPI_COMM_WORLD)));
  if (mpi::rank(MPI_COMM_WORLD) == 0) std::filesystem::create_directories(dir);
  MPI_Barrier(MPI_COMM_WORLD);
  // 50 points written from rank 0 only (other ranks own none), each with its own volume.
  ParticleSet points(3);
  points.add_field("volume", FieldType::Real, 1);
  if (mpi::rank(MPI_COMM_WORLD) == 0) {
    points.resize(50);
    for (std::size_t i = 0; i < 50; ++i) {
      points.ids()[i] = 1000 + i;
      for (int a = 0; a < 3; ++a) points.positions()[3 * i + a] = 0.01 * i + a;
      points.real("volume")[i] = 1e-6 * (1 + i);
    }
  }
  const std::string file = (dir / "points.h5").string();
  ParticleWriter::write_file(MPI_COMM_WORLD, file, points, {"volume"}, 0.0, 0);
  const Scene scene =
      parse_scene(scene_text("  - {shape: box, min: [0, 0, 0], max: [0.02, 0.02, 0.02], material: jelly}\n"
                             "  - {shape: file, path: " +
                             file + ", material: snow}\n"),
                  "scene.yaml");
  SeedResult result;
  const ParticleSet ps = seed(MPI_COMM_WORLD, scene, &result);
  const auto all = gather_all(MPI_COMM_WORLD, ps);
  ASSERT_EQ(all.size(), 8u + 50u);
  EXPECT_EQ(result.next_id, 8u + 50u);
  for (std::size_t i = 0; i < 50; ++i) {
    const auto& x = all.at(8 + i);  // id base of the second body: the first body's lattice size
    for (int a = 0; a < 3; ++a) EXPECT_EQ(x[a], 0.01 * i + a);
  }
  for (std::size_t p = 0; p < ps.size(); ++p) {
    const ParticleId id = ps.ids()[p];
    if (id < 8) continue;
    EXPECT_DOUBLE_EQ(ps.real("volume")[p], 1e-6 * (1 + (id - 8)));
    EXPECT_DOUBLE_EQ(ps.real("mass")[p], 400 * 1e-6 * (1 + (id - 8)));
  }
}

}  // namespace
}  // namespace nendo
