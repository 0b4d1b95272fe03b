#pragma once
// The nested tetrahedral hierarchy of spec 004 §4.1 (H2, H3): the level-0 mesh red-refined
// (Bey 1995) to max_level, every level conforming, midpoints shared. The hierarchy is a pure
// function of the level-0 mesh, so its numbering is a global numbering: node n and tet t mean the
// same thing on every rank and in every checkpoint, whatever part of it a rank builds.
//
// Numbering. Tets level by level: level l is [level_begin[l], level_begin[l+1]); the 8 children of
// tet t of level l < max_level are child(t, 0..7) = level_begin[l+1] + 8 (t − level_begin[l]) + k,
// in the vertex order of spec §4.1 (c1..c8). Nodes: the level-0 vertices in mesh order, then each
// level's new midpoints in order of first appearance (tets in order, edges in kEdges order).
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/TetMesh.hpp"
#include "core/Types.hpp"

namespace nendo::fem {

using Index = std::int32_t;
using Corners = std::array<Index, 4>;

// The 6 edges of a tet as corner pairs, in the order tet_midpoints stores them.
inline constexpr std::array<std::array<int, 2>, 6> kEdges = {
    {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}}};

struct TetHierarchy {
  int max_level = 0;
  // Nodes: rest positions (x, y, z per node), the level a node appears on, and for a node of
  // level ≥ 1 the parent edge (a, b) whose midpoint it is ({-1, -1} for level-0 vertices).
  std::vector<Real> rest;
  std::vector<std::int8_t> node_level;
  std::vector<std::array<Index, 2>> node_edge;
  std::vector<Index> node_level_end;  // nodes of levels ≤ l are [0, node_level_end[l])
  // Tets: corners (in the order refinement produced them; the signed volume may be negative),
  // level, and for tets below max_level the midpoint node of each kEdges edge. The corners of the
  // finest level (7/8 of the tets) are not stored but read off their parent's corners and
  // midpoints (kChildren), which keeps 16 B per finest tet off every rank (issue 34).
  std::vector<Corners> stored_corners;  // tets of level 0 and of levels below max_level
  std::vector<std::int8_t> level;
  std::vector<Index> level_begin;               // max_level + 2 entries
  std::vector<std::array<Index, 6>> midpoints;  // indexed by tet; only tets of level < max_level
  // H3 by node stars: for each level l below the finest, the tets of level l at each node of
  // level ≤ l (CSR, ascending). for_each_neighbour merges a tet's 4 corner stars; finest tets have
  // none (a finest tet is never refined, so the active set never asks), which with 16 B per tet
  // instead of a ~270 B neighbour list keeps the replicated hierarchy small (issue 34).
  struct NodeStars {
    std::vector<Index> offset, tets;
  };
  std::vector<NodeStars> stars;  // per level below max_level (and level 0's always)
  // A partial hierarchy holds the subtrees of some level-0 tets ("roots") with the whole
  // hierarchy's numbering (issue 34): its tets are numbered as above over its roots alone (root
  // slot s's level-l tets are [level_begin[l] + 8^l s, + 8^l)), its nodes by increasing global id.
  // `roots` lists the held roots' global numbers and `node_ids` each node's global id; both are
  // empty when the hierarchy is whole (local numbers are global).
  Index root_total = 0;  // level-0 tets of the whole mesh
  std::vector<Index> roots;
  std::vector<Index> node_ids;

  std::size_t node_count() const { return node_level.size(); }
  std::size_t tet_count() const { return level.size(); }
  Corners corners(Index t) const;
  const Real* rest_position(Index n) const { return &rest[3 * static_cast<std::size_t>(n)]; }
  Index parent(Index t) const {
    const int l = level[t];
    return l == 0 ? -1 : level_begin[l - 1] + (t - level_begin[l]) / 8;
  }
  Index child(Index t, int k) const {
    return level_begin[level[t] + 1] + 8 * (t - level_begin[level[t]]) + k;
  }
  Index root(Index t) const {
    while (level[t] > 0) t = parent(t);
    return t;
  }
  bool is_ancestor(Index a, Index t) const;  // a strict ancestor of t
  Index global_node(Index n) const { return node_ids.empty() ? n : node_ids[n]; }
  // A node's, root's or tet's local number from its global one; −1 if not held.
  Index local_node(Index global) const {
    if (node_ids.empty()) return global >= 0 && static_cast<std::size_t>(global) < node_count() ? global : -1;
    const auto at = std::lower_bound(node_ids.begin(), node_ids.end(), global);
    return at != node_ids.end() && *at == global ? static_cast<Index>(at - node_ids.begin()) : -1;
  }
  Index local_root(Index global) const {
    if (roots.empty()) return global >= 0 && global < level_begin[1] ? global : -1;
    const auto at = std::lower_bound(roots.begin(), roots.end(), global);
    return at != roots.end() && *at == global ? static_cast<Index>(at - roots.begin()) : -1;
  }
  Index local_tet(Index global) const;
  Index global_tet(Index t) const {
    if (roots.empty()) return t;
    const int l = level[t];
    const Index per_root = Index{1} << (3 * l), offset = t - level_begin[l];
    Index whole_begin = 0;  // level_begin[l] of the whole hierarchy
    for (int k = 0; k < l; ++k) whole_begin += root_total << (3 * k);
    return whole_begin + roots[offset / per_root] * per_root + offset % per_root;
  }

  // Calls visit(s) for every tet s ≠ t of t's level sharing a vertex with t, ascending and once
  // each, while visit returns true; returns false if a visit stopped it. Nothing for finest tets.
  template <class Visit>
  bool for_each_neighbour(Index t, Visit&& visit) const;
};

// Bey's red refinement (spec §4.1): children c1..c8 of (x0, x1, x2, x3) as indices into
// {x0, x1, x2, x3, x01, x02, x03, x12, x13, x23}; the octahedron is cut along x02–x13.
inline constexpr int x01 = 4, x02 = 5, x03 = 6, x12 = 7, x13 = 8, x23 = 9;
inline constexpr std::array<std::array<int, 4>, 8> kChildren = {{{0, x01, x02, x03},
                                                                 {x01, 1, x12, x13},
                                                                 {x02, x12, 2, x23},
                                                                 {x03, x13, x23, 3},
                                                                 {x01, x02, x03, x13},
                                                                 {x01, x02, x12, x13},
                                                                 {x02, x03, x13, x23},
                                                                 {x02, x12, x13, x23}}};

// Child k's corners from its parent's corners and edge midpoints (kEdges order).
inline Corners child_corners(const Corners& parent, const std::array<Index, 6>& midpoints, int k) {
  std::array<Index, 10> local;
  for (int a = 0; a < 4; ++a) local[a] = parent[a];
  for (int e = 0; e < 6; ++e) local[4 + e] = midpoints[e];
  const std::array<int, 4>& child = kChildren[k];
  return {local[child[0]], local[child[1]], local[child[2]], local[child[3]]};
}

inline Corners TetHierarchy::corners(Index t) const {
  const auto stored = static_cast<Index>(stored_corners.size());
  if (t < stored) return stored_corners[t];
  const Index p = parent(t);
  return child_corners(stored_corners[p], midpoints[p], (t - level_begin[max_level]) % 8);
}

inline Index TetHierarchy::local_tet(Index global) const {
  if (roots.empty()) return global >= 0 && static_cast<std::size_t>(global) < tet_count() ? global : -1;
  Index whole_begin = 0;  // level_begin[l] of the whole hierarchy
  for (int l = 0; l <= max_level; ++l) {
    const Index per_root = Index{1} << (3 * l), size = root_total * per_root;
    if (global >= whole_begin && global - whole_begin < size) {
      const Index offset = global - whole_begin, slot = local_root(offset / per_root);
      return slot < 0 ? -1 : level_begin[l] + slot * per_root + offset % per_root;
    }
    whole_begin += size;
  }
  return -1;
}

template <class Visit>
bool TetHierarchy::for_each_neighbour(Index t, Visit&& visit) const {
  if (level[t] >= max_level) return true;
  const NodeStars& star = stars[level[t]];
  std::array<Index, 4> at, stop;
  for (int k = 0; k < 4; ++k) {
    at[k] = star.offset[stored_corners[t][k]];
    stop[k] = star.offset[stored_corners[t][k] + 1];
  }
  for (;;) {
    Index next = std::numeric_limits<Index>::max();
    for (int k = 0; k < 4; ++k)
      if (at[k] < stop[k]) next = std::min(next, star.tets[at[k]]);
    if (next == std::numeric_limits<Index>::max()) return true;
    for (int k = 0; k < 4; ++k)
      if (at[k] < stop[k] && star.tets[at[k]] == next) ++at[k];
    if (next != t && !visit(next)) return false;
  }
}

// H2, H3. The level-0 mesh may be of either orientation per tet.
TetHierarchy build_hierarchy(const TetMesh& level0, int max_level);
// The subtrees of `roots` (increasing level-0 tet numbers) alone, numbered as the whole one: a
// held node or tet has the global id the whole build gives it (global_node, global_tet). Costs
// the held roots' subtrees and their face and edge neighbours' (RootNumbering::ring).
TetHierarchy build_hierarchy(const TetMesh& level0, int max_level, const std::vector<Index>& roots);

// The roots (level-0 tets, increasing) that may hold any of `nodes`: a superset of those that do,
// found from each node's level-0 ancestor, so that a rank's work follows its own nodes and not the
// whole mesh (issue 34).
std::vector<Index> roots_around(const TetHierarchy& h, const Index* nodes, std::size_t count);

// A similarity-class signature for tet t (spec §8 test 1): the 6 edge lengths divided by the
// longest, sorted, rounded to 6 significant digits. Tets with equal signatures are similar up to
// rotation and reflection.
std::array<Real, 6> shape_signature(const TetHierarchy& h, Index t);
// Smallest dihedral angle of tet t, in degrees.
Real min_dihedral_angle(const TetHierarchy& h, Index t);

}  // namespace nendo::fem
