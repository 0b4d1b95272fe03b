// libnendo_gmsh.so: the Gmsh library behind io/GmshMesh.hpp (io/gmsh/GmshFunctions.hpp says why it
// is a plugin).
#include <gmsh.h>

#include <algorithm>
#include <exception>
#include <map>
#include <utility>

#include "core/Error.hpp"
#include "io/gmsh/GmshFunctions.hpp"

namespace nendo {
namespace {

constexpr int kTet4 = 4, kTet10 = 11;  // Gmsh element types

// Gmsh's global state for the life of one call.
class GmshSession {
 public:
  GmshSession() {
    gmsh::initialize(0, nullptr, false);
    gmsh::option::setNumber("General.Terminal", 0);
    gmsh::option::setNumber("General.NumThreads", 1);
  }
  ~GmshSession() { gmsh::finalize(); }
  GmshSession(const GmshSession&) = delete;
  GmshSession& operator=(const GmshSession&) = delete;
};

// What Gmsh throws: a std::string in 4.8, a std::exception in later versions.
template <class F>
void call_gmsh(const std::string& what, F&& f) {
  try {
    f();
  } catch (const std::string& message) {
    throw Error(what + ": " + message);
  } catch (const std::exception& e) {
    throw Error(what + ": " + e.what());
  }
}

// The current model's tetrahedra as a TetMesh.
TetMesh current_tets(const std::string& what) {
  std::vector<std::size_t> node_tags;
  std::vector<double> coords, parametric;
  gmsh::model::mesh::getNodes(node_tags, coords, parametric, -1, -1, true, false);
  std::map<std::size_t, std::size_t> coordinate_of;  // node tag -> index in coords
  for (std::size_t k = 0; k < node_tags.size(); ++k) coordinate_of.emplace(node_tags[k], k);
  std::vector<std::size_t> corners;
  for (int type : {kTet4, kTet10}) {
    std::vector<std::size_t> elements, nodes;
    gmsh::model::mesh::getElementsByType(type, elements, nodes);
    const std::size_t per = nodes.size() / std::max<std::size_t>(1, elements.size());
    for (std::size_t e = 0; e < elements.size(); ++e)
      for (int c = 0; c < 4; ++c) corners.push_back(nodes[per * e + c]);
  }
  if (corners.empty()) throw Error(what + ": the mesh has no tetrahedra");
  std::vector<std::size_t> used = corners;
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  TetMesh mesh;
  mesh.vertices.reserve(3 * used.size());
  for (std::size_t tag : used) {
    const auto it = coordinate_of.find(tag);
    if (it == coordinate_of.end())
      throw Error(what + ": element node " + std::to_string(tag) + " has no coordinates");
    for (int c = 0; c < 3; ++c) mesh.vertices.push_back(coords[3 * it->second + c]);
  }
  mesh.tets.reserve(corners.size());
  for (std::size_t tag : corners)
    mesh.tets.push_back(
        static_cast<std::int32_t>(std::lower_bound(used.begin(), used.end(), tag) - used.begin()));
  mesh.orient_positively();
  return mesh;
}

TetMesh read_tet_mesh(const std::string& path) {
  GmshSession session;
  TetMesh mesh;
  call_gmsh("cannot read the mesh file " + path, [&] {
    gmsh::open(path);
    mesh = current_tets(path);
  });
  return mesh;
}

void write_tet_mesh(const TetMesh& mesh, const std::string& path, double version, bool binary) {
  GmshSession session;
  call_gmsh("cannot write the mesh file " + path, [&] {
    gmsh::model::add("nendo");
    const int volume = gmsh::model::addDiscreteEntity(3);
    std::vector<std::size_t> node_tags(mesh.vertex_count()), element_tags(mesh.tet_count());
    std::vector<std::size_t> nodes(mesh.tets.size());
    for (std::size_t v = 0; v < node_tags.size(); ++v) node_tags[v] = v + 1;
    for (std::size_t t = 0; t < element_tags.size(); ++t) element_tags[t] = t + 1;
    for (std::size_t k = 0; k < nodes.size(); ++k) nodes[k] = static_cast<std::size_t>(mesh.tets[k]) + 1;
    gmsh::model::mesh::addNodes(3, volume, node_tags, mesh.vertices);
    gmsh::model::mesh::addElementsByType(volume, kTet4, element_tags, nodes);
    gmsh::option::setNumber("Mesh.MshFileVersion", version);
    gmsh::option::setNumber("Mesh.Binary", binary ? 1 : 0);
    gmsh::write(path);
  });
}

// Meshes the solid `add` puts in an OpenCASCADE model.
template <class AddSolid>
TetMesh mesh_solid(const std::string& name, Real size, AddSolid add) {
  GmshSession session;
  TetMesh mesh;
  call_gmsh("cannot mesh the " + name, [&] {
    gmsh::model::add(name);
    add();
    gmsh::model::occ::synchronize();
    gmsh::option::setNumber("Mesh.MeshSizeMin", size);
    gmsh::option::setNumber("Mesh.MeshSizeMax", size);
    gmsh::model::mesh::generate(3);
    mesh = current_tets(name);
  });
  return mesh;
}

TetMesh mesh_cylinder(const Vec3& base, int axis, Real radius, Real height, Real size) {
  return mesh_solid("cylinder", size, [&] {
    double d[3] = {0, 0, 0};
    d[axis] = height;
    gmsh::model::occ::addCylinder(base[0], base[1], base[2], d[0], d[1], d[2], radius);
  });
}

TetMesh mesh_sphere(const Vec3& center, Real radius, Real size) {
  return mesh_solid("sphere", size,
                    [&] { gmsh::model::occ::addSphere(center[0], center[1], center[2], radius); });
}

}  // namespace
}  // namespace nendo

const nendo::GmshFunctions* nendo_gmsh_functions() {
  static const nendo::GmshFunctions functions{nendo::read_tet_mesh, nendo::write_tet_mesh,
                                              nendo::mesh_cylinder, nendo::mesh_sphere};
  return &functions;
}
