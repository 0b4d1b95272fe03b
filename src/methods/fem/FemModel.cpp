#include "methods/fem/FemModel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "bodies/TetMesher.hpp"
#include "core/CollectiveError.hpp"
#include "core/Error.hpp"
#include "core/Mpi.hpp"
#include "materials/StvkMaterial.hpp"

namespace nendo::fem {
namespace {

Vec3 centroid(const TetHierarchy& h, Index t) {
  Vec3 c{0, 0, 0};
  for (Index n : h.corners(t))
    for (int a = 0; a < 3; ++a) c[a] += h.rest_position(n)[a] / 4;
  return c;
}

// H1: each finest tet's material, its body's or, on the odd cells of the body's checkerboard
// (Fig. 4), the alternate one.
// Each body's fem keys (BodySettings::method_keys), looked up once.
std::vector<const FemBody*> fem_bodies(const Scene& scene) {
  std::vector<const FemBody*> keys;
  for (const BodySettings& body : scene.bodies) keys.push_back(&body.method_keys.get<FemBody>());
  return keys;
}

FineMaterials fine_materials(const Scene& scene, const TetHierarchy& h,
                             const std::vector<std::int32_t>& root_body) {
  const Index begin = h.level_begin[h.max_level], end = h.level_begin[h.max_level + 1];
  FineMaterials fine;
  std::map<std::string, FineMaterial> by_name;
  const std::vector<const FemBody*> fem_keys = fem_bodies(scene);
  for (Index t = begin; t < end; ++t) {
    const std::int32_t b = root_body[h.global_tet(h.root(t))];
    const BodySettings& body = scene.bodies[b];
    const FemBody& keys = *fem_keys[b];
    std::string name = body.material;
    if (!keys.alternate_material.empty()) {
      const Vec3 c = centroid(h, t);
      long parity = 0;
      for (int a = 0; a < 3; ++a) parity += static_cast<long>(std::floor(c[a] / keys.alternate_cell));
      if (parity % 2 != 0) name = keys.alternate_material;
    }
    auto [known, fresh] = by_name.try_emplace(name);  // a material's stiffness once, not per tet
    if (fresh) {
      const MaterialSettings& material = scene.materials.at(name);
      known->second = {stvk_stiffness(material), material.params.at("density")};
    }
    fine.push_back(known->second);
  }
  return fine;
}

Real min_altitude(const RestShape& rest) {
  // The altitude over face a is 1/|∇N_a|; ∇N_1..3 are the rows of D_m^{-1}, ∇N_0 minus their sum.
  Real largest = rest.dm_inverse.colwise().sum().norm();
  for (int a = 0; a < 3; ++a) largest = std::max(largest, rest.dm_inverse.row(a).norm());
  return 1 / largest;
}

FemModel build(MPI_Comm comm, const Scene& scene, const Level0Mesh& level0, const std::vector<Index>& roots,
               FemModelParts parts, bool whole);

}  // namespace

Level0Mesh make_level0_mesh(MPI_Comm comm, const Scene& scene) {
  Level0Mesh level0;
  TetMesh& mesh = level0.mesh;
  std::string error;
  if (mpi::rank(comm) == 0) try {
      for (std::size_t b = 0; b < scene.bodies.size(); ++b) {
        const TetMesh body = body_tet_mesh(scene.bodies[b], scene.sections.get<FemSettings>().spacing);
        const auto offset = static_cast<std::int32_t>(mesh.vertex_count());
        mesh.vertices.insert(mesh.vertices.end(), body.vertices.begin(), body.vertices.end());
        for (std::int32_t v : body.tets) mesh.tets.push_back(v + offset);
        level0.tet_body.resize(mesh.tet_count(), static_cast<std::int32_t>(b));
      }
    } catch (const Error& e) {
      error = e.what();
    }
  raise_collectively(comm, error);
  mpi::broadcast(mesh.vertices, 0, comm);
  mpi::broadcast(mesh.tets, 0, comm);
  mpi::broadcast(level0.tet_body, 0, comm);
  return level0;
}

FemModel build_fem_model(MPI_Comm comm, const Scene& scene) { return build_fem_model(comm, scene, nullptr); }

FemModel build_fem_model(MPI_Comm comm, const Scene& scene,
                         const std::function<std::vector<Index>(const TetMesh&)>& held_roots) {
  const Level0Mesh level0 = make_level0_mesh(comm, scene);
  if (held_roots) return build_fem_model(comm, scene, level0, held_roots(level0.mesh));
  return build(comm, scene, level0, {}, {}, true);
}

FemModel build_fem_model(MPI_Comm comm, const Scene& scene, const Level0Mesh& level0,
                         const std::vector<Index>& roots, FemModelParts parts) {
  return build(comm, scene, level0, roots, parts, false);
}

namespace {

// `whole`: every root, numbered without the partial build's tables (roots is then ignored).
FemModel build(MPI_Comm comm, const Scene& scene, const Level0Mesh& level0, const std::vector<Index>& roots,
               FemModelParts parts, bool whole) {
  FemModel model;
  const std::vector<std::int32_t>& root_body = level0.tet_body;
  const int max_level = scene.sections.get<FemSettings>().max_level;
  model.hierarchy =
      whole ? build_hierarchy(level0.mesh, max_level) : build_hierarchy(level0.mesh, max_level, roots);
  const TetHierarchy& h = model.hierarchy;

  if (parts.constants) {
    HomogenisationSettings homogenisation;
    homogenisation.linear_tolerance = scene.sections.get<FemSettings>().linear_tolerance;
    homogenisation.vertices_only = scene.sections.get<FemSettings>().boundary == "vertices_only";
    model.constants = homogenise(comm, h, fine_materials(scene, h, root_body), homogenisation);
  }

  // Nodes: a level-0 vertex belongs to the body of a tet using it; a midpoint to its edge's.
  model.node_body.assign(h.node_count(), 0);
  for (Index t = 0; t < h.level_begin[1]; ++t)
    for (Index n : h.corners(t)) model.node_body[n] = root_body[h.global_tet(t)];
  for (std::size_t n = static_cast<std::size_t>(h.node_level_end[0]); n < h.node_count(); ++n)
    model.node_body[n] = model.node_body[h.node_edge[n][0]];
  model.fixed.assign(h.node_count(), 0);
  const std::vector<const FemBody*> fem_keys = fem_bodies(scene);
  for (std::size_t n = 0; n < h.node_count(); ++n) {
    const FemBody& body = *fem_keys[model.node_body[n]];
    const Real* x = h.rest_position(static_cast<Index>(n));
    bool inside = body.fixed;
    for (int a = 0; a < 3 && inside; ++a) inside = x[a] >= body.fixed_min[a] && x[a] <= body.fixed_max[a];
    model.fixed[n] = inside;
  }
  for (const BodySettings& body : scene.bodies) model.body_velocity.push_back(body.velocity);

  if (!parts.stable_dt) return model;
  Real speed = 0;
  for (const BodySettings& body : scene.bodies)
    for (const std::string& name : {body.material, body.method_keys.get<FemBody>().alternate_material})
      if (!name.empty()) speed = std::max(speed, stvk_wave_speed(scene.materials.at(name)));
  Real altitude = std::numeric_limits<Real>::infinity();
  for (Index t = h.level_begin[h.max_level]; t < h.level_begin[h.max_level + 1]; ++t)
    altitude = std::min(altitude, min_altitude(tet_rest_shape(h, t)));
  MPI_Allreduce(MPI_IN_PLACE, &altitude, 1, MPI_DOUBLE, MPI_MIN, comm);
  model.stable_dt = 0.4 * altitude / speed;
  return model;
}

}  // namespace

}  // namespace nendo::fem
