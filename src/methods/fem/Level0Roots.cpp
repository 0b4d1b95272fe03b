#include "methods/fem/Level0Roots.hpp"

#include <algorithm>

namespace nendo::fem {

Level0Roots::Level0Roots(const TetMesh& level0, int max_level)
    : numbering_(level0, max_level), vertex_count_(static_cast<Index>(level0.vertex_count())) {
  corners_.resize(level0.tet_count());
  star_offset_.assign(static_cast<std::size_t>(vertex_count_) + 1, 0);
  for (std::size_t r = 0; r < corners_.size(); ++r)
    for (int a = 0; a < 4; ++a) {
      corners_[r][a] = level0.tets[4 * r + a];
      ++star_offset_[corners_[r][a] + 1];
    }
  for (std::size_t v = 1; v < star_offset_.size(); ++v) star_offset_[v] += star_offset_[v - 1];
  star_roots_.resize(static_cast<std::size_t>(star_offset_.back()));
  std::vector<Index> fill(star_offset_.begin(), star_offset_.end() - 1);
  for (std::size_t r = 0; r < corners_.size(); ++r)
    for (Index v : corners_[r]) star_roots_[fill[v]++] = static_cast<Index>(r);
}

void Level0Roots::add_roots_at(Index vertex, std::vector<std::uint8_t>& seen, std::vector<Index>& out) const {
  for (Index i = star_offset_[vertex]; i < star_offset_[vertex + 1]; ++i)
    if (!seen[star_roots_[i]]) {
      seen[star_roots_[i]] = 1;
      out.push_back(star_roots_[i]);
    }
}

Index Level0Roots::numbering_root(Index node) const {
  int l = 1;
  while (node >= numbering_.node_level_end(l)) ++l;
  Index lo = 0, hi = root_count();  // the last root r with first_node(l, r) <= node
  while (hi - lo > 1) {
    const Index mid = lo + (hi - lo) / 2;
    (numbering_.first_node(l, mid) <= node ? lo : hi) = mid;
  }
  return lo;
}

void Level0Roots::add_holders(Index node, std::vector<std::uint8_t>& seen, std::vector<Index>& out) const {
  if (node < vertex_count_) {
    add_roots_at(node, seen, out);
    return;
  }
  for (Index v : corners_[numbering_root(node)]) add_roots_at(v, seen, out);
}

Index Level0Roots::home_root(Index node) const {
  return node < vertex_count_ ? star_roots_[star_offset_[node]] : numbering_root(node);
}

std::vector<Index> Level0Roots::rings_around(const std::vector<Index>& roots, int rings) const {
  std::vector<std::uint8_t> seen(corners_.size(), 0);
  for (Index r : roots) seen[r] = 1;
  std::vector<Index> all = roots, ring = roots, next;
  for (int k = 0; k < rings && !ring.empty(); ++k, ring.swap(next)) {
    next.clear();
    for (Index r : ring)
      for (Index v : corners_[r]) add_roots_at(v, seen, next);
    all.insert(all.end(), next.begin(), next.end());
  }
  std::sort(all.begin(), all.end());
  return all;
}

}  // namespace nendo::fem
