#pragma once
// The level-0 tets ("roots") of the whole mesh around each level-0 vertex, and which roots may hold
// a node known only by its global id: what a rank needs to know of roots it does not hold to choose
// those its partial model holds (issue 34). Built from the level-0 mesh, which every rank has.
#include <array>
#include <cstdint>
#include <vector>

#include "core/TetMesh.hpp"
#include "methods/fem/RootNumbering.hpp"

namespace nendo::fem {

class Level0Roots {
 public:
  Level0Roots(const TetMesh& level0, int max_level);

  Index root_count() const { return static_cast<Index>(corners_.size()); }
  // The roots at level-0 vertex v not `seen` yet, appended to `out` and marked seen.
  void add_roots_at(Index vertex, std::vector<std::uint8_t>& seen, std::vector<Index>& out) const;
  // A superset of the roots holding `node`: the roots at the corners of the root that numbers it
  // (RootNumbering), or at the vertex itself.
  void add_holders(Index node, std::vector<std::uint8_t>& seen, std::vector<Index>& out) const;
  // The smallest root holding `node`.
  Index home_root(Index node) const;
  // `roots` (increasing) and the roots within `rings` steps of them across shared vertices,
  // increasing.
  std::vector<Index> rings_around(const std::vector<Index>& roots, int rings) const;

 private:
  Index numbering_root(Index node) const;  // for a node above level 0
  RootNumbering numbering_;
  Index vertex_count_;
  std::vector<std::array<Index, 4>> corners_;
  std::vector<Index> star_offset_, star_roots_;  // per vertex, its roots increasing (CSR)
};

}  // namespace nendo::fem
