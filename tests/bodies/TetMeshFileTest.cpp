// A mesh file read in chunks by rank 0 and kept in parts (issue 34): every rank's part, and the
// positions and tets it asks for, are bit for bit what Gmsh's whole read of the file gives, for MSH
// 4.1 ASCII and binary and MSH 2.2 ASCII, with gaps in the node tags, nodes no tet uses, 10-node
// tets, other elements, parametric coordinates and tets of either orientation; chunks of 7 so that
// every block and section is cut. Ranks that ask for nothing take part in every collective call.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "bodies/TetMeshFile.hpp"
#include "core/CollectiveError.hpp"
#include "core/Mpi.hpp"
#include "io/GmshMesh.hpp"
#include "io/MshReader.hpp"
#include "support/FreshDirectory.hpp"

namespace nendo {
namespace {

// Two 10-node tets sharing a face (corners A=10, B=3, C=7, D=20, E=15; the first, A C B D, of
// negative volume), edge nodes 100-108, a node no tet uses (50, a point element), a triangle.
const char* const kMsh41 = R"($MeshFormat
4.1 0 8
$EndMeshFormat
$Entities
1 0 1 1
1 0.5 0.5 0.5 0
1 0 0 0 1 1 0 0 0
1 0 0 0 1 1 1 0 1 1
$EndEntities
$Nodes
3 15 3 108
0 1 0 1
50
0.5 0.5 0.5
2 1 1 3
10
3
7
0 0 0 0 0
1 0 0 1 0
0 1 0 0 1
3 1 0 11
20
15
100
101
102
103
104
105
106
107
108
0 0 1
1 1 1
0 0.5 0
0 0.5 0.5
0.5 0 0
0 0 0.5
0.5 0.5 0
0.5 0 0.5
0.5 0.5 0.5
1 0.5 0.5
0.5 1 0.5
$EndNodes
$Elements
3 4 1 4
0 1 15 1
1 50
2 1 2 1
2 10 7 3
3 1 11 2
3 10 7 3 20 100 101 102 103 104 105
4 3 7 20 15 104 105 106 107 108 101
$EndElements
)";

const char* const kMsh22 = R"($MeshFormat
2.2 0 8
$EndMeshFormat
$Nodes
15
50 0.5 0.5 0.5
10 0 0 0
3 1 0 0
7 0 1 0
20 0 0 1
15 1 1 1
100 0 0.5 0
101 0 0.5 0.5
102 0.5 0 0
103 0 0 0.5
104 0.5 0.5 0
105 0.5 0 0.5
106 0.5 0.5 0.5
107 1 0.5 0.5
108 0.5 1 0.5
$EndNodes
$Elements
4
1 15 2 0 1 50
2 2 2 0 1 10 7 3
3 11 2 0 1 10 7 3 20 100 101 102 103 104 105
4 11 2 0 1 3 7 20 15 104 105 106 107 108 101
$EndElements
)";

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// The files, written by rank 0: a Gmsh sphere in three formats and the two above.
std::vector<std::string> mesh_files(const std::string& dir) {
  const std::vector<std::string> files = {dir + "/sphere-41.msh", dir + "/sphere-41-binary.msh",
                                          dir + "/sphere-22.msh", dir + "/two-41.msh", dir + "/two-22.msh"};
  if (mpi::rank(MPI_COMM_WORLD) == 0) {
    const TetMesh sphere = gmsh_sphere({0.1, -0.2, 0.3}, 1.0, 0.3);
    write_gmsh_tet_mesh(sphere, files[0], 4.1);
    write_gmsh_tet_mesh(sphere, files[1], 4.1, true);
    write_gmsh_tet_mesh(sphere, files[2], 2.2);
    write(files[3], kMsh41);
    write(files[4], kMsh22);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return files;
}

TEST(TetMeshFile, PartsAreWhatGmshReadsWholeAtTheirIds) {
  const int rank = mpi::rank(MPI_COMM_WORLD), ranks = mpi::size(MPI_COMM_WORLD);
  for (const std::string& path : mesh_files(fresh_directory("bodies", "parts"))) {
    SCOPED_TRACE(path);
    ASSERT_TRUE(TetMeshFile::streams(MPI_COMM_WORLD, path));
    const TetMesh whole = read_gmsh_tet_mesh(path);
    TetMeshFile file(MPI_COMM_WORLD, path, 7);
    const auto n = static_cast<std::int64_t>(whole.vertex_count());
    ASSERT_EQ(file.vertex_count(), n);
    ASSERT_EQ(file.tet_count(), static_cast<std::int64_t>(whole.tet_count()));
    // Every other rank asks for nothing.
    const bool idle = ranks > 1 && rank % 2 == 1;
    const std::int64_t first = idle ? 0 : n * rank / ranks, last = idle ? 0 : n * (rank + 1) / ranks;
    for (int rings : {1, 2}) {
      const TetMeshPart part = file.part_near(first, last, rings);
      const TetMeshPart expected = tet_mesh_part_near(whole, first, last, rings);
      ASSERT_EQ(part.vertex_ids, expected.vertex_ids);
      ASSERT_EQ(part.tet_ids, expected.tet_ids);
      EXPECT_EQ(part.mesh.tets, expected.mesh.tets);
      EXPECT_EQ(part.mesh.vertices, expected.mesh.vertices);  // the same numbers read: equal bits
      if (idle) {
        EXPECT_TRUE(part.tet_ids.empty());
      }
    }
    // Positions and tets asked for by id: a stride of each, none on idle ranks.
    std::vector<std::int64_t> vertices, tets;
    for (std::int64_t v = rank; !idle && v < n; v += 3) vertices.push_back(v);
    for (std::int64_t t = rank; !idle && t < file.tet_count(); t += 2) tets.push_back(t);
    const std::vector<Real> x = file.positions(vertices);
    ASSERT_EQ(x.size(), 3 * vertices.size());
    for (std::size_t k = 0; k < vertices.size(); ++k)
      EXPECT_EQ(std::memcmp(&x[3 * k], whole.vertex(vertices[k]), 3 * sizeof(Real)), 0);
    const std::vector<std::int64_t> corners = file.tet_corners(tets);
    ASSERT_EQ(corners.size(), 4 * tets.size());
    for (std::size_t k = 0; k < tets.size(); ++k) {
      // The file's corners, before orientation: the same up to the last two swapped.
      const std::int32_t* w = &whole.tets[4 * tets[k]];
      EXPECT_EQ(corners[4 * k], w[0]);
      EXPECT_EQ(corners[4 * k + 1], w[1]);
      EXPECT_EQ(std::minmax(corners[4 * k + 2], corners[4 * k + 3]), std::minmax<std::int64_t>(w[2], w[3]));
    }
  }
}

// What stays with Gmsh: another MSH version, binary MSH 2, and anything that is not MSH.
TEST(TetMeshFile, OtherFormatsAreLeftToGmsh) {
  const std::string dir = fresh_directory("bodies", "formats");
  if (mpi::rank(MPI_COMM_WORLD) == 0) {
    write_gmsh_tet_mesh(box_tet_mesh({0, 0, 0}, {1, 1, 1}, 0.5), dir + "/box-22-binary.msh", 2.2, true);
    write(dir + "/box-40.msh", "$MeshFormat\n4 0 8\n$EndMeshFormat\n");
    write(dir + "/box.vtk", "# vtk DataFile Version 2.0\n");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (const char* name : {"/box-22-binary.msh", "/box-40.msh", "/box.vtk", "/missing.msh"})
    EXPECT_FALSE(TetMeshFile::streams(MPI_COMM_WORLD, dir + name)) << name;
}

// A file that cannot be read stops every rank with one message naming it and what is wrong.
TEST(TetMeshFile, BadFilesStopEveryRankNamingTheFile) {
  const std::string dir = fresh_directory("bodies", "bad");
  const std::string text = kMsh41;
  std::string no_tets = text.substr(0, text.find("3 1 11 2")) + "$EndElements\n";
  no_tets.replace(no_tets.find("3 4 1 4"), 7, "2 2 1 2");
  std::string lost_node = text;  // corner 15 becomes node 16, which no tet uses
  lost_node.replace(lost_node.find("\n15\n"), 4, "\n16\n");
  std::string cut = text.substr(0, text.find("4 3 7 20"));
  if (mpi::rank(MPI_COMM_WORLD) == 0) {
    write(dir + "/no-tets.msh", no_tets);
    write(dir + "/lost-node.msh", lost_node);
    write(dir + "/cut.msh", cut);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  auto message = [&](const std::string& name, bool read_part) {
    try {
      TetMeshFile file(MPI_COMM_WORLD, dir + name, 7);
      if (read_part) file.part_near(0, file.vertex_count(), 1);
    } catch (const CollectiveError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string missing = message("/missing.msh", false);
  EXPECT_NE(missing.find(dir + "/missing.msh"), std::string::npos) << missing;
  EXPECT_NE(missing.find("cannot open"), std::string::npos) << missing;
  EXPECT_NE(message("/no-tets.msh", false).find("no-tets.msh: the mesh has no tetrahedra"),
            std::string::npos);
  const std::string lost = message("/lost-node.msh", true);
  EXPECT_NE(lost.find("lost-node.msh: node 15 of a tet has no coordinates"), std::string::npos) << lost;
  const std::string short_file = message("/cut.msh", false);
  EXPECT_NE(short_file.find("cut.msh"), std::string::npos) << short_file;
}

}  // namespace
}  // namespace nendo
