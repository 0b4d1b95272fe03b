#pragma once
// A tetrahedral mesh file that no rank holds whole (issue 34): rank 0 reads it in chunks
// (io/MshReader.hpp) and broadcasts each; every rank keeps what it asked for and drops the rest.
// Which nodes the tets use is known by tag ranges, each rank one range (a bit per tag), so that
// tags and vertex ids convert with one round trip to the ranks of those ranges.
//
// Numbering is that of Gmsh's whole read (read_gmsh_tet_mesh): vertices are the nodes the tets
// use, in increasing tag order; tets are the file's, in file order, positively oriented. Every
// member function is collective.
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bodies/TetMesher.hpp"
#include "decomposition/SparseExchange.hpp"

namespace nendo {

class MshReader;

class TetMeshFile {
 public:
  // Reads the file once to find the nodes its tets use, `chunk` tets or nodes per broadcast.
  // Throws CollectiveError naming the file when it cannot be read or has no tets.
  TetMeshFile(MPI_Comm comm, const std::string& path, std::size_t chunk = 1 << 16);
  ~TetMeshFile();
  TetMeshFile(const TetMeshFile&) = delete;
  TetMeshFile& operator=(const TetMeshFile&) = delete;

  // Whether every rank's MshReader streams `path` (rank 0 looks).
  static bool streams(MPI_Comm comm, const std::string& path);

  const std::string& path() const { return path_; }
  std::int64_t vertex_count() const { return vertex_count_; }
  std::int64_t tet_count() const { return tet_count_; }

  // The tets within `rings` tet steps of vertices [first, last), with their vertices: what
  // tet_mesh_part_near cuts from the whole mesh (with tet ids).
  TetMeshPart part_near(std::int64_t first, std::int64_t last, int rings);
  // The positions (x, y, z) of vertices `ids`, ascending.
  std::vector<Real> positions(const std::vector<std::int64_t>& ids);
  // The corners (vertex ids, 4 each) of tets `ids`, ascending.
  std::vector<std::int64_t> tet_corners(const std::vector<std::int64_t>& ids);

 private:
  template <class Use>
  void for_each_tet_chunk(Use use);
  std::vector<Real> coordinates(const std::vector<std::int64_t>& tags);
  std::vector<std::int64_t> ids_of(const std::vector<std::int64_t>& tags);
  std::vector<std::int64_t> tags_of(const std::vector<std::int64_t>& ids);

  MPI_Comm comm_;
  SparseExchange exchange_;  // tags and ids to and from the ranks that answer for them
  std::string path_;
  std::size_t chunk_;
  std::unique_ptr<MshReader> reader_;  // rank 0's
  std::int64_t vertex_count_ = 0, tet_count_ = 0;
  // Rank r answers for tags [tag_start_[r], tag_start_[r + 1]) and ids [id_start_[r], id_start_[r + 1]).
  std::vector<std::int64_t> tag_start_, id_start_;
  std::vector<std::uint64_t> used_;        // this rank's tags, a bit each: used by a tet
  std::vector<std::int64_t> used_before_;  // per word of used_: the used tags before it
};

}  // namespace nendo
