// Issue 34: the fem model is small beside the hierarchy it describes. The per-tet constants and
// fine materials are stored once per distinct value, rest shapes are computed where they are
// needed, and the finest tets list no neighbours, so building the model of a 69 120-tet slab
// raises a rank's peak resident set by well under 200 B per tet (the per-tet copies before took
// about 1 000 B per tet on every rank). What the model keeps for the run (every rank holds it) is
// smaller still: the finest tets' corners are derived from their parents', not stored.
#include <gtest/gtest.h>
#include <malloc.h>
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "methods/fem/FemModel.hpp"
#include "scene/SceneLoader.hpp"

namespace nendo {
namespace {

// A /proc/self/status entry in KiB (VmRSS: resident now; VmHWM: the peak so far).
long status_kib(const std::string& key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.compare(0, key.size() + 1, key + ":") == 0) return std::stol(line.substr(key.size() + 1));
  return -1;
}

// 20 x 8 x 8 cubes of 2.5 cm, 6 tets each, refined once: 7 680 + 61 440 tets.
const char* const kSlab =
    "nendo: 1\nmethod: fem\ndimension: 3\ngravity: [0, 0, -9.81]\ntime: {end: 1, dt: 1.0e-4}\n"
    "grid: {dx: 0.11, block: 3}\nmaterials: {rubber: {model: stvk, E: 1.0e5, nu: 0.3, density: 1000}}\n"
    "bodies: [{shape: box, material: rubber, min: [0, 0, 0], max: [0.5, 0.2, 0.2], fixed_min: [-1, -1, -1], "
    "fixed_max: [0, 1, 1]}]\n"
    "fem: {spacing: 0.025, max_level: 1}\n";

TEST(FemModel, PeakMemoryPerTetIsSmall) {
  const Scene scene = parse_scene(kSlab, "slab.yaml");
  const long before = status_kib("VmRSS");
  const fem::FemModel model = fem::build_fem_model(MPI_COMM_WORLD, scene);
  const long peak = status_kib("VmHWM");
  ASSERT_GT(before, 0);
  ASSERT_EQ(model.hierarchy.tet_count(), 7680u + 61440u);
  const double bytes_per_tet = 1024.0 * static_cast<double>(peak - before) / model.hierarchy.tet_count();
  std::cout << "fem model: peak " << peak - before << " KiB above the resident set before, " << bytes_per_tet
            << " B per tet; " << model.constants.distinct_count() << " distinct tet constants\n";
  EXPECT_LT(bytes_per_tet, 200);
  EXPECT_EQ(model.constants.size(), model.hierarchy.tet_count());
  EXPECT_LT(model.constants.distinct_count(), 100u);  // one material: a few classes and densities
}

// Heap bytes in use (small chunks and mmapped ones).
double heap_in_use() {
  const struct mallinfo2 info = mallinfo2();
  return static_cast<double>(info.uordblks) + static_cast<double>(info.hblkhd);
}

// About 16 B per tet of corners on the old code (~37 B per tet in all); 22 B per tet now: the
// level-1 tets' corners derived from the level-0 tets' corners and midpoints.
TEST(FemModel, KeptMemoryPerTetIsSmall) {
  const Scene scene = parse_scene(kSlab, "slab.yaml");
  const double before = heap_in_use();
  const fem::FemModel model = fem::build_fem_model(MPI_COMM_WORLD, scene);
  const double bytes_per_tet = (heap_in_use() - before) / static_cast<double>(model.hierarchy.tet_count());
  std::cout << "fem model: keeps " << bytes_per_tet << " B per tet\n";
  EXPECT_LT(bytes_per_tet, 26);
  EXPECT_GT(bytes_per_tet, 4);  // the measurement sees the model
}

// Two bodies of different materials and velocities, one held at one end, two levels.
const char* const kTwoBodies =
    "nendo: 1\nmethod: fem\ndimension: 3\ngravity: [0, 0, -9.81]\ntime: {end: 1, dt: 1.0e-4}\n"
    "grid: {dx: 0.3, block: 3}\nmaterials: {rubber: {model: stvk, E: 1.0e5, nu: 0.3, density: 1000}, "
    "jelly: {model: stvk, E: 3.0e4, nu: 0.4, density: 900}}\n"
    "bodies: [{shape: box, material: rubber, min: [0, 0, 0], max: [0.3, 0.1, 0.1], fixed_min: [-1, -1, -1], "
    "fixed_max: [0.02, 1, 1]}, {shape: box, material: jelly, min: [0, 0, 0.2], max: [0.2, 0.1, 0.3], "
    "velocity: [0, 0, -1]}]\n"
    "fem: {spacing: 0.05, max_level: 2}\n";

// Issue 34: each rank builds the model of some roots alone (overlapping sets, the last of several
// ranks none); what it holds is bitwise the whole model's.
TEST(FemModel, PartialModelsHoldTheWholeModelsValues) {
  const Scene scene = parse_scene(kTwoBodies, "two.yaml");
  const fem::FemModel whole = fem::build_fem_model(MPI_COMM_SELF, scene);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const int holding = std::max(1, ranks - 1);
  const fem::FemModel part = fem::build_fem_model(MPI_COMM_WORLD, scene, [&](const TetMesh& level0) {
    std::vector<fem::Index> roots;
    for (fem::Index r = 0; r < static_cast<fem::Index>(level0.tet_count()) && rank < holding; ++r)
      if ((r / 5) % holding == rank || r == 7) roots.push_back(r);
    return roots;
  });
  const fem::TetHierarchy& h = part.hierarchy;
  ASSERT_EQ(part.constants.size(), h.tet_count());
  for (fem::Index t = 0; t < static_cast<fem::Index>(h.tet_count()); ++t) {
    const auto a = fem::TetConstantsFields()(part.constants[t]);
    const auto b = fem::TetConstantsFields()(whole.constants[h.global_tet(t)]);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), sizeof a), 0) << "tet " << h.global_tet(t);
  }
  ASSERT_EQ(part.node_body.size(), h.node_count());
  for (fem::Index n = 0; n < static_cast<fem::Index>(h.node_count()); ++n) {
    EXPECT_EQ(part.node_body[n], whole.node_body[h.global_node(n)]) << "node " << h.global_node(n);
    EXPECT_EQ(part.fixed[n], whole.fixed[h.global_node(n)]) << "node " << h.global_node(n);
  }
  EXPECT_EQ(part.stable_dt, whole.stable_dt);
  EXPECT_EQ(part.body_velocity, whole.body_velocity);
  long held = static_cast<long>(h.roots.size()), covered = 0;
  MPI_Allreduce(&held, &covered, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_GE(covered, static_cast<long>(whole.hierarchy.level_begin[1]));  // the ranks cover the mesh
}

}  // namespace
}  // namespace nendo
