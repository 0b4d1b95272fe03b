#pragma once
// A rank's share of a shape-matching body for the set-up (spec 001 §5, P1-P4): the vertices it
// sets up, ids [first, last) of the body's N (the particle seeder's split, [rN/P, (r+1)N/P)), with
// what their set-up reads and nothing more: every tet around a member of their regions (the
// members' masses and ring sizes, P2-P3), those tets' vertices, and the examples at them. No rank
// holds the whole mesh of a box or an MSH file at any time; rank 0 holds a sphere's or a
// cylinder's while Gmsh meshes it, and a file's in a format only Gmsh reads.
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "bodies/TetMesher.hpp"

namespace nendo {
namespace shape_matching {

struct BodyShare {
  std::int64_t vertex_count = 0;     // N, of the whole body
  std::int64_t tet_count = 0;        // of the whole body
  std::int64_t first = 0, last = 0;  // the vertices this rank sets up
  TetMeshPart part;                  // its vertices include [first, last); no tet ids (the set-up reads none)
  std::vector<std::vector<Real>> examples;  // x^1..x^n at the part's vertices
  Vec3 lo{}, hi{};                          // the whole body's rest bounding box
  Real longest_edge = 0;                    // of the whole body's tets

  // The index in the part of vertex v, first <= v < last.
  std::size_t local(std::int64_t v) const { return owned_at_ + static_cast<std::size_t>(v - first); }

  std::size_t owned_at_ = 0;  // the index of vertex `first` in the part
};

// Collective. A box is meshed in parts, each rank its own lattice layers and the two beyond on
// either side (members one layer away, their tets one more). An MSH file is read by rank 0 in
// chunks that every rank sees, keeping its part (bodies/TetMeshFile.hpp); example files are read
// so too. Any other body, or one with an example file Gmsh alone reads, is meshed or read whole
// by rank 0, which cuts each rank its part and sends it, one rank at a time. An error in meshing,
// reading or an example stops every rank with its message.
BodyShare load_body_share(MPI_Comm comm, const BodySettings& body, Real spacing);

}  // namespace shape_matching
}  // namespace nendo
