#include "methods/fem/TetHierarchy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/SplitMix.hpp"
#include "methods/fem/RootNumbering.hpp"

namespace nendo::fem {
namespace {

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

// A point of a root's subtree named independently of the root: the level-0 vertices of the
// smallest root face or edge holding it, with its barycentric lattice coordinates on them
// (2^max_level in all), by increasing vertex; unused pairs are −1.
using SharedKey = std::array<std::int32_t, 6>;
struct SharedKeyHash {
  std::size_t operator()(const SharedKey& k) const {
    std::uint64_t h = 0;
    for (std::int32_t v : k) h = splitmix64(h ^ static_cast<std::uint32_t>(v));
    return h;
  }
};
using SharedNodes = std::unordered_map<SharedKey, Index, SharedKeyHash>;

// Refines one root to max_level and numbers its nodes as RootNumbering says (spec §4.1 H2, in the
// order of the whole hierarchy's build): the level-l tets in order, each one's edges in kEdges
// order, a midpoint made at its edge's first appearance in the root. A midpoint on a face or edge
// that a smaller root numbers takes that root's id from `shared`, which each root's own such
// midpoints are added to; roots are refined in increasing order, so a build that refines a
// root's ring first finds every id it needs. Nodes and tets are indexed within the root.
class RootRefiner {
 public:
  struct Node {
    std::array<std::int32_t, 4> lattice;  // barycentric, summing to 2^max_level
    Index id;                             // global; −1 if a root not refined numbers it
    std::int8_t level;
    std::array<std::int32_t, 2> edge;  // the parent edge's ends (root indices), −1 at level 0
    std::array<Real, 3> x;
  };
  std::vector<Node> nodes;
  std::vector<std::vector<std::array<std::int32_t, 4>>> tets;       // per level
  std::vector<std::vector<std::array<std::int32_t, 6>>> midpoints;  // per level below max_level

  RootRefiner(const TetMesh& level0, const RootNumbering& numbering, SharedNodes& shared)
      : level0_(level0), numbering_(numbering), shared_(shared), scale_(1 << numbering.max_level()) {
    tets.resize(numbering.max_level() + 1);
    midpoints.resize(numbering.max_level());
  }

  void refine(Index r) {
    root_ = r;
    nodes.clear();
    for (int k = 0; k < 4; ++k) {
      Node corner{};
      corner.lattice[k] = scale_;
      corner.id = level0_.tets[4 * static_cast<std::size_t>(r) + k];
      corner.edge = {-1, -1};
      std::copy_n(level0_.vertex(static_cast<std::size_t>(corner.id)), 3, corner.x.begin());
      nodes.push_back(corner);
    }
    tets[0].assign(1, {0, 1, 2, 3});
    for (int l = 0; l < numbering_.max_level(); ++l) refine_level(l);
  }

  // The parent edge of node m as global ids, smaller first ({−1, −1} at level 0).
  std::array<Index, 2> edge_ids(const Node& m) const {
    if (m.level == 0) return {-1, -1};
    const Index a = nodes[m.edge[0]].id, b = nodes[m.edge[1]].id;
    return {std::min(a, b), std::max(a, b)};
  }

 private:
  void refine_level(int l) {
    seen_.clear();
    own_ = 0;
    midpoints[l].resize(tets[l].size());
    tets[l + 1].clear();
    for (std::size_t i = 0; i < tets[l].size(); ++i) {
      const std::array<std::int32_t, 4> c = tets[l][i];
      for (int e = 0; e < 6; ++e) midpoints[l][i][e] = midpoint(c[kEdges[e][0]], c[kEdges[e][1]], l + 1);
      for (int k = 0; k < 8; ++k) tets[l + 1].push_back(child_corners(c, midpoints[l][i], k));
    }
    if (own_ != numbering_.first_node(l + 1, root_ + 1) - numbering_.first_node(l + 1, root_))
      throw std::logic_error("build_hierarchy: root " + std::to_string(root_) + " made " +
                             std::to_string(own_) + " level-" + std::to_string(l + 1) +
                             " nodes, not what its numbering counted");
  }

  std::int32_t midpoint(std::int32_t a, std::int32_t b, int level) {
    Node m{};
    for (int k = 0; k < 4; ++k) m.lattice[k] = (nodes[a].lattice[k] + nodes[b].lattice[k]) / 2;
    const auto side = static_cast<std::uint64_t>(scale_) + 1;
    const std::uint64_t key =
        static_cast<std::uint64_t>(m.lattice[0]) +
        side * (static_cast<std::uint64_t>(m.lattice[1]) + side * static_cast<std::uint64_t>(m.lattice[2]));
    const auto [at, fresh] = seen_.try_emplace(key, static_cast<std::int32_t>(nodes.size()));
    if (!fresh) return at->second;
    m.level = static_cast<std::int8_t>(level);
    m.edge = {a, b};
    for (int c = 0; c < 3; ++c) m.x[c] = 0.5 * (nodes[a].x[c] + nodes[b].x[c]);
    int support = 0, count = 0;
    for (int k = 0; k < 4; ++k)
      if (m.lattice[k] != 0) support |= 1 << k, ++count;
    Index owner = root_;
    if (count == 3) {
      for (int k = 0; k < 4; ++k)
        if (!(support & (1 << k))) owner = numbering_.face_owner(root_, k);
    } else if (count == 2) {
      for (int e = 0; e < 6; ++e)
        if (support == ((1 << kEdges[e][0]) | (1 << kEdges[e][1]))) owner = numbering_.edge_owner(root_, e);
    }
    if (owner == root_) {
      m.id = numbering_.first_node(level, root_) + own_++;
      if (count < 4) shared_.emplace(shared_key(m), m.id);
    } else {
      const auto found = shared_.find(shared_key(m));
      m.id = found == shared_.end() ? -1 : found->second;
    }
    nodes.push_back(m);
    return at->second;
  }

  SharedKey shared_key(const Node& m) const {
    std::array<std::pair<std::int32_t, std::int32_t>, 3> pairs;
    pairs.fill({std::numeric_limits<std::int32_t>::max(), -1});
    for (int k = 0, n = 0; k < 4; ++k)
      if (m.lattice[k] != 0)
        pairs[n++] = {level0_.tets[4 * static_cast<std::size_t>(root_) + k], m.lattice[k]};
    std::sort(pairs.begin(), pairs.end());
    SharedKey key;
    for (int i = 0; i < 3; ++i) {
      const bool used = pairs[i].second >= 0;
      key[2 * i] = used ? pairs[i].first : -1;
      key[2 * i + 1] = pairs[i].second;
    }
    return key;
  }

  const TetMesh& level0_;
  const RootNumbering& numbering_;
  SharedNodes& shared_;
  std::int32_t scale_;
  Index root_ = 0;
  Index own_ = 0;
  std::unordered_map<std::uint64_t, std::int32_t> seen_;  // lattice point → node, this level
};

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

// The tet arrays for `root_count` roots, each root's level-l tets contiguous (8^l of them).
void size_tets(TetHierarchy& h, Index root_count) {
  std::size_t total = 0, stored = 0, level_size = static_cast<std::size_t>(root_count);
  h.level_begin = {0};
  for (int l = 0; l <= h.max_level; ++l, level_size *= 8) {
    total += level_size;
    if (l == 0 || l < h.max_level) stored += level_size;
    h.level_begin.push_back(static_cast<Index>(total));
  }
  h.stored_corners.resize(stored);
  h.level.resize(total);
  h.midpoints.resize(static_cast<std::size_t>(h.level_begin[h.max_level]));
  for (int l = 0; l <= h.max_level; ++l)
    std::fill(h.level.begin() + h.level_begin[l], h.level.begin() + h.level_begin[l + 1],
              static_cast<std::int8_t>(l));
}

// Root `slot`'s tets (as refined) into h, their nodes renamed by `node`.
template <class NodeIndex>
void store_tets(TetHierarchy& h, const RootRefiner& refined, Index slot, NodeIndex&& node) {
  for (int l = 0; l <= h.max_level; ++l) {
    const Index first = h.level_begin[l] + slot * static_cast<Index>(refined.tets[l].size());
    for (std::size_t i = 0; i < refined.tets[l].size(); ++i) {
      const auto t = static_cast<std::size_t>(first) + i;
      if (l == 0 || l < h.max_level)
        for (int a = 0; a < 4; ++a) h.stored_corners[t][a] = node(refined.tets[l][i][a]);
      if (l < h.max_level)
        for (int e = 0; e < 6; ++e) h.midpoints[t][e] = node(refined.midpoints[l][i][e]);
    }
  }
}

// The roots around level-0 vertex v not seen yet, appended to `out` and marked seen.
void add_roots_at(const TetHierarchy& h, Index v, std::vector<std::uint8_t>& seen, std::vector<Index>& out) {
  const TetHierarchy::NodeStars& star = h.stars[0];
  for (Index i = star.offset[v]; i < star.offset[v + 1]; ++i)
    if (!seen[star.tets[i]]) {
      seen[star.tets[i]] = 1;
      out.push_back(star.tets[i]);
    }
}

// Level 0's stars even without finer levels: roots_around reads them.
void finish(TetHierarchy& h) {
  for (int l = 0; l < std::max(h.max_level, 1); ++l) h.stars.push_back(node_stars(h, l));
}

}  // namespace

std::vector<Index> roots_around(const TetHierarchy& h, const Index* nodes, std::size_t count) {
  // A node lies in a root only if its parent edge does, so in a root around the level-0 vertex
  // reached through first parents.
  std::vector<std::uint8_t> vertex_seen(static_cast<std::size_t>(h.node_level_end[0]), 0);
  std::vector<std::uint8_t> root_seen(static_cast<std::size_t>(h.level_begin[1]), 0);
  std::vector<Index> roots;
  for (std::size_t i = 0; i < count; ++i) {
    auto n = static_cast<Index>(nodes[i]);
    while (h.node_level[n] > 0) n = h.node_edge[n][0];
    if (vertex_seen[n]) continue;
    vertex_seen[n] = 1;
    add_roots_at(h, n, root_seen, roots);
  }
  std::sort(roots.begin(), roots.end());
  return roots;
}

bool TetHierarchy::is_ancestor(Index a, Index t) const {
  if (level[a] >= level[t]) return false;
  while (level[t] > level[a]) t = parent(t);
  return t == a;
}

TetHierarchy build_hierarchy(const TetMesh& level0, int max_level) {
  check_level0(level0, max_level);
  const RootNumbering numbering(level0, max_level);
  TetHierarchy h;
  h.max_level = max_level;
  h.root_total = numbering.root_count();
  size_tets(h, numbering.root_count());
  for (int l = 0; l <= max_level; ++l) h.node_level_end.push_back(numbering.node_level_end(l));
  const auto nodes = static_cast<std::size_t>(h.node_level_end.back());
  h.rest.resize(3 * nodes);
  h.node_level.resize(nodes);
  h.node_edge.resize(nodes);
  SharedNodes shared;
  RootRefiner refiner(level0, numbering, shared);
  for (Index r = 0; r < numbering.root_count(); ++r) {
    refiner.refine(r);
    for (const RootRefiner::Node& n : refiner.nodes) {
      std::copy_n(n.x.begin(), 3, &h.rest[3 * static_cast<std::size_t>(n.id)]);
      h.node_level[n.id] = n.level;
      h.node_edge[n.id] = refiner.edge_ids(n);
    }
    store_tets(h, refiner, r, [&](std::int32_t n) { return refiner.nodes[n].id; });
  }
  finish(h);
  return h;
}

TetHierarchy build_hierarchy(const TetMesh& level0, int max_level, const std::vector<Index>& roots) {
  check_level0(level0, max_level);
  if (!std::is_sorted(roots.begin(), roots.end()) ||
      std::adjacent_find(roots.begin(), roots.end()) != roots.end() ||
      (!roots.empty() && (roots.front() < 0 || roots.back() >= static_cast<Index>(level0.tet_count()))))
    throw std::invalid_argument("build_hierarchy: roots must be increasing level-0 tets");
  const RootNumbering numbering(level0, max_level);
  TetHierarchy h;
  h.max_level = max_level;
  h.root_total = numbering.root_count();
  h.roots = roots;
  size_tets(h, static_cast<Index>(roots.size()));

  // The ring's roots first (in increasing order with the held ones), for the ids they give.
  std::vector<Index> order = numbering.ring(roots);
  order.insert(order.end(), roots.begin(), roots.end());
  std::sort(order.begin(), order.end());
  struct HeldNode {
    Index id;
    std::int8_t level;
    std::array<Index, 2> edge;
    std::array<Real, 3> x;
  };
  std::vector<HeldNode> held;
  SharedNodes shared;
  RootRefiner refiner(level0, numbering, shared);
  for (Index r : order) {
    refiner.refine(r);
    const auto slot = std::lower_bound(roots.begin(), roots.end(), r);
    if (slot == roots.end() || *slot != r) continue;
    for (const RootRefiner::Node& n : refiner.nodes) {
      if (n.id < 0)
        throw std::logic_error("build_hierarchy: root " + std::to_string(r) +
                               " has a node its ring did not number");
      held.push_back({n.id, n.level, refiner.edge_ids(n), n.x});
    }
    store_tets(h, refiner, static_cast<Index>(slot - roots.begin()),
               [&](std::int32_t n) { return refiner.nodes[n].id; });  // global ids, renamed below
  }

  // Local nodes: the held ones by increasing global id (so level by level).
  std::sort(held.begin(), held.end(), [](const HeldNode& a, const HeldNode& b) { return a.id < b.id; });
  held.erase(std::unique(held.begin(), held.end(),
                         [](const HeldNode& a, const HeldNode& b) { return a.id == b.id; }),
             held.end());
  h.node_ids.resize(held.size());
  h.rest.resize(3 * held.size());
  h.node_level.resize(held.size());
  h.node_edge.resize(held.size());
  for (std::size_t n = 0; n < held.size(); ++n) h.node_ids[n] = held[n].id;
  const auto local = [&](Index global) {
    return static_cast<Index>(std::lower_bound(h.node_ids.begin(), h.node_ids.end(), global) -
                              h.node_ids.begin());
  };
  for (std::size_t n = 0; n < held.size(); ++n) {
    std::copy_n(held[n].x.begin(), 3, &h.rest[3 * n]);
    h.node_level[n] = held[n].level;
    h.node_edge[n] = held[n].level == 0
                         ? std::array<Index, 2>{-1, -1}
                         : std::array<Index, 2>{local(held[n].edge[0]), local(held[n].edge[1])};
  }
  for (int l = 0; l <= max_level; ++l)
    h.node_level_end.push_back(static_cast<Index>(
        std::upper_bound(h.node_level.begin(), h.node_level.end(), static_cast<std::int8_t>(l)) -
        h.node_level.begin()));
  for (Corners& c : h.stored_corners)
    for (Index& n : c) n = local(n);
  for (auto& m : h.midpoints)
    for (Index& n : m) n = local(n);
  finish(h);
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
