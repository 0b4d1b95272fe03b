#pragma once
// The hierarchy's global node numbering (TetHierarchy.hpp) computed from the level-0 mesh alone,
// so that a rank can build the subtrees of some level-0 tets ("roots") and number their nodes as
// the whole hierarchy would (issue 34, item 1).
//
// Level l's nodes are the midpoints of level l − 1's edges, numbered by first appearance over the
// level-(l − 1) tets in order; those tets are ordered root by root, so each root's new midpoints
// are one contiguous range of ids. A midpoint first appears in the smallest root that holds its
// edge: an edge inside a root is the root's own; one inside a level-0 face belongs to the smallest
// root sharing the face, one on a level-0 edge to the smallest root around that edge. How many
// edges a red-refined tet has at depth k, and how many of them lie inside a face or on an edge, is
// a closed form (count_edges), so each root's count, and by a prefix sum its first id, follow from
// which faces and edges it shares with smaller roots.
#include <array>
#include <cstdint>
#include <vector>

#include "core/TetMesh.hpp"

namespace nendo::fem {

using Index = std::int32_t;

class RootNumbering {
 public:
  RootNumbering(const TetMesh& level0, int max_level);

  int max_level() const { return max_level_; }
  Index root_count() const { return static_cast<Index>(face_owner_.size()); }
  // The smallest root holding face k of root r (the face opposite corner k): r itself if no
  // smaller root shares it.
  Index face_owner(Index r, int k) const { return face_owner_[r][k]; }
  // The smallest root holding edge e (kEdges order) of root r.
  Index edge_owner(Index r, int e) const { return edge_owner_[r][e]; }
  // The first id of the level-l nodes root r numbers (1 ≤ l ≤ max_level); r = root_count() gives
  // the end of level l.
  Index first_node(int l, Index r) const { return first_node_[l - 1][r]; }
  // Nodes of levels ≤ l are [0, node_level_end(l)).
  Index node_level_end(int l) const { return l == 0 ? vertex_count_ : first_node(l, root_count()); }
  // The roots not in `roots` that share a face or an edge with one of them, increasing: whose
  // numbering a partial build reads for the midpoints it shares with them.
  std::vector<Index> ring(const std::vector<Index>& roots) const;

 private:
  int max_level_;
  Index vertex_count_;
  std::vector<std::array<Index, 4>> face_owner_;
  std::vector<std::array<Index, 6>> edge_owner_;
  std::vector<std::vector<Index>> first_node_;  // per level 1..max_level: root_count() + 1 entries
  std::vector<std::vector<Index>> sharers_;     // per root: the roots sharing a face or an edge
};

// Edges of a tet red-refined k times (n = 2^k): all of them, those strictly inside one face, and
// those on one edge. From Euler's formula for a ball, V − E + F − T = 1, with V = C(n + 3, 3),
// F = 2n³ + 2n², T = n³; a face is a triangle cut into n² (3n(n − 1)/2 inner edges).
struct EdgeCounts {
  std::int64_t all, inside_face, on_edge;
};
EdgeCounts count_edges(int k);

}  // namespace nendo::fem
