// Sizing a job before it starts (app/Plan.hpp, methods/MethodCost.hpp): counts exact for lattice
// bodies and the known scenes of every method, bytes per rank falling as 1/ranks above what every
// rank holds, the smallest rank count that fits, and the start-up check refusing on every rank.
#include <gtest/gtest.h>

#include <cstdlib>

#include "app/Plan.hpp"
#include "bodies/BodySeeder.hpp"
#include "core/Mpi.hpp"
#include "scene/SceneLoader.hpp"

namespace nendo {
namespace {

std::string source(const std::string& path) {
  return std::string(std::getenv("NENDO_SOURCE_DIR")) + "/" + path;
}

std::string ballistic_scene(const std::string& bodies, int dimension = 3, const std::string& dx = "0.02") {
  return "nendo: 1\nmethod: ballistic\ndimension: " + std::to_string(dimension) +
         "\ntime: {end: 1, dt: 0.1}\ngrid: {dx: " + dx +
         "}\n"
         "materials:\n  jelly: {model: neo_hookean, E: 1.0e5, nu: 0.3, density: 1000}\n"
         "  snow: {model: snow, E: 1.4e5, nu: 0.2, density: 400}\n"
         "output: {fields: [velocity, mass, material]}\n"
         "bodies:\n" +
         bodies;
}

std::uint64_t seeded_everywhere(const Scene& scene) {
  ParticleSet ps(scene.dimension);
  ps.add_field("velocity", FieldType::Real, scene.dimension);
  ps.add_field("mass", FieldType::Real, 1);
  ps.add_field("volume", FieldType::Real, 1);
  ps.add_field("material", FieldType::Int32, 1);
  seed_bodies(MPI_COMM_WORLD, scene, ps);
  std::uint64_t mine = ps.size(), all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  return all;
}

// The count row by row is the seeder's, point for point, for every lattice shape in 2D and 3D
// (off-centre, cut by the lattice at awkward places, every cylinder axis).
TEST(Plan, LatticeCountsAreTheSeedersExactly) {
  const std::vector<std::string> bodies3 = {
      "  - {shape: box, min: [0.013, -0.02, 0.0], max: [0.31, 0.1, 0.071], material: snow}\n",
      "  - {shape: sphere, center: [0.013, -0.02, 0.05], radius: 0.173, material: jelly}\n",
      "  - {shape: cylinder, center: [0.5, 0.1, 0.5], axis: x, radius: 0.091, height: 0.33, material: "
      "jelly}\n",
      "  - {shape: cylinder, center: [0.5, 0.1, 0.5], axis: y, radius: 0.05, height: 0.12, material: "
      "jelly}\n",
      "  - {shape: cylinder, center: [-0.5, 0.1, 0.51], axis: z, radius: 0.2, height: 0.02, material: "
      "jelly}\n"};
  const std::vector<std::string> bodies2 = {
      "  - {shape: box, min: [0.013, -0.02], max: [0.31, 0.1], material: snow}\n",
      "  - {shape: sphere, center: [0.013, -0.02], radius: 0.173, material: jelly}\n",
      "  - {shape: cylinder, center: [0.5, 0.1], axis: x, radius: 0.091, height: 0.33, material: jelly}\n",
      "  - {shape: cylinder, center: [0.5, 0.1], axis: y, radius: 0.05, height: 0.12, material: jelly}\n"};
  for (int d : {2, 3})
    for (const std::string& body : d == 2 ? bodies2 : bodies3) {
      const Scene scene = parse_scene(ballistic_scene(body, d, "0.0123"), "scene.yaml");
      const std::uint64_t counted = count_lattice_particles(scene.bodies[0], d, scene.grid.dx);
      EXPECT_EQ(counted, seeded_everywhere(scene)) << d << "D " << body;
      EXPECT_GT(counted, 10u);
    }
}

TEST(Plan, KnownScenesOfEveryMethod) {
  struct Known {
    const char* path;
    std::uint64_t particles, tets;
  };
  const Known known[] = {
      {"jobs/scenes/mpm/jelly-drop.yaml", 8000, 0},                  // 20^3
      {"jobs/scenes/slave_sph/cube-soft.yaml", 4096 + 6647, 0},      // 16^3 masters, 6 647 slaves
      {"jobs/scenes/shape_matching/bar-twist.yaml", 1225, 5184},     // 7 x 7 x 25 vertices
      {"jobs/scenes/fem/cantilever-moderate.yaml", 2673, 24 * 585},  // 24 level-0 tets, levels 0..3
      {"jobs/scenes/pbd_powder/pour.yaml", 16000, 0},                // the emitter's count
  };
  for (const Known& k : known) {
    const Scene scene = load_scene(source(k.path));
    const JobPlan plan = plan_job(scene, 2);
    EXPECT_EQ(plan.size.particles, k.particles) << k.path;
    EXPECT_EQ(plan.size.tets, k.tets) << k.path;
    EXPECT_EQ(plan.size.estimated, "") << k.path;
    EXPECT_GT(plan.bytes_per_rank, plan.baseline_bytes) << k.path;
    EXPECT_GT(plan.output_bytes, 0) << k.path;
    EXPECT_GT(plan.checkpoint_bytes, 0) << k.path;
    EXPECT_GT(plan.step_seconds, 0) << k.path;
    ASSERT_TRUE(plan.steps) << k.path;
  }
  EXPECT_EQ(*plan_job(load_scene(source("jobs/scenes/mpm/jelly-drop.yaml")), 1).steps, 2500);
  // slave_sph without slaves (the masters-only baseline): the masters alone.
  const Scene masters = load_scene(source("jobs/scenes/slave_sph/masters-only.yaml"));
  EXPECT_EQ(plan_job(masters, 1).size.particles, count_seeded_particles(masters, masters.grid.dx));
  EXPECT_LT(
      plan_job(masters, 1).size.particles,
      plan_job(load_scene(source("jobs/scenes/slave_sph/masters-only.yaml"), {"slave_sph.slaves=true"}), 1)
          .size.particles);
}

// id 8, position 24, velocity 24, mass 8, material 4 bytes per particle; time in 1 / ranks.
TEST(Plan, OutputSizeAndStepTime) {
  const Scene scene =
      parse_scene(ballistic_scene("  - {shape: box, min: [0, 0, 0], max: [0.2, 0.2, 0.2], material: snow}\n"),
                  "scene.yaml");
  const JobPlan one = plan_job(scene, 1), four = plan_job(scene, 4);
  ASSERT_EQ(one.size.particles, 8000u);
  EXPECT_DOUBLE_EQ(one.output_bytes, 8000.0 * (8 + 24 + 24 + 8 + 4));
  EXPECT_DOUBLE_EQ(four.step_seconds * 4, one.step_seconds);
}

TEST(Plan, BytesFallAsOneOverRanksAboveWhatEveryRankHolds) {
  for (const char* method : {"mpm", "slave_sph", "shape_matching", "pbd_powder", "fem", "ballistic"}) {
    const MethodCost* cost = find_method_cost(method);
    ASSERT_NE(cost, nullptr) << method;
    const ProblemSize size{1000000, 5000000, 0, "particles", "", ""};
    const double every_rank =
        cost->baseline_bytes + cost->replicated.per_particle * 1e6 + cost->replicated.per_tet * 5e6;
    const double two = bytes_per_rank(*cost, size, 2) - every_rank;
    EXPECT_GE(two, 0) << method;  // fem: every rank holds the whole hierarchy
    EXPECT_LE(bytes_per_rank(*cost, size, 2), bytes_per_rank(*cost, size, 1)) << method;
    for (int ranks : {3, 7, 1000})
      EXPECT_NEAR(bytes_per_rank(*cost, size, ranks) - every_rank, two * 2 / ranks, 1e-6 * two) << method;
  }
}

TEST(Plan, SmallestFittingRanks) {
  const MethodCost& mpm = *find_method_cost("mpm");
  const ProblemSize size{64'000'000'000, 0, 0, "particles", "", ""};  // 1 m^3 at 0.5 mm, 2 per cell
  const RankMemory memory{[](int) { return 11.5 * (1 << 30); }, "given"};
  const int fewest = smallest_fitting_ranks(mpm, size, memory);
  ASSERT_GT(fewest, 1);
  EXPECT_LE(bytes_per_rank(mpm, size, fewest), memory.bytes(fewest));
  EXPECT_GT(bytes_per_rank(mpm, size, fewest - 1), memory.bytes(fewest - 1));
  const RankMemory tiny{[](int) { return 1e6; }, "given"};  // below the baseline: nothing fits
  EXPECT_EQ(smallest_fitting_ranks(mpm, size, tiny), 0);
}

TEST(Plan, ParseBytes) {
  EXPECT_DOUBLE_EQ(parse_bytes("2GiB"), 2.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(parse_bytes("1.5 GB"), 1.5e9);
  EXPECT_DOUBLE_EQ(parse_bytes("800M"), 800e6);
  EXPECT_DOUBLE_EQ(parse_bytes("800mib"), 800.0 * (1 << 20));
  EXPECT_DOUBLE_EQ(parse_bytes("4096"), 4096);
  for (const char* bad : {"", "two GiB", "2XB", "-1G", "2 GiB extra"})
    EXPECT_THROW(parse_bytes(bad), InputError) << bad;
}

// A 1 m^3 box at dx = 0.5 mm is refused on every rank before anything is allocated; a small scene
// passes; the given memory per rank decides.
TEST(Plan, StartUpCheckRefusesOnEveryRank) {
  const Scene huge = load_scene(source("jobs/scenes/mpm/jelly-drop.yaml"),
                                {"grid.dx=0.0005", "bodies.0.min=[0, 0, 0]", "bodies.0.max=[1, 1, 1]"});
  int refused = 0;
  try {
    refuse_unfit_job(MPI_COMM_WORLD, huge, std::nullopt);
  } catch (const InputError& e) {
    refused = 1;
    const std::string what = e.what();
    EXPECT_NE(what.find("64000000000 particles"), std::string::npos) << what;
    EXPECT_NE(what.find("smallest rank count that fits is"), std::string::npos) << what;
  }
  int everywhere = 0;
  MPI_Allreduce(&refused, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  EXPECT_EQ(everywhere, 1);
  const Scene small = load_scene(source("jobs/scenes/mpm/jelly-drop.yaml"));
  EXPECT_NO_THROW(refuse_unfit_job(MPI_COMM_WORLD, small, std::nullopt));
  EXPECT_THROW(refuse_unfit_job(MPI_COMM_WORLD, small, 40e6), InputError);  // below the baseline
}

}  // namespace
}  // namespace nendo
