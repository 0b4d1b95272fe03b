#include "app/MeshOutput.hpp"

#include <algorithm>
#include <numeric>

#include "core/CollectiveError.hpp"

namespace nendo {
namespace {

struct RowOfId {
  ParticleId id;
  std::int64_t row;
};

// Collective: the file rows of this rank's owned particles and halo copies, sorted by id. A halo
// copy's row is its owner's, sent through the halo as a Real (exact below 2^53 particles).
std::vector<RowOfId> rows_by_id(Space& space) {
  const ParticleSet& owned = space.particles();
  std::uint64_t count = owned.size(), offset = 0;
  MPI_Exscan(&count, &offset, 1, MPI_UINT64_T, MPI_SUM, space.comm());
  if (space.rank() == 0) offset = 0;  // MPI_Exscan leaves rank 0's result undefined
  ParticleHalo& halo = space.halo();
  const ParticleSet& copies = halo.particles();
  std::vector<Real> owned_rows(count), copy_rows(copies.size());
  std::iota(owned_rows.begin(), owned_rows.end(), static_cast<Real>(offset));
  halo.update_values(owned_rows.data(), 1, copy_rows.data());

  std::vector<RowOfId> rows;
  rows.reserve(owned.size() + copies.size());
  for (std::size_t p = 0; p < owned.size(); ++p)
    rows.push_back({owned.ids()[p], static_cast<std::int64_t>(offset + p)});
  for (std::size_t q = 0; q < copies.size(); ++q)
    rows.push_back({copies.ids()[q], static_cast<std::int64_t>(copy_rows[q])});
  std::sort(rows.begin(), rows.end(), [](const RowOfId& a, const RowOfId& b) { return a.id < b.id; });
  return rows;
}

}  // namespace

FileMesh file_mesh(Space& space, const Method& method) {
  const TetMeshView view = method.mesh_view(space);
  const std::vector<RowOfId> rows = rows_by_id(space);
  FileMesh mesh;
  std::string error;
  const std::string where = "mesh output: rank " + std::to_string(space.rank()) + ": ";
  if (view.vertices && view.tets) {
    const ParticleSet& vertices = *view.vertices;
    mesh.tets.reserve(view.tets->size());
    for (const std::int64_t v : *view.tets) {
      if (v < 0 || static_cast<std::size_t>(v) >= vertices.size()) {
        error = where + "tet vertex " + std::to_string(v) + " is not one of the " +
                std::to_string(vertices.size()) + " vertices";
        break;
      }
      const ParticleId id = vertices.ids()[v];
      const auto found = std::lower_bound(rows.begin(), rows.end(), id,
                                          [](const RowOfId& row, ParticleId key) { return row.id < key; });
      if (found == rows.end() || found->id != id) {
        error = where + "the tet vertex of particle id " + std::to_string(id) +
                " is neither owned here nor a halo copy";
        break;
      }
      mesh.tets.push_back(found->row);
    }
  }
  if (view.tet_fields) mesh.tet_fields = *view.tet_fields;
  raise_collectively(space.comm(), error);
  return mesh;
}

}  // namespace nendo
