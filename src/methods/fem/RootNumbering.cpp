#include "methods/fem/RootNumbering.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "methods/fem/TetHierarchy.hpp"

namespace nendo::fem {
namespace {

// Groups equal keys; for each (root, slot) the smallest root with the same key, and each root's
// sharers (the other roots with one of its keys).
template <std::size_t N, std::size_t Slots>
void smallest_holders(const std::vector<std::array<std::int32_t, N + 2>>& keyed,
                      std::vector<std::array<Index, Slots>>& owner,
                      std::vector<std::vector<Index>>& sharers) {
  // keyed: N sorted vertex ids, the root, the slot; sorted by key then root.
  for (std::size_t begin = 0, end; begin < keyed.size(); begin = end) {
    end = begin;
    const auto same_key = [&](std::size_t i) {
      return std::equal(keyed[i].begin(), keyed[i].begin() + N, keyed[begin].begin());
    };
    while (end < keyed.size() && same_key(end)) ++end;
    const Index smallest = keyed[begin][N];
    for (std::size_t i = begin; i < end; ++i) {
      owner[keyed[i][N]][keyed[i][N + 1]] = smallest;
      for (std::size_t j = begin; j < end; ++j)
        if (j != i) sharers[keyed[i][N]].push_back(keyed[j][N]);
    }
  }
}

}  // namespace

EdgeCounts count_edges(int k) {
  const std::int64_t n = std::int64_t{1} << k;
  const std::int64_t vertices = (n + 1) * (n + 2) * (n + 3) / 6;
  return {vertices + n * n * n + 2 * n * n - 1, 3 * n * (n - 1) / 2, n};
}

RootNumbering::RootNumbering(const TetMesh& level0, int max_level)
    : max_level_(max_level), vertex_count_(static_cast<Index>(level0.vertex_count())) {
  const auto roots = static_cast<Index>(level0.tet_count());
  face_owner_.resize(roots);
  edge_owner_.resize(roots);
  sharers_.resize(roots);
  std::vector<std::array<std::int32_t, 5>> faces;
  std::vector<std::array<std::int32_t, 4>> edges;
  faces.reserve(4 * static_cast<std::size_t>(roots));
  edges.reserve(6 * static_cast<std::size_t>(roots));
  for (Index r = 0; r < roots; ++r) {
    const std::int32_t* c = &level0.tets[4 * static_cast<std::size_t>(r)];
    for (int k = 0; k < 4; ++k) {
      std::array<std::int32_t, 3> face;
      for (int a = 0, n = 0; a < 4; ++a)
        if (a != k) face[n++] = c[a];
      std::sort(face.begin(), face.end());
      faces.push_back({face[0], face[1], face[2], r, k});
    }
    for (int e = 0; e < 6; ++e) {
      const std::int32_t a = c[kEdges[e][0]], b = c[kEdges[e][1]];
      edges.push_back({std::min(a, b), std::max(a, b), r, e});
    }
  }
  std::sort(faces.begin(), faces.end());
  std::sort(edges.begin(), edges.end());
  smallest_holders<3>(faces, face_owner_, sharers_);
  smallest_holders<2>(edges, edge_owner_, sharers_);
  for (std::vector<Index>& s : sharers_) {
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
  }

  // Each root's new midpoints per level: its depth-(l − 1) edges less those a smaller root numbers.
  std::int64_t next = vertex_count_;
  for (int l = 1; l <= max_level; ++l) {
    const EdgeCounts edge_counts = count_edges(l - 1);
    std::vector<Index>& first = first_node_.emplace_back(static_cast<std::size_t>(roots) + 1);
    for (Index r = 0; r < roots; ++r) {
      first[r] = static_cast<Index>(next);
      std::int64_t own = edge_counts.all;
      for (int k = 0; k < 4; ++k) own -= face_owner_[r][k] != r ? edge_counts.inside_face : 0;
      for (int e = 0; e < 6; ++e) own -= edge_owner_[r][e] != r ? edge_counts.on_edge : 0;
      next += own;
      if (next > std::numeric_limits<Index>::max())
        throw std::invalid_argument("build_hierarchy: " + std::to_string(max_level) +
                                    " levels exceed the 32-bit node numbering");
    }
    first[roots] = static_cast<Index>(next);
  }
}

std::vector<Index> RootNumbering::ring(const std::vector<Index>& roots) const {
  std::vector<Index> ring;
  for (Index r : roots) ring.insert(ring.end(), sharers_[r].begin(), sharers_[r].end());
  std::sort(ring.begin(), ring.end());
  ring.erase(std::unique(ring.begin(), ring.end()), ring.end());
  std::vector<Index> outside;
  std::set_difference(ring.begin(), ring.end(), roots.begin(), roots.end(), std::back_inserter(outside));
  return outside;
}

}  // namespace nendo::fem
