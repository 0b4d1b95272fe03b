#include "methods/MethodCost.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "bodies/BodySeeder.hpp"
#include "bodies/TetMeshFile.hpp"
#include "core/Error.hpp"
#include "io/GmshMesh.hpp"
#include "io/MshReader.hpp"
#include "io/ParticleReader.hpp"

namespace nendo {
namespace {

std::map<std::string, MethodCost>& costs() {
  static std::map<std::string, MethodCost> registered;
  return registered;
}

constexpr double kPi = 3.14159265358979323846;

double body_volume(const BodySettings& body) {
  if (body.shape == "sphere") return 4.0 / 3.0 * kPi * body.radius * body.radius * body.radius;
  if (body.shape == "cylinder") return kPi * body.radius * body.radius * body.height;
  return (body.max[0] - body.min[0]) * (body.max[1] - body.min[1]) * (body.max[2] - body.min[2]);
}

}  // namespace

void register_method_cost(const std::string& method, MethodCost cost) {
  if (!costs().emplace(method, std::move(cost)).second)
    throw Error("the cost model of method '" + method + "' is registered twice");
}

const MethodCost* find_method_cost(const std::string& method) {
  const auto found = costs().find(method);
  return found == costs().end() ? nullptr : &found->second;
}

ProblemSize seeded_particles_size(const Scene& scene) {
  return ProblemSize{count_seeded_particles(scene, scene.grid.dx), 0, 0, "particles", "", ""};
}

std::uint64_t count_seeded_particles(const Scene& scene, Real dx, int particles_per_cell) {
  std::uint64_t count = 0;
  for (BodySettings body : scene.bodies) {
    if (body.shape == "file") {
      count += ParticleReader::describe(body.path).count;
      continue;
    }
    if (particles_per_cell > 0) body.particles_per_cell = particles_per_cell;
    count += count_lattice_particles(body, scene.dimension, dx);
  }
  return count;
}

MeshCount box_mesh_count(const BodySettings& body, Real spacing, int levels) {
  MeshCount count{1, 6};
  std::uint64_t tets_per_level = 1;
  for (int a = 0; a < 3; ++a) {  // as box_tet_mesh: whole cubes, at least one per axis
    const auto cells =
        static_cast<std::uint64_t>(std::max(1L, std::lround((body.max[a] - body.min[a]) / spacing)));
    count.vertices *= (cells << levels) + 1;
    count.tets *= cells;
  }
  std::uint64_t all = 0;
  for (int l = 0; l <= levels; ++l, tets_per_level *= 8) all += count.tets * tets_per_level;
  count.tets = all;
  return count;
}

MeshCount file_mesh_count(const std::string& path) {
  if (MshReader::streams(path)) {
    const TetMeshFile file(MPI_COMM_SELF, path);
    return {static_cast<std::uint64_t>(file.vertex_count()), static_cast<std::uint64_t>(file.tet_count())};
  }
  const TetMesh mesh = read_gmsh_tet_mesh(path);
  return {mesh.vertex_count(), mesh.tet_count()};
}

// Gmsh's mesh of jobs/scenes/shape_matching/cylinder-bend.yaml has 1.10 V / h^3 vertices (1 943);
// a Delaunay mesh has about 5.5 tets per vertex. Red refinement: 8 times the tets per level and
// about as many more vertices.
MeshCount gmsh_mesh_estimate(const BodySettings& body, Real spacing, int levels) {
  const double vertices = 1.1 * body_volume(body) / (spacing * spacing * spacing);
  double tets = 0;
  for (int l = 0; l <= levels; ++l) tets += 5.5 * vertices * std::pow(8.0, l);
  return {static_cast<std::uint64_t>(std::llround(vertices * std::pow(8.0, levels))),
          static_cast<std::uint64_t>(std::llround(tets))};
}

}  // namespace nendo
