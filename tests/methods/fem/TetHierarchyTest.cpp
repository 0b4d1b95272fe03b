// Spec 004 §8 test 1 (subdivision, Fig. 5) and the numbering contract of TetHierarchy.hpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <utility>

#include "methods/fem/Level0Roots.hpp"
#include "methods/fem/RootNumbering.hpp"
#include "methods/fem/TetHierarchy.hpp"

namespace nendo::fem {
namespace {

constexpr Real kPi = 3.14159265358979323846;

TetMesh single_tet(const std::array<Vec3, 4>& x) {
  TetMesh mesh;
  for (const Vec3& p : x) mesh.vertices.insert(mesh.vertices.end(), p.begin(), p.end());
  mesh.tets = {0, 1, 2, 3};
  return mesh;
}

TetMesh regular_tet() { return single_tet({{{1, 1, 1}, {1, -1, -1}, {-1, 1, -1}, {-1, -1, 1}}}); }
TetMesh kuhn_tet() { return single_tet({{{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {1, 1, 1}}}); }
TetMesh random_tet() {
  return single_tet({{{0.13, -0.21, 0.07}, {1.37, 0.11, -0.29}, {0.41, 1.19, 0.23}, {-0.17, 0.47, 1.31}}});
}

// A lattice of nx × ny × nz unit cubes, each cut into the 6 Kuhn tets around its main diagonal,
// positively oriented.
TetMesh kuhn_box(int nx, int ny, int nz) {
  TetMesh mesh;
  auto id = [&](int i, int j, int k) { return i + (nx + 1) * (j + (ny + 1) * k); };
  for (int k = 0; k <= nz; ++k)
    for (int j = 0; j <= ny; ++j)
      for (int i = 0; i <= nx; ++i) mesh.vertices.insert(mesh.vertices.end(), {Real(i), Real(j), Real(k)});
  std::array<int, 3> axes = {0, 1, 2};
  for (int k = 0; k < nz; ++k)
    for (int j = 0; j < ny; ++j)
      for (int i = 0; i < nx; ++i) {
        std::sort(axes.begin(), axes.end());
        do {
          std::array<int, 3> at = {i, j, k};
          std::array<std::int32_t, 4> tet;
          tet[0] = id(at[0], at[1], at[2]);
          for (int s = 0; s < 3; ++s) {
            ++at[axes[s]];
            tet[s + 1] = id(at[0], at[1], at[2]);
          }
          mesh.tets.insert(mesh.tets.end(), tet.begin(), tet.end());
          if (mesh.volume(mesh.tet_count() - 1) < 0)
            std::swap(mesh.tets[mesh.tets.size() - 1], mesh.tets[mesh.tets.size() - 2]);
        } while (std::next_permutation(axes.begin(), axes.end()));
      }
  return mesh;
}

Real signed_volume(const TetHierarchy& h, Index t) {
  Real e[3][3];
  const Real* x0 = h.rest_position(h.corners(t)[0]);
  for (int a = 0; a < 3; ++a)
    for (int c = 0; c < 3; ++c) e[a][c] = h.rest_position(h.corners(t)[a + 1])[c] - x0[c];
  return (e[0][0] * (e[1][1] * e[2][2] - e[1][2] * e[2][1]) -
          e[0][1] * (e[1][0] * e[2][2] - e[1][2] * e[2][0]) +
          e[0][2] * (e[1][0] * e[2][1] - e[1][1] * e[2][0])) /
         6;
}

std::size_t similarity_classes(const TetHierarchy& h, int l) {
  std::set<std::array<Real, 6>> classes;
  for (Index t = h.level_begin[l]; t < h.level_begin[l + 1]; ++t) classes.insert(shape_signature(h, t));
  return classes.size();
}

Real level_min_dihedral(const TetHierarchy& h, int l) {
  Real smallest = 180;
  for (Index t = h.level_begin[l]; t < h.level_begin[l + 1]; ++t)
    smallest = std::min(smallest, min_dihedral_angle(h, t));
  return smallest;
}

struct LevelTopology {
  std::size_t vertices = 0, edges = 0, faces = 0, tets = 0, boundary_faces = 0;
  int max_tets_per_face = 0;
};

LevelTopology topology(const TetHierarchy& h, int l) {
  std::set<Index> vertices;
  std::set<std::array<Index, 2>> edges;
  std::map<std::array<Index, 3>, int> faces;
  for (Index t = h.level_begin[l]; t < h.level_begin[l + 1]; ++t) {
    Corners c = h.corners(t);
    std::sort(c.begin(), c.end());
    vertices.insert(c.begin(), c.end());
    for (const auto& e : kEdges) edges.insert({c[e[0]], c[e[1]]});
    for (int skip = 0; skip < 4; ++skip) {
      std::array<Index, 3> face;
      for (int k = 0, n = 0; k < 4; ++k)
        if (k != skip) face[n++] = c[k];
      ++faces[face];
    }
  }
  LevelTopology topo;
  topo.vertices = vertices.size();
  topo.edges = edges.size();
  topo.faces = faces.size();
  topo.tets = static_cast<std::size_t>(h.level_begin[l + 1] - h.level_begin[l]);
  for (const auto& [face, count] : faces) {
    topo.max_tets_per_face = std::max(topo.max_tets_per_face, count);
    if (count == 1) ++topo.boundary_faces;
  }
  return topo;
}

TEST(TetHierarchy, ChildVolumesSumToParent) {
  for (const TetMesh& mesh : {regular_tet(), kuhn_tet(), random_tet()}) {
    const TetHierarchy h = build_hierarchy(mesh, 4);
    for (Index t = 0; t < h.level_begin[h.max_level]; ++t) {
      Real children = 0;
      for (int k = 0; k < 8; ++k) children += std::abs(signed_volume(h, h.child(t, k)));
      const Real parent = std::abs(signed_volume(h, t));
      EXPECT_LT(std::abs(children - parent), 1e-12 * parent) << "tet " << t;
    }
  }
}

TEST(TetHierarchy, SimilarityClassesPerLevelAreBeysBound) {
  // Spec §4.1's table: regular 1, 2, 2, 2; Kuhn 1, 1, 1, 1; random 1, 3, 3, 3 (and so on at level 4).
  const std::vector<std::pair<TetMesh, std::vector<std::size_t>>> cases = {
      {regular_tet(), {1, 2, 2, 2, 2}}, {kuhn_tet(), {1, 1, 1, 1, 1}}, {random_tet(), {1, 3, 3, 3, 3}}};
  for (const auto& [mesh, expected] : cases) {
    const TetHierarchy h = build_hierarchy(mesh, 4);
    for (int l = 0; l <= 4; ++l) EXPECT_EQ(similarity_classes(h, l), expected[l]) << "level " << l;
  }
}

TEST(TetHierarchy, MinDihedralAngleDoesNotDecayBelowLevelOne) {
  const Real degrees = 180 / kPi;
  const TetHierarchy regular = build_hierarchy(regular_tet(), 4);
  EXPECT_NEAR(level_min_dihedral(regular, 0), std::acos(1.0 / 3) * degrees, 1e-9);  // 70.53°
  for (int l = 1; l <= 4; ++l)  // the octahedron's 109.47° halved by the x02–x13 cut: 54.74°
    EXPECT_NEAR(level_min_dihedral(regular, l), std::acos(1 / std::sqrt(3.0)) * degrees, 1e-9) << l;
  const TetHierarchy kuhn = build_hierarchy(kuhn_tet(), 4);
  for (int l = 0; l <= 4; ++l) EXPECT_NEAR(level_min_dihedral(kuhn, l), 45.0, 1e-9) << l;
  const TetHierarchy random = build_hierarchy(random_tet(), 4);
  const Real level1 = level_min_dihedral(random, 1);
  EXPECT_LE(level1, level_min_dihedral(random, 0));
  EXPECT_GT(level1, 10.0);
  for (int l = 2; l <= 4; ++l) {
    EXPECT_GE(level_min_dihedral(random, l), level1 - 1e-9) << l;
    EXPECT_GE(level_min_dihedral(random, l), level_min_dihedral(random, l - 1) - 1e-9) << l;
  }
}

TEST(TetHierarchy, EveryLevelIsConformingWithBallEulerCharacteristic) {
  for (const TetMesh& mesh : {random_tet(), kuhn_box(2, 1, 1)}) {
    const TetHierarchy h = build_hierarchy(mesh, 3);
    std::size_t previous_boundary = 0;
    for (int l = 0; l <= h.max_level; ++l) {
      const LevelTopology topo = topology(h, l);
      EXPECT_LE(topo.max_tets_per_face, 2) << "level " << l;
      // Every face is interior (2 tets) or boundary (1): 4T = 2F_interior + F_boundary.
      EXPECT_EQ(4 * topo.tets, 2 * (topo.faces - topo.boundary_faces) + topo.boundary_faces) << l;
      EXPECT_EQ(static_cast<long>(topo.vertices) - static_cast<long>(topo.edges) +
                    static_cast<long>(topo.faces) - static_cast<long>(topo.tets),
                1)
          << "level " << l;
      EXPECT_EQ(topo.vertices, static_cast<std::size_t>(h.node_level_end[l])) << l;
      if (l > 0) {
        EXPECT_EQ(topo.boundary_faces, 4 * previous_boundary) << l;
      }
      previous_boundary = topo.boundary_faces;
    }
  }
}

TEST(TetHierarchy, KuhnBoxLevelSizesMatchTheCantileverTable) {
  // Spec §7: 4 × 1 × 1 cubes; a red-refined Kuhn lattice is the Kuhn lattice of half the spacing.
  const TetHierarchy h = build_hierarchy(kuhn_box(4, 1, 1), 3);
  const std::array<Index, 4> tets = {24, 192, 1536, 12288}, nodes = {20, 81, 425, 2673};
  ASSERT_EQ(h.level_begin.size(), 5u);
  ASSERT_EQ(h.node_level_end.size(), 4u);
  for (int l = 0; l <= 3; ++l) {
    EXPECT_EQ(h.level_begin[l + 1] - h.level_begin[l], tets[l]) << l;
    EXPECT_EQ(h.node_level_end[l], nodes[l]) << l;
  }
  const TetHierarchy cube = build_hierarchy(kuhn_box(5, 5, 5), 2);  // (4·5 + 1)³ nodes at level 2
  EXPECT_EQ(cube.node_count(), 21u * 21u * 21u);
  EXPECT_EQ(cube.tet_count(), 750u * (1 + 8 + 64));
}

TEST(TetHierarchy, NodesAreParentEdgeMidpointsNumberedByFirstAppearance) {
  const TetHierarchy h = build_hierarchy(kuhn_box(2, 1, 1), 3);
  ASSERT_EQ(h.midpoints.size(), static_cast<std::size_t>(h.level_begin[h.max_level]));
  for (std::size_t n = 0; n < h.node_count(); ++n) {
    const auto [a, b] = h.node_edge[n];
    if (h.node_level[n] == 0) {
      EXPECT_EQ(a, -1);
      EXPECT_EQ(b, -1);
      continue;
    }
    ASSERT_LT(a, b);
    EXPECT_LT(h.node_level[a], h.node_level[n]);
    EXPECT_LT(h.node_level[b], h.node_level[n]);
    for (int c = 0; c < 3; ++c)
      EXPECT_EQ(h.rest_position(static_cast<Index>(n))[c],
                0.5 * (h.rest_position(a)[c] + h.rest_position(b)[c]));
  }
  for (int l = 0; l < h.max_level; ++l) {
    Index next = h.node_level_end[l];
    for (Index t = h.level_begin[l]; t < h.level_begin[l + 1]; ++t)
      for (int e = 0; e < 6; ++e) {
        const Index m = h.midpoints[t][e];
        const Index a = h.corners(t)[kEdges[e][0]], b = h.corners(t)[kEdges[e][1]];
        EXPECT_EQ(h.node_edge[m], (std::array<Index, 2>{std::min(a, b), std::max(a, b)}));
        EXPECT_EQ(h.node_level[m], l + 1);
        if (m >= next) {  // first appearance
          EXPECT_EQ(m, next++) << "midpoint of tet " << t << " edge " << e << " out of order";
        }
      }
    EXPECT_EQ(next, h.node_level_end[l + 1]);
  }
}

TEST(TetHierarchy, ChildrenFollowBeysVertexOrderAndAncestry) {
  const TetHierarchy h = build_hierarchy(kuhn_box(2, 1, 1), 2);
  for (Index t = 0; t < h.level_begin[h.max_level]; ++t) {
    const Corners x = h.corners(t);
    const auto& m = h.midpoints[t];  // x01, x02, x03, x12, x13, x23
    const std::array<Corners, 8> expected = {{{x[0], m[0], m[1], m[2]},
                                              {m[0], x[1], m[3], m[4]},
                                              {m[1], m[3], x[2], m[5]},
                                              {m[2], m[4], m[5], x[3]},
                                              {m[0], m[1], m[2], m[4]},
                                              {m[0], m[1], m[3], m[4]},
                                              {m[1], m[2], m[4], m[5]},
                                              {m[1], m[3], m[4], m[5]}}};
    for (int k = 0; k < 8; ++k) {
      const Index c = h.child(t, k);
      EXPECT_EQ(h.corners(c), expected[k]);
      EXPECT_EQ(h.level[c], h.level[t] + 1);
      EXPECT_EQ(h.parent(c), t);
      EXPECT_TRUE(h.is_ancestor(t, c));
      EXPECT_FALSE(h.is_ancestor(c, t));
    }
  }
  const Index leaf = h.level_begin[2] + 100;
  EXPECT_EQ(h.root(leaf), 100 / 64);
  EXPECT_TRUE(h.is_ancestor(h.root(leaf), leaf));
  EXPECT_FALSE(h.is_ancestor(leaf, leaf));
  EXPECT_FALSE(h.is_ancestor(h.root(leaf) + 1, leaf));
  EXPECT_FALSE(h.is_ancestor(h.parent(leaf) + 1, leaf));
}

std::vector<Index> neighbours(const TetHierarchy& h, Index t) {
  std::vector<Index> listed;
  h.for_each_neighbour(t, [&](Index s) {
    listed.push_back(s);
    return true;
  });
  return listed;
}

// Below the finest level; a finest tet lists none (no finest tet is ever refined, so none is read).
TEST(TetHierarchy, AdjacencyIsTheSameLevelVertexNeighbourhood) {
  const TetHierarchy h = build_hierarchy(kuhn_box(2, 1, 1), 2);
  ASSERT_EQ(h.stars.size(), 2u);
  for (int l = 0; l <= h.max_level; ++l)
    for (Index t = h.level_begin[l]; t < h.level_begin[l + 1]; ++t) {
      std::vector<Index> expected;
      for (Index s = h.level_begin[l]; s < h.level_begin[l + 1] && l < h.max_level; ++s) {
        bool shares = false;
        const Corners of_s = h.corners(s);
        for (Index a : h.corners(t)) shares |= std::count(of_s.begin(), of_s.end(), a) > 0;
        if (shares && s != t) expected.push_back(s);
      }
      const std::vector<Index> listed = neighbours(h, t);
      EXPECT_EQ(listed, expected) << "tet " << t;
      for (Index s : listed) {  // symmetric
        const std::vector<Index> back = neighbours(h, s);
        EXPECT_TRUE(std::binary_search(back.begin(), back.end(), t));
      }
    }
  // A visit that returns false stops the walk.
  int visits = 0;
  EXPECT_FALSE(h.for_each_neighbour(0, [&](Index) { return ++visits < 2; }));
  EXPECT_EQ(visits, 2);
}

TEST(TetHierarchy, SignatureAndDihedralAngleOfKnownShapes) {
  const TetHierarchy regular = build_hierarchy(regular_tet(), 0);
  for (Real l : shape_signature(regular, 0)) EXPECT_EQ(l, 1.0);
  const TetHierarchy kuhn = build_hierarchy(kuhn_tet(), 0);  // edges 1, 1, 1, √2, √2, √3
  const std::array<Real, 6> kuhn_signature = shape_signature(kuhn, 0);
  const std::array<Real, 6> expected = {1 / std::sqrt(3.0), 1 / std::sqrt(3.0), 1 / std::sqrt(3.0),
                                        std::sqrt(2.0 / 3), std::sqrt(2.0 / 3), 1};
  for (int e = 0; e < 6; ++e) EXPECT_NEAR(kuhn_signature[e], expected[e], 5e-7);
  EXPECT_NEAR(min_dihedral_angle(kuhn, 0), 45.0, 1e-12);
  EXPECT_THROW(build_hierarchy(single_tet({{{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}}}), -1),
               std::invalid_argument);
}

// Issue 34: the numbering computed per root (RootNumbering) and the partial build.

// kuhn_box with its tets in a shuffled order and each tet's corners rotated: roots share faces and
// edges in every orientation, and a shared face's smaller root is not always the earlier in space.
TetMesh shuffled_box(int nx, int ny, int nz, std::uint64_t seed) {
  const TetMesh box = kuhn_box(nx, ny, nz);
  std::vector<std::size_t> order(box.tet_count());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 random(seed);
  std::shuffle(order.begin(), order.end(), random);
  TetMesh mesh;
  mesh.vertices = box.vertices;
  for (std::size_t t : order) {
    std::array<std::int32_t, 4> c;
    std::copy_n(&box.tets[4 * t], 4, c.begin());
    std::rotate(c.begin(), c.begin() + random() % 4, c.end());
    mesh.tets.insert(mesh.tets.end(), c.begin(), c.end());
  }
  return mesh;
}

// The whole hierarchy's numbering straight from its definition (TetHierarchy.hpp): every level's
// edges in tet order, a new id at each edge's first appearance.
std::vector<std::array<Index, 6>> reference_midpoints(const TetMesh& mesh, int max_level) {
  std::vector<Corners> tets;
  for (std::size_t t = 0; t < mesh.tet_count(); ++t)
    tets.push_back({mesh.tets[4 * t], mesh.tets[4 * t + 1], mesh.tets[4 * t + 2], mesh.tets[4 * t + 3]});
  auto next = static_cast<Index>(mesh.vertex_count());
  std::vector<std::array<Index, 6>> midpoints;
  for (int l = 0; l < max_level; ++l) {
    std::map<std::pair<Index, Index>, Index> made;
    std::vector<Corners> children;
    for (const Corners& c : tets) {
      std::array<Index, 6> m;
      for (int e = 0; e < 6; ++e) {
        const Index a = c[kEdges[e][0]], b = c[kEdges[e][1]];
        const auto [at, fresh] = made.try_emplace({std::min(a, b), std::max(a, b)}, next);
        next += fresh;
        m[e] = at->second;
      }
      midpoints.push_back(m);
      for (int k = 0; k < 8; ++k) children.push_back(child_corners(c, m, k));
    }
    tets = children;
  }
  return midpoints;
}

TEST(RootNumbering, EdgeCountsAreThoseOfARefinedTet) {
  for (int k = 0; k <= 3; ++k) {
    const TetHierarchy h = build_hierarchy(random_tet(), k);
    const LevelTopology topo = topology(h, k);
    const EdgeCounts counts = count_edges(k);
    EXPECT_EQ(static_cast<std::size_t>(counts.all), topo.edges) << k;
    const std::int64_t n = std::int64_t{1} << k;
    // The boundary's edges: 4 faces' inner ones and 6 edges' pieces.
    EXPECT_EQ(4 * counts.inside_face + 6 * counts.on_edge, 3 * 2 * n * n)
        << k;  // 4n² triangles, 3 edges, 2 each
    EXPECT_EQ(counts.on_edge, n);
  }
}

TEST(TetHierarchy, WholeBuildHasTheFirstAppearanceNumbering) {
  for (std::uint64_t seed : {1, 2, 3}) {
    const TetMesh mesh = shuffled_box(3, 2, 2, seed);
    const TetHierarchy h = build_hierarchy(mesh, 3);
    EXPECT_EQ(h.midpoints, reference_midpoints(mesh, 3)) << "seed " << seed;
  }
}

TEST(TetHierarchy, PartialBuildHasTheWholeNumbering) {
  const TetMesh mesh = shuffled_box(3, 2, 2, 7);
  const auto root_count = static_cast<Index>(mesh.tet_count());
  std::mt19937_64 random(11);
  for (int max_level = 0; max_level <= 3; ++max_level) {
    const TetHierarchy whole = build_hierarchy(mesh, max_level);
    std::vector<std::vector<Index>> subsets = {{}, {0}, {root_count - 1}, {5, 6, 7, 8, 9}};
    for (int trial = 0; trial < 4; ++trial) {
      std::vector<Index> roots;
      for (Index r = 0; r < root_count; ++r)
        if (random() % 4 == 0) roots.push_back(r);
      subsets.push_back(roots);
    }
    for (const std::vector<Index>& roots : subsets) {
      const TetHierarchy part = build_hierarchy(mesh, max_level, roots);
      SCOPED_TRACE("max_level " + std::to_string(max_level) + ", " + std::to_string(roots.size()) + " roots");
      ASSERT_EQ(part.tet_count(), roots.size() * static_cast<std::size_t>(whole.tet_count() / root_count));
      EXPECT_TRUE(std::is_sorted(part.node_ids.begin(), part.node_ids.end()));
      std::set<Index> used;
      for (Index t = 0; t < static_cast<Index>(part.tet_count()); ++t) {
        const Index g = part.global_tet(t);
        ASSERT_EQ(part.level[t], whole.level[g]);
        EXPECT_EQ(part.global_tet(part.root(t)), whole.root(g));
        const Corners c = part.corners(t), expected = whole.corners(g);
        for (int a = 0; a < 4; ++a) {
          EXPECT_EQ(part.global_node(c[a]), expected[a]) << "tet " << g;
          used.insert(c[a]);
        }
        if (part.level[t] < max_level) {
          for (int e = 0; e < 6; ++e)
            EXPECT_EQ(part.global_node(part.midpoints[t][e]), whole.midpoints[g][e]);
          for (int k = 0; k < 8; ++k) EXPECT_EQ(part.global_tet(part.child(t, k)), whole.child(g, k));
          std::vector<Index> near, expected_near;
          part.for_each_neighbour(t, [&](Index s) {
            near.push_back(part.global_tet(s));
            return true;
          });
          whole.for_each_neighbour(g, [&](Index s) {
            if (std::binary_search(roots.begin(), roots.end(), whole.root(s))) expected_near.push_back(s);
            return true;
          });
          EXPECT_EQ(near, expected_near) << "tet " << g;
        }
      }
      EXPECT_EQ(used.size(), part.node_count());  // every held node is a corner of a held tet
      for (Index n = 0; n < static_cast<Index>(part.node_count()); ++n) {
        const Index g = part.global_node(n);
        EXPECT_EQ(part.node_level[n], whole.node_level[g]);
        for (int c = 0; c < 3; ++c)
          EXPECT_EQ(part.rest_position(n)[c], whole.rest_position(g)[c]);  // bitwise
        const auto [a, b] = part.node_edge[n];
        if (part.node_level[n] > 0) {
          EXPECT_EQ((std::array<Index, 2>{part.global_node(a), part.global_node(b)}), whole.node_edge[g]);
        } else {
          EXPECT_EQ(a, -1);
        }
      }
      for (int l = 0; l <= max_level; ++l)
        EXPECT_TRUE(part.node_level_end[l] == static_cast<Index>(part.node_count()) ||
                    part.node_level[part.node_level_end[l]] > l);
    }
  }
  EXPECT_THROW(build_hierarchy(mesh, 1, {3, 2}), std::invalid_argument);
  EXPECT_THROW(build_hierarchy(mesh, 1, {root_count}), std::invalid_argument);
}

TEST(RootNumbering, RingIsTheFaceAndEdgeNeighbours) {
  const TetMesh mesh = kuhn_box(3, 1, 1);  // 18 roots; the 6 of a cube share its main diagonal
  const RootNumbering numbering(mesh, 1);
  const std::vector<Index> ring = numbering.ring({0});
  for (Index r = 1; r < static_cast<Index>(mesh.tet_count()); ++r) {
    int shared = 0;
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 4; ++b) shared += mesh.tets[4 * r + a] == mesh.tets[b];
    EXPECT_EQ(std::binary_search(ring.begin(), ring.end(), r), shared >= 2) << r;
  }
}

// What a rank knows of roots it does not hold (issue 34): for every node of the whole hierarchy
// of a shuffled box, add_holders lists every root holding it (and at most its corners' rings),
// home_root is the smallest, and rings_around is the vertex-sharing rings.
TEST(Level0Roots, HoldersOfEveryNodeFromItsGlobalIdAlone) {
  const TetMesh mesh = shuffled_box(3, 2, 2, 11);
  const int max_level = 2;
  const TetHierarchy h = build_hierarchy(mesh, max_level);
  const Level0Roots roots(mesh, max_level);
  ASSERT_EQ(roots.root_count(), static_cast<Index>(mesh.tet_count()));
  std::vector<std::set<Index>> holders(h.node_count());
  for (Index t = 0; t < static_cast<Index>(h.tet_count()); ++t)
    for (Index n : h.corners(t)) holders[n].insert(h.root(t));
  const std::vector<Index> ring1 = roots.rings_around({0}, 1);
  for (Index n = 0; n < static_cast<Index>(h.node_count()); ++n) {
    std::vector<std::uint8_t> seen(mesh.tet_count(), 0);
    std::vector<Index> found;
    roots.add_holders(n, seen, found);
    for (Index r : holders[n])
      EXPECT_TRUE(std::count(found.begin(), found.end(), r)) << "node " << n << " root " << r;
    EXPECT_EQ(roots.home_root(n), *holders[n].begin()) << "node " << n;
    EXPECT_EQ(found.size(), std::set<Index>(found.begin(), found.end()).size());  // each once
  }
  for (Index r = 0; r < roots.root_count(); ++r) {
    bool shares = r == 0;
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 4; ++b) shares = shares || mesh.tets[4 * r + a] == mesh.tets[b];
    EXPECT_EQ(std::binary_search(ring1.begin(), ring1.end(), r), shares) << r;
  }
}

}  // namespace
}  // namespace nendo::fem
