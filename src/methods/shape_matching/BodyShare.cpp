#include "methods/shape_matching/BodyShare.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>

#include "bodies/TetMeshFile.hpp"
#include "core/CollectiveError.hpp"
#include "core/Mpi.hpp"
#include "methods/shape_matching/ExampleShapes.hpp"
#include "methods/shape_matching/ShapeMatchingSettings.hpp"

namespace nendo {
namespace shape_matching {
namespace {

// Region members are one tet step from their region's vertex, and the tets around a member (its
// mass and ring size) one more.
constexpr int kTetSteps = 2;

// Point to point, in pieces below INT_MAX bytes.
template <class T>
void send(const std::vector<T>& values, int to, MPI_Comm comm) {
  const std::uint64_t count = values.size();
  MPI_Send(&count, 1, MPI_UINT64_T, to, 0, comm);
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  const std::size_t total = count * sizeof(T), piece = INT_MAX / 2;
  for (std::size_t at = 0; at < total; at += piece)
    MPI_Send(bytes + at, static_cast<int>(std::min(piece, total - at)), MPI_BYTE, to, 0, comm);
}

template <class T>
void receive(std::vector<T>& values, int from, MPI_Comm comm) {
  std::uint64_t count = 0;
  MPI_Recv(&count, 1, MPI_UINT64_T, from, 0, comm, MPI_STATUS_IGNORE);
  values.resize(count);
  auto* bytes = reinterpret_cast<unsigned char*>(values.data());
  const std::size_t total = count * sizeof(T), piece = INT_MAX / 2;
  for (std::size_t at = 0; at < total; at += piece)
    MPI_Recv(bytes + at, static_cast<int>(std::min(piece, total - at)), MPI_BYTE, from, 0, comm,
             MPI_STATUS_IGNORE);
}

void split(MPI_Comm comm, std::int64_t vertex_count, BodyShare& share) {
  const std::int64_t rank = mpi::rank(comm), ranks = mpi::size(comm);
  share.vertex_count = vertex_count;
  share.first = vertex_count * rank / ranks;
  share.last = vertex_count * (rank + 1) / ranks;
}

// The whole body's bounding box (over each rank's own vertices) and longest edge (over each
// rank's tets, which together hold every tet): minima and maxima are exact in any order.
void reduce_extent(MPI_Comm comm, BodyShare& share) {
  const TetMesh& mesh = share.part.mesh;
  share.owned_at_ = static_cast<std::size_t>(
      std::lower_bound(share.part.vertex_ids.begin(), share.part.vertex_ids.end(), share.first) -
      share.part.vertex_ids.begin());
  share.lo.fill(std::numeric_limits<Real>::infinity());
  share.hi.fill(-std::numeric_limits<Real>::infinity());
  for (std::int64_t v = share.first; v < share.last; ++v)
    for (int a = 0; a < 3; ++a) {
      share.lo[a] = std::min(share.lo[a], mesh.vertex(share.local(v))[a]);
      share.hi[a] = std::max(share.hi[a], mesh.vertex(share.local(v))[a]);
    }
  Real longest = 0;
  for (std::size_t t = 0; t < mesh.tet_count(); ++t)
    for (int a = 0; a < 4; ++a)
      for (int b = a + 1; b < 4; ++b) {
        const Real *p = mesh.vertex(mesh.tets[4 * t + a]), *q = mesh.vertex(mesh.tets[4 * t + b]);
        longest = std::max(longest, std::hypot(p[0] - q[0], p[1] - q[1], p[2] - q[2]));
      }
  MPI_Allreduce(MPI_IN_PLACE, share.lo.data(), 3, MPI_DOUBLE, MPI_MIN, comm);
  MPI_Allreduce(MPI_IN_PLACE, share.hi.data(), 3, MPI_DOUBLE, MPI_MAX, comm);
  MPI_Allreduce(&longest, &share.longest_edge, 1, MPI_DOUBLE, MPI_MAX, comm);
}

// The corners of tets `a` and `b` are the same, up to orientation (the last two swapped).
bool same_tet(const std::int64_t* a, const std::int64_t* b) {
  return a[0] == b[0] && a[1] == b[1] && std::minmax(a[2], a[3]) == std::minmax(b[2], b[3]);
}

// An example read from a mesh file at the share's vertices; its vertices and tets must be the
// body's, which each rank checks for the tets of its part (together: every tet).
std::vector<Real> example_from_file(MPI_Comm comm, const std::string& path, const BodyShare& share) {
  TetMeshFile file(comm, path);
  const std::string mismatch =
      path + ": an example must have the body's vertices and tets in the same order (it has " +
      std::to_string(file.vertex_count()) + " vertices and " + std::to_string(file.tet_count()) +
      " tets, the body " + std::to_string(share.vertex_count) + " and " + std::to_string(share.tet_count) +
      ")";
  if (file.vertex_count() != share.vertex_count || file.tet_count() != share.tet_count)
    throw CollectiveError(mismatch);
  const std::vector<std::int64_t> corners = file.tet_corners(share.part.tet_ids);
  const TetMeshPart& part = share.part;
  bool same = corners.size() == part.mesh.tets.size();
  for (std::size_t t = 0; same && t < part.mesh.tet_count(); ++t) {
    std::int64_t mine[4];
    for (int c = 0; c < 4; ++c) mine[c] = part.vertex_ids[part.mesh.tets[4 * t + c]];
    same = same_tet(mine, &corners[4 * t]);
  }
  raise_collectively(comm, same ? "" : mismatch);
  return file.positions(part.vertex_ids);
}

// The examples at the share's vertices: generated there, or read from files.
void make_examples(MPI_Comm comm, const BodySettings& body, BodyShare& share) {
  const ExampleFrame frame = example_frame(share.lo, share.hi);
  for (const ExampleSettings& example : body.method_keys.get<ShapeMatchingBody>().examples) {
    if (!is_generated(example)) {
      share.examples.push_back(example_from_file(comm, example.path, share));
      continue;
    }
    std::string error;
    try {
      share.examples.push_back(generated_example(example, frame, share.part.mesh.vertices));
    } catch (const Error& e) {
      error = e.what();
    }
    raise_collectively(comm, error);
  }
  share.part.tet_ids = {};  // the set-up reads tets in order, never their ids
}

// Each rank meshes the cube layers its vertices' set-up reads.
BodyShare box_share(MPI_Comm comm, const BodySettings& body, Real spacing) {
  const BoxLattice lattice(body.min, body.max, spacing);
  BodyShare share;
  split(comm, lattice.vertex_count(), share);
  share.tet_count = 6 * lattice.cube_count();
  if (share.first < share.last) {
    const std::int64_t layer = std::int64_t{lattice.nodes()[0]} * lattice.nodes()[1];
    const int k_first = static_cast<int>(share.first / layer),
              k_last = static_cast<int>((share.last - 1) / layer);
    share.part = box_tet_mesh_part(lattice, {0, 0, k_first - kTetSteps},
                                   {lattice.cells[0], lattice.cells[1], k_last + kTetSteps});
  }
  reduce_extent(comm, share);
  make_examples(comm, body, share);
  return share;
}

// Rank 0 reads the file in chunks; each rank keeps the tets its vertices' set-up reads.
BodyShare file_share(MPI_Comm comm, const BodySettings& body) {
  TetMeshFile file(comm, body.path);
  BodyShare share;
  split(comm, file.vertex_count(), share);
  share.tet_count = file.tet_count();
  share.part = file.part_near(share.first, share.last, kTetSteps);
  reduce_extent(comm, share);
  make_examples(comm, body, share);
  return share;
}

void send_part(const TetMeshPart& part, const std::vector<std::vector<Real>>& examples, int to,
               MPI_Comm comm) {
  send(part.mesh.vertices, to, comm);
  send(part.mesh.tets, to, comm);
  send(part.vertex_ids, to, comm);
  for (const std::vector<Real>& x : examples) send(x, to, comm);
}

void receive_part(BodyShare& share, int examples, MPI_Comm comm) {
  receive(share.part.mesh.vertices, 0, comm);
  receive(share.part.mesh.tets, 0, comm);
  receive(share.part.vertex_ids, 0, comm);
  share.examples.resize(examples);
  for (std::vector<Real>& x : share.examples) receive(x, 0, comm);
}

// The examples at the part's vertices.
std::vector<std::vector<Real>> examples_at(const std::vector<std::vector<Real>>& whole,
                                           const TetMeshPart& part) {
  std::vector<std::vector<Real>> mine(whole.size());
  for (std::size_t e = 0; e < whole.size(); ++e) {
    mine[e].reserve(3 * part.vertex_ids.size());
    for (std::int64_t v : part.vertex_ids)
      mine[e].insert(mine[e].end(), &whole[e][3 * v], &whole[e][3 * v] + 3);
  }
  return mine;
}

// Rank 0 meshes or reads the body and makes its examples (Gmsh holds the whole mesh anyway), then
// cuts and sends each rank its part in turn, so that it holds the whole and one part at a time.
BodyShare scattered_share(MPI_Comm comm, const BodySettings& body, Real spacing) {
  const int rank = mpi::rank(comm), ranks = mpi::size(comm);
  const auto& settings = body.method_keys.get<ShapeMatchingBody>().examples;
  TetMesh whole;
  std::vector<std::vector<Real>> examples;
  std::string error;
  if (rank == 0) try {
      whole = body_tet_mesh(body, spacing);
      for (const ExampleSettings& example : settings) examples.push_back(example_shape(example, whole));
    } catch (const Error& e) {
      error = e.what();
    }
  raise_collectively(comm, error);
  std::int64_t vertex_count = static_cast<std::int64_t>(whole.vertex_count());
  BodyShare share;
  share.tet_count = static_cast<std::int64_t>(whole.tet_count());
  MPI_Bcast(&vertex_count, 1, MPI_INT64_T, 0, comm);
  MPI_Bcast(&share.tet_count, 1, MPI_INT64_T, 0, comm);
  split(comm, vertex_count, share);
  if (rank == 0) {
    for (int to = 1; to < ranks; ++to) {
      const TetMeshPart part =
          tet_mesh_part_near(whole, vertex_count * to / ranks, vertex_count * (to + 1) / ranks, kTetSteps);
      send_part(part, examples_at(examples, part), to, comm);
    }
    share.part = tet_mesh_part_near(whole, share.first, share.last, kTetSteps);
    share.examples = examples_at(examples, share.part);
    share.part.tet_ids = {};
    whole = TetMesh{};
    examples = {};
  } else {
    receive_part(share, static_cast<int>(settings.size()), comm);
  }
  reduce_extent(comm, share);
  return share;
}

// Whether the body and its file examples are set up without a whole mesh: a box, or a mesh file
// the streaming reader reads, with examples it reads.
bool set_up_in_shares(MPI_Comm comm, const BodySettings& body) {
  if (body.shape != "box" && !(body.shape == "file" && TetMeshFile::streams(comm, body.path))) return false;
  for (const ExampleSettings& example : body.method_keys.get<ShapeMatchingBody>().examples)
    if (!is_generated(example) && !TetMeshFile::streams(comm, example.path)) return false;
  return true;
}

}  // namespace

BodyShare load_body_share(MPI_Comm comm, const BodySettings& body, Real spacing) {
  if (!set_up_in_shares(comm, body)) return scattered_share(comm, body, spacing);
  return body.shape == "box" ? box_share(comm, body, spacing) : file_share(comm, body);
}

}  // namespace shape_matching
}  // namespace nendo
