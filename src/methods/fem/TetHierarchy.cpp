#include "methods/fem/TetHierarchy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/SplitMix.hpp"

namespace nendo::fem {
namespace {

// The edge → midpoint map of one level (spec §4.1 "Nested nodes"): open addressing on the sorted
// node pair, sized once for the level so that it never rehashes (load ≤ ½ even if no edge is
// shared).
class EdgeMidpointMap {
 public:
  explicit EdgeMidpointMap(std::size_t max_edges) {
    std::size_t capacity = 16;
    while (capacity < 2 * max_edges) capacity *= 2;
    keys_.assign(capacity, kEmpty);
    midpoints_.resize(capacity);
    mask_ = capacity - 1;
  }

  // The midpoint node of edge {a, b}; `make(lo, hi)` creates it on first sight.
  template <class Make>
  Index find_or_insert(Index a, Index b, Make&& make) {
    if (a > b) std::swap(a, b);
    const std::uint64_t key = (static_cast<std::uint64_t>(a) << 32) | static_cast<std::uint32_t>(b);
    std::size_t slot = splitmix64(key) & mask_;
    while (keys_[slot] != kEmpty) {
      if (keys_[slot] == key) return midpoints_[slot];
      slot = (slot + 1) & mask_;
    }
    keys_[slot] = key;
    midpoints_[slot] = make(a, b);
    return midpoints_[slot];
  }

 private:
  static constexpr std::uint64_t kEmpty = std::numeric_limits<std::uint64_t>::max();
  std::vector<std::uint64_t> keys_;
  std::vector<Index> midpoints_;
  std::size_t mask_ = 0;
};

void check_level0(const TetMesh& mesh, int max_level) {
  if (max_level < 0 || max_level > std::numeric_limits<std::int8_t>::max())
    throw std::invalid_argument("build_hierarchy: max_level " + std::to_string(max_level) + " out of range");
  if (mesh.vertices.size() % 3 != 0 || mesh.tets.size() % 4 != 0)
    throw std::invalid_argument("build_hierarchy: level-0 mesh arrays are not whole vertices/tets");
  const auto vertex_count = static_cast<std::int64_t>(mesh.vertex_count());
  for (std::size_t i = 0; i < mesh.tets.size(); ++i)
    if (mesh.tets[i] < 0 || mesh.tets[i] >= vertex_count)
      throw std::invalid_argument("build_hierarchy: tet " + std::to_string(i / 4) + " has vertex " +
                                  std::to_string(mesh.tets[i]) + " outside [0, " +
                                  std::to_string(vertex_count) + ")");
  std::int64_t total = 0, level_size = static_cast<std::int64_t>(mesh.tet_count());
  for (int l = 0; l <= max_level; ++l, level_size *= 8) {
    total += level_size;
    if (total > std::numeric_limits<Index>::max())
      throw std::invalid_argument("build_hierarchy: " + std::to_string(max_level) +
                                  " levels exceed the 32-bit tet numbering");
  }
}

Index add_midpoint(TetHierarchy& h, Index a, Index b, int new_level) {
  const auto id = static_cast<Index>(h.node_count());
  for (int c = 0; c < 3; ++c) {
    const Real mid =
        0.5 * (h.rest[3 * static_cast<std::size_t>(a) + c] + h.rest[3 * static_cast<std::size_t>(b) + c]);
    h.rest.push_back(mid);
  }
  h.node_level.push_back(static_cast<std::int8_t>(new_level));
  h.node_edge.push_back({a, b});
  return id;
}

// H2 for one level: midpoints of every level-l tet (deduplicated), then its 8 children in order.
void refine_level(TetHierarchy& h, int l) {
  const Index begin = h.level_begin[l], end = h.level_begin[l + 1];
  EdgeMidpointMap map(6 * static_cast<std::size_t>(end - begin));
  h.midpoints.resize(end);
  auto make = [&](Index a, Index b) { return add_midpoint(h, a, b, l + 1); };
  const bool store_children = l + 1 < h.max_level;  // the finest level's corners are derived
  for (Index t = begin; t < end; ++t) {
    const Corners c = h.stored_corners[t];
    for (int e = 0; e < 6; ++e)
      h.midpoints[t][e] = map.find_or_insert(c[kEdges[e][0]], c[kEdges[e][1]], make);
    for (int k = 0; k < 8; ++k)
      if (store_children) h.stored_corners.push_back(child_corners(c, h.midpoints[t], k));
  }
  h.level.resize(h.level.size() + 8 * static_cast<std::size_t>(end - begin), static_cast<std::int8_t>(l + 1));
  h.level_begin.push_back(static_cast<Index>(h.level.size()));
  h.node_level_end.push_back(static_cast<Index>(h.node_count()));
}

// Node → tets incidence of one level as CSR; each list ascending (tets are visited in order).
TetHierarchy::NodeStars node_stars(const TetHierarchy& h, int l) {
  const Index begin = h.level_begin[l], end = h.level_begin[l + 1];
  TetHierarchy::NodeStars stars;
  stars.offset.assign(static_cast<std::size_t>(h.node_level_end[l]) + 1, 0);
  for (Index t = begin; t < end; ++t)
    for (Index n : h.stored_corners[t]) ++stars.offset[n + 1];
  for (std::size_t n = 1; n < stars.offset.size(); ++n) stars.offset[n] += stars.offset[n - 1];
  stars.tets.resize(stars.offset.back());
  std::vector<Index> fill(stars.offset.begin(), stars.offset.end() - 1);
  for (Index t = begin; t < end; ++t)
    for (Index n : h.stored_corners[t]) stars.tets[fill[n]++] = t;
  return stars;
}

}  // namespace

bool TetHierarchy::is_ancestor(Index a, Index t) const {
  if (level[a] >= level[t]) return false;
  while (level[t] > level[a]) t = parent(t);
  return t == a;
}

TetHierarchy build_hierarchy(const TetMesh& level0, int max_level) {
  check_level0(level0, max_level);
  TetHierarchy h;
  h.max_level = max_level;
  const auto vertex_count = static_cast<Index>(level0.vertex_count());
  const auto root_count = static_cast<Index>(level0.tet_count());
  h.rest = level0.vertices;
  h.node_level.assign(vertex_count, 0);
  h.node_edge.assign(vertex_count, {-1, -1});
  h.node_level_end = {vertex_count};

  std::size_t total_tets = 0, stored_tets = 0, level_size = root_count;
  for (int l = 0; l <= max_level; ++l, level_size *= 8) {
    total_tets += level_size;
    if (l == 0 || l < max_level) stored_tets += level_size;
  }
  h.stored_corners.reserve(stored_tets);
  h.level.reserve(total_tets);
  for (Index t = 0; t < root_count; ++t)
    h.stored_corners.push_back(
        {level0.tets[4 * t], level0.tets[4 * t + 1], level0.tets[4 * t + 2], level0.tets[4 * t + 3]});
  h.level.assign(root_count, 0);
  h.level_begin = {0, root_count};

  for (int l = 0; l < max_level; ++l) refine_level(h, l);
  for (int l = 0; l < max_level; ++l) h.stars.push_back(node_stars(h, l));
  // The node arrays grew by push_back: up to twice their size, on every rank, for the whole run.
  h.rest.shrink_to_fit();
  h.node_level.shrink_to_fit();
  h.node_edge.shrink_to_fit();
  return h;
}

namespace {

using Point = std::array<Real, 3>;

Point corner(const TetHierarchy& h, Index t, int k) {
  const Real* x = h.rest_position(h.corners(t)[k]);
  return {x[0], x[1], x[2]};
}
Point minus(const Point& a, const Point& b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }
Real dot(const Point& a, const Point& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
Point cross(const Point& a, const Point& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}

Real round_to_significant_digits(Real v, int digits) {
  if (v == 0) return 0;
  const Real scale = std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(std::abs(v)))));
  return std::round(v * scale) / scale;
}

}  // namespace

std::array<Real, 6> shape_signature(const TetHierarchy& h, Index t) {
  std::array<Real, 6> lengths;
  for (int e = 0; e < 6; ++e) {
    const Point d = minus(corner(h, t, kEdges[e][1]), corner(h, t, kEdges[e][0]));
    lengths[e] = std::sqrt(dot(d, d));
  }
  std::sort(lengths.begin(), lengths.end());
  const Real longest = lengths[5];
  for (Real& l : lengths) l = round_to_significant_digits(l / longest, 6);
  return lengths;
}

Real min_dihedral_angle(const TetHierarchy& h, Index t) {
  constexpr Real kPi = 3.14159265358979323846;
  Real smallest = kPi;
  for (int e = 0; e < 6; ++e) {
    // The angle at edge (i, j) between the faces through k and through l: the angle between the
    // components of (x_k − x_i) and (x_l − x_i) normal to the edge, via atan2 for accuracy.
    const int i = kEdges[e][0], j = kEdges[e][1];
    const int k = kEdges[5 - e][0], l = kEdges[5 - e][1];  // the opposite edge
    const Point axis = minus(corner(h, t, j), corner(h, t, i));
    const Point u = cross(axis, minus(corner(h, t, k), corner(h, t, i)));
    const Point w = cross(axis, minus(corner(h, t, l), corner(h, t, i)));
    const Real angle = std::atan2(std::sqrt(dot(cross(u, w), cross(u, w))), dot(u, w));
    smallest = std::min(smallest, angle);
  }
  return smallest * 180 / kPi;
}

}  // namespace nendo::fem
