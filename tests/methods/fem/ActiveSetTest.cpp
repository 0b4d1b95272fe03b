// Spec 004 §6.3 and §8 test 4: the active set of the tet hierarchy. Every invariant is checked by
// brute force from the geometry and the active flags, independently of ActiveSet's bookkeeping.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <cmath>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/Error.hpp"
#include "methods/fem/ActiveSet.hpp"

namespace nendo::fem {
namespace {

constexpr int kMaxLevel = 3;
constexpr std::array<int, 3> kBoxCubes = {2, 1, 1};  // unit cubes per axis
constexpr Real kBoxVolume = 2;

// A lattice of unit cubes, each cut into the 6 Kuhn tets (0,0,0) → +e_a → +e_b → +e_c around its
// main diagonal, in the vertex order whose red refinement stays in one similarity class (§4.1).
TetMesh kuhn_box(std::array<int, 3> cubes) {
  TetMesh mesh;
  const auto vertex = [&](int i, int j, int k) { return (k * (cubes[1] + 1) + j) * (cubes[0] + 1) + i; };
  for (int k = 0; k <= cubes[2]; ++k)
    for (int j = 0; j <= cubes[1]; ++j)
      for (int i = 0; i <= cubes[0]; ++i)
        mesh.vertices.insert(mesh.vertices.end(), {Real(i), Real(j), Real(k)});
  static constexpr int kOrders[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (int k = 0; k < cubes[2]; ++k)
    for (int j = 0; j < cubes[1]; ++j)
      for (int i = 0; i < cubes[0]; ++i)
        for (const auto& order : kOrders) {
          int at[3] = {i, j, k};
          mesh.tets.push_back(vertex(at[0], at[1], at[2]));
          for (const int axis : order) {
            ++at[axis];
            mesh.tets.push_back(vertex(at[0], at[1], at[2]));
          }
        }
  return mesh;
}

Eigen::Vector3d position(const TetHierarchy& h, Index n) {
  return Eigen::Vector3d(h.rest_position(n)[0], h.rest_position(n)[1], h.rest_position(n)[2]);
}

// The hierarchy and, per tet, the map from a point to its last three barycentric coordinates.
struct Geometry {
  TetHierarchy h;
  std::vector<Eigen::Matrix3d> to_barycentric;
  std::vector<Real> volume;  // |signed volume|
  std::array<Real, 3> box_max;

  explicit Geometry(std::array<int, 3> cubes) : h(build_hierarchy(kuhn_box(cubes), kMaxLevel)) {
    for (std::size_t t = 0; t < h.tet_count(); ++t) {
      Eigen::Matrix3d edges;
      for (int k = 0; k < 3; ++k)
        edges.col(k) = position(h, h.corners(t)[k + 1]) - position(h, h.corners(t)[0]);
      to_barycentric.push_back(edges.inverse());
      volume.push_back(std::abs(edges.determinant()) / 6);
    }
    for (int a = 0; a < 3; ++a) box_max[a] = cubes[a];
  }
  // Whether point p lies in the closed tet t (up to `slack` in barycentric coordinates).
  bool contains(Index t, const Eigen::Vector3d& p, Real slack) const {
    const Eigen::Vector3d b = to_barycentric[t] * (p - position(h, h.corners(t)[0]));
    return b.minCoeff() >= -slack && 1 - b.sum() >= -slack;
  }
};

const Geometry& box() {
  static const Geometry geometry(kBoxCubes);
  return geometry;
}

std::vector<std::vector<Index>> active_by_level(const ActiveSet& set) {
  std::vector<std::vector<Index>> by_level(kMaxLevel + 1);
  for (std::size_t t = 0; t < set.hierarchy().tet_count(); ++t)
    if (set.active(static_cast<Index>(t)))
      by_level[set.hierarchy().level[t]].push_back(static_cast<Index>(t));
  return by_level;
}

// Active tets partition the box: volumes add up per level-0 tet and in total, no active tet lies
// inside another, and `samples` random points each lie in exactly one active tet.
::testing::AssertionResult partitions_the_box(const Geometry& g, const ActiveSet& set, int samples,
                                              std::mt19937& rng) {
  const TetHierarchy& h = g.h;
  std::vector<Real> covered(static_cast<std::size_t>(h.level_begin[1]), 0);
  Real total = 0;
  std::size_t count = 0;
  for (std::size_t t = 0; t < h.tet_count(); ++t) {
    if (!set.active(static_cast<Index>(t))) continue;
    ++count;
    total += g.volume[t];
    covered[h.root(static_cast<Index>(t))] += g.volume[t];
    for (Index a = h.parent(static_cast<Index>(t)); a >= 0; a = h.parent(a))
      if (set.active(a))
        return ::testing::AssertionFailure() << "active tet " << t << " inside active tet " << a;
  }
  if (count != set.active_count())
    return ::testing::AssertionFailure() << "active_count() " << set.active_count();
  if (std::abs(total - kBoxVolume) > 1e-12 * kBoxVolume)
    return ::testing::AssertionFailure() << "active volume " << total;
  for (Index r = 0; r < h.level_begin[1]; ++r)
    if (std::abs(covered[r] - g.volume[r]) > 1e-12 * g.volume[r])
      return ::testing::AssertionFailure() << "level-0 tet " << r << " covered volume " << covered[r];
  std::uniform_real_distribution<Real> unit(0, 1);
  const std::vector<Index> active = set.active_tets();
  for (int s = 0; s < samples; ++s) {
    const Eigen::Vector3d p(g.box_max[0] * unit(rng), g.box_max[1] * unit(rng), g.box_max[2] * unit(rng));
    const auto hits =
        std::count_if(active.begin(), active.end(), [&](Index t) { return g.contains(t, p, 1e-12); });
    if (hits != 1) return ::testing::AssertionFailure() << "point in " << hits << " active tets";
  }
  return ::testing::AssertionSuccess();
}

// 2:1 balance by brute force: active tets sharing a node differ by ≤ 1 level, and no corner of an
// active tet lies in (the closure of) an active tet two or more levels coarser.
::testing::AssertionResult balanced_by_brute_force(const Geometry& g, const ActiveSet& set) {
  const TetHierarchy& h = g.h;
  std::vector<int> min_level(h.node_count(), kMaxLevel + 1), max_level(h.node_count(), -1);
  const auto by_level = active_by_level(set);
  for (int l = 0; l <= kMaxLevel; ++l)
    for (const Index t : by_level[l])
      for (const Index n : h.corners(t)) {
        min_level[n] = std::min(min_level[n], l);
        max_level[n] = std::max(max_level[n], l);
      }
  for (std::size_t n = 0; n < h.node_count(); ++n)
    if (max_level[n] - min_level[n] > 1)
      return ::testing::AssertionFailure()
             << "node " << n << " shared by levels " << min_level[n] << ", " << max_level[n];
  for (int fine = 2; fine <= kMaxLevel; ++fine)
    for (int coarse = 0; coarse <= fine - 2; ++coarse)
      for (const Index x : by_level[fine])
        for (const Index t : by_level[coarse])
          for (const Index n : h.corners(x))
            if (g.contains(t, position(h, n), 1e-9))
              return ::testing::AssertionFailure()
                     << "level-" << fine << " tet " << x << " touches level-" << coarse << " tet " << t;
  return ::testing::AssertionSuccess();
}

// The kEdges index of the edge between local corners a ≠ b.
int edge_index(int a, int b) {
  static const auto table = [] {
    std::array<std::array<int, 4>, 4> index{};
    for (int e = 0; e < 6; ++e) index[kEdges[e][0]][kEdges[e][1]] = index[kEdges[e][1]][kEdges[e][0]] = e;
    return index;
  }();
  return table[a][b];
}

// Node status from its definition (§6.3), recomputed from the active tets; hanging nodes sit at
// their edge's midpoint and their masters are regular and reproduce their rest position.
::testing::AssertionResult node_status_is_consistent(const Geometry& g, const ActiveSet& set) {
  const TetHierarchy& h = g.h;
  std::vector<int> corner_count(h.node_count(), 0);
  std::set<std::pair<Index, Index>> used_edges;
  for (const Index t : set.active_tets())
    for (int a = 0; a < 4; ++a) {
      ++corner_count[h.corners(t)[a]];
      for (int b = 0; b < 4; ++b) used_edges.insert({h.corners(t)[a], h.corners(t)[b]});
    }
  std::vector<Master> masters;
  for (std::size_t i = 0; i < h.node_count(); ++i) {
    const Index n = static_cast<Index>(i);
    const auto& edge = h.node_edge[n];
    const bool edge_used = h.node_level[n] > 0 && used_edges.count({edge[0], edge[1]}) > 0;
    const NodeStatus expected = corner_count[n] == 0 ? NodeStatus::Inactive
                                : edge_used          ? NodeStatus::Hanging
                                                     : NodeStatus::Regular;
    if (set.status(n) != expected) return ::testing::AssertionFailure() << "status of node " << n;
    set.masters(n, masters);
    if (expected != NodeStatus::Hanging) {
      if (masters.size() != 1 || masters[0].node != n || masters[0].weight != 1)
        return ::testing::AssertionFailure() << "node " << n << " is not its own master";
      continue;
    }
    const Eigen::Vector3d midpoint = (position(h, edge[0]) + position(h, edge[1])) / 2;
    if ((position(h, n) - midpoint).norm() >= 1e-12)
      return ::testing::AssertionFailure() << "hanging node " << n << " is not its edge's midpoint";
    Eigen::Vector3d interpolated = Eigen::Vector3d::Zero();
    Real weight_sum = 0;
    for (std::size_t k = 0; k < masters.size(); ++k) {
      if (k > 0 && masters[k].node <= masters[k - 1].node)
        return ::testing::AssertionFailure() << "masters of " << n << " not increasing";
      if (set.status(masters[k].node) != NodeStatus::Regular)
        return ::testing::AssertionFailure()
               << "master " << masters[k].node << " of " << n << " is not regular";
      interpolated += masters[k].weight * position(h, masters[k].node);
      weight_sum += masters[k].weight;
    }
    if (std::abs(weight_sum - 1) > 1e-15 || (interpolated - position(h, n)).norm() >= 1e-12)
      return ::testing::AssertionFailure() << "masters of " << n << " do not reproduce it";
  }
  return ::testing::AssertionSuccess();
}

using Face = std::array<Index, 3>;
Face sorted_face(Index a, Index b, Index c) {
  Face f = {a, b, c};
  std::sort(f.begin(), f.end());
  return f;
}

bool on_box_boundary(const Geometry& g, const Face& f) {
  for (int axis = 0; axis < 3; ++axis)
    for (const Real wall : {Real(0), g.box_max[axis]})
      if (std::all_of(f.begin(), f.end(), [&](Index n) { return g.h.rest_position(n)[axis] == wall; }))
        return true;
  return false;
}

// No conformity gap: every face of an active tet is shared by another active tet, lies on the
// boundary, or is split into 4 faces of finer active tets whose new nodes are hanging (and those
// finer faces are accounted for by it).
::testing::AssertionResult conforming(const Geometry& g, const ActiveSet& set) {
  const TetHierarchy& h = g.h;
  std::map<Face, int> uses;
  std::map<Face, std::pair<Index, int>> owner;  // a tet with that face, and the corner opposite it
  for (const Index t : set.active_tets())
    for (int opposite = 0; opposite < 4; ++opposite) {
      std::array<Index, 3> f;
      for (int k = 0, j = 0; k < 4; ++k)
        if (k != opposite) f[j++] = h.corners(t)[k];
      const Face face = sorted_face(f[0], f[1], f[2]);
      ++uses[face];
      owner[face] = {t, opposite};
    }
  std::set<Face> inside_split_faces;
  std::vector<Face> unmatched;
  for (const auto& [face, count] : uses) {
    if (count > 2) return ::testing::AssertionFailure() << "face used by " << count << " active tets";
    if (count == 2 || on_box_boundary(g, face)) continue;
    const auto [t, opposite] = owner[face];
    std::array<int, 3> local;
    for (int k = 0, j = 0; k < 4; ++k)
      if (k != opposite) local[j++] = k;
    if (h.level[t] == kMaxLevel) {
      unmatched.push_back(face);
      continue;
    }
    const auto mid = [&](int a, int b) { return h.midpoints[t][edge_index(local[a], local[b])]; };
    const Index m01 = mid(0, 1), m02 = mid(0, 2), m12 = mid(1, 2);
    const Index c0 = h.corners(t)[local[0]], c1 = h.corners(t)[local[1]], c2 = h.corners(t)[local[2]];
    const std::array<Face, 4> quarters = {sorted_face(c0, m01, m02), sorted_face(c1, m01, m12),
                                          sorted_face(c2, m02, m12), sorted_face(m01, m02, m12)};
    if (!std::all_of(quarters.begin(), quarters.end(), [&](const Face& q) { return uses.count(q) > 0; })) {
      unmatched.push_back(face);
      continue;
    }
    for (const Index m : {m01, m02, m12})
      if (set.status(m) != NodeStatus::Hanging)
        return ::testing::AssertionFailure() << "node " << m << " on a split face is not hanging";
    inside_split_faces.insert(quarters.begin(), quarters.end());
  }
  for (const Face& face : unmatched)
    if (inside_split_faces.count(face) == 0)
      return ::testing::AssertionFailure()
             << "face " << face[0] << " " << face[1] << " " << face[2] << " has no match";
  return ::testing::AssertionSuccess();
}

// A random active tet: descend from a random level-0 tet through random children until active.
Index random_active_tet(const ActiveSet& set, std::mt19937& rng) {
  const TetHierarchy& h = set.hierarchy();
  Index t = std::uniform_int_distribution<Index>(0, h.level_begin[1] - 1)(rng);
  while (!set.active(t)) t = h.child(t, std::uniform_int_distribution<int>(0, 7)(rng));
  return t;
}

bool all_children_active(const ActiveSet& set, Index p) {
  for (int k = 0; k < 8; ++k)
    if (!set.active(set.hierarchy().child(p, k))) return false;
  return true;
}

// `ops` random active tets, each refined unless it is of the finest level.
void refine_randomly(ActiveSet& set, std::mt19937& rng, int ops) {
  for (int op = 0; op < ops; ++op) {
    const Index t = random_active_tet(set, rng);
    if (set.hierarchy().level[t] < kMaxLevel) set.refine(t);
  }
}

TEST(ActiveSet, StartsWithEveryTetOfMinLevel) {
  const TetHierarchy& h = box().h;
  std::mt19937 rng(1);
  for (int min_level = 0; min_level <= kMaxLevel; ++min_level) {
    const ActiveSet set(h, min_level);
    EXPECT_EQ(set.active_count(), std::size_t(12) << (3 * min_level));
    for (const Index t : set.active_tets()) EXPECT_EQ(h.level[t], min_level);
    EXPECT_TRUE(partitions_the_box(box(), set, 50, rng));
    EXPECT_TRUE(set.balanced());
    EXPECT_TRUE(conforming(box(), set));
    for (std::size_t n = 0; n < h.node_count(); ++n)
      EXPECT_EQ(set.status(static_cast<Index>(n)),
                h.node_level[n] <= min_level ? NodeStatus::Regular : NodeStatus::Inactive);
  }
  EXPECT_THROW(ActiveSet(h, kMaxLevel + 1), Error);
  EXPECT_THROW(ActiveSet(h, -1), Error);
}

TEST(ActiveSet, RefiningALevel2TetRefinesItsCoarseNeighbours) {
  const Geometry& g = box();
  const TetHierarchy& h = g.h;
  ActiveSet set(h);
  const Index root = 3;  // in the first cube; its corner 0 is a lattice vertex shared with the second
  set.refine(root);
  set.refine(h.child(root, 0));
  const Index deep = h.child(h.child(root, 0), 0);
  ASSERT_TRUE(set.balanced());
  ASSERT_TRUE(balanced_by_brute_force(g, set));
  const std::size_t before = set.active_count();

  set.refine(deep);
  EXPECT_FALSE(set.active(deep));
  for (int k = 0; k < 8; ++k) EXPECT_TRUE(set.active(h.child(deep, k)));
  // Balance needed more than deep's 8 children: coarse tets touching them were refined too.
  EXPECT_GT(set.active_count(), before + 7);
  int refined_roots = 0;
  for (Index r = 0; r < h.level_begin[1]; ++r) refined_roots += set.active(r) ? 0 : 1;
  EXPECT_GT(refined_roots, 1);
  EXPECT_TRUE(set.balanced());
  EXPECT_TRUE(balanced_by_brute_force(g, set));
  std::mt19937 rng(2);
  EXPECT_TRUE(partitions_the_box(g, set, 200, rng));
  EXPECT_TRUE(node_status_is_consistent(g, set));
  EXPECT_TRUE(conforming(g, set));
}

TEST(ActiveSet, RandomRefinesAndCoarseningsKeepEveryInvariant) {
  const Geometry& g = box();
  const TetHierarchy& h = g.h;
  ActiveSet set(h);
  std::mt19937 rng(20240611);
  int refines = 0, coarsenings = 0, refused = 0, deepest = 0;
  std::size_t most_hanging = 0, most_masters = 0;
  std::vector<Master> masters;
  for (int op = 0; op < 400; ++op) {
    if (std::bernoulli_distribution(0.5)(rng)) {
      const Index t = random_active_tet(set, rng);
      if (h.level[t] == kMaxLevel) continue;
      set.refine(t);
      ++refines;
    } else {
      const std::vector<Index> candidates = set.coarsening_candidates();
      if (candidates.empty()) continue;
      const Index p = candidates[std::uniform_int_distribution<std::size_t>(0, candidates.size() - 1)(rng)];
      ASSERT_TRUE(all_children_active(set, p));
      // can_coarsen is exactly "the coarsened set is balanced", checked by brute force on a copy.
      ActiveSet coarsened = set;
      coarsened.coarsen(p);
      ASSERT_EQ(set.can_coarsen(p), bool(balanced_by_brute_force(g, coarsened))) << "op " << op;
      if (!set.can_coarsen(p)) {
        ++refused;
        continue;
      }
      set = coarsened;
      ++coarsenings;
    }
    ASSERT_TRUE(set.balanced()) << "op " << op;
    ASSERT_TRUE(balanced_by_brute_force(g, set)) << "op " << op;
    ASSERT_TRUE(partitions_the_box(g, set, op % 10 == 0 ? 100 : 0, rng)) << "op " << op;
    ASSERT_TRUE(node_status_is_consistent(g, set)) << "op " << op;
    if (op % 10 == 0) {
      ASSERT_TRUE(conforming(g, set)) << "op " << op;
    }
    std::size_t hanging = 0;
    for (std::size_t n = 0; n < h.node_count(); ++n) {
      if (set.status(static_cast<Index>(n)) != NodeStatus::Hanging) continue;
      ++hanging;
      set.masters(static_cast<Index>(n), masters);
      most_masters = std::max(most_masters, masters.size());
    }
    most_hanging = std::max(most_hanging, hanging);
    for (const Index a : set.active_tets()) deepest = std::max(deepest, int(h.level[a]));
  }
  // The sequence exercised what it is meant to.
  EXPECT_GT(refines, 50);
  EXPECT_GT(coarsenings, 20);
  EXPECT_GT(refused, 0);
  EXPECT_EQ(deepest, kMaxLevel);
  EXPECT_GT(most_hanging, 0u);
  // Under vertex 2:1 balance both ends of a hanging node's edge are regular (a hanging end would
  // put a tet two levels finer next to the coarse tet holding that end's own edge).
  EXPECT_EQ(most_masters, 2u);
  std::cout << "refines " << refines << ", coarsenings " << coarsenings << ", refused coarsenings " << refused
            << ", most hanging nodes " << most_hanging << ", most masters " << most_masters << "\n";
}

// Issue 34: a rank lists the active tets and coarsening candidates of the roots around its own
// nodes; those are the whole lists' members under those roots, and every root holding one of
// the nodes (as a corner of any tet) is among them.
TEST(ActiveSet, ListsUnderRootsAreTheWholeListsThere) {
  const TetHierarchy& h = box().h;
  ActiveSet set(h);
  std::mt19937 rng(34);
  refine_randomly(set, rng, 60);
  const auto under = [&](const std::vector<Index>& all, const std::vector<Index>& roots) {
    std::vector<Index> kept;
    for (Index t : all)
      if (std::binary_search(roots.begin(), roots.end(), h.root(t))) kept.push_back(t);
    return kept;
  };
  int fewer = 0;
  for (int trial = 0; trial < 20; ++trial) {
    // Some active nodes near a random point, as a rank's own nodes are.
    const Real* centre = h.rest_position(static_cast<Index>(rng() % h.node_count()));
    std::vector<Index> nodes;
    for (std::size_t n = 0; n < h.node_count(); ++n) {
      const Real* x = h.rest_position(static_cast<Index>(n));
      const Real d2 = (x[0] - centre[0]) * (x[0] - centre[0]) + (x[1] - centre[1]) * (x[1] - centre[1]) +
                      (x[2] - centre[2]) * (x[2] - centre[2]);
      if (set.status(static_cast<Index>(n)) != NodeStatus::Inactive && d2 < 0.09 && rng() % 2 == 0)
        nodes.push_back(static_cast<Index>(n));
    }
    const std::vector<Index> roots = roots_around(h, nodes.data(), nodes.size());
    ASSERT_TRUE(std::is_sorted(roots.begin(), roots.end()));
    for (Index t = 0; t < static_cast<Index>(h.tet_count()); ++t)
      for (Index c : h.corners(t))
        if (std::binary_search(nodes.begin(), nodes.end(), c)) {
          EXPECT_TRUE(std::binary_search(roots.begin(), roots.end(), h.root(t))) << "tet " << t;
        }
    EXPECT_EQ(set.active_tets(roots), under(set.active_tets(), roots));
    EXPECT_EQ(set.coarsening_candidates(roots), under(set.coarsening_candidates(), roots));
    fewer += roots.size() < static_cast<std::size_t>(h.level_begin[1]);
  }
  EXPECT_GT(fewer, 10);  // not simply every root
  std::cout << fewer << " of 20 node sets around fewer than every root\n";
  EXPECT_TRUE(roots_around(h, nullptr, 0).empty());
}

TEST(ActiveSet, ApplyRefinesMarkedTetsAndCoarsensUntouchedParents) {
  const TetHierarchy& h = box().h;
  const Index r = 5;
  ActiveSet set(h);
  auto changes = set.apply({r}, {});
  EXPECT_EQ(changes.refined, std::vector<Index>{r});
  EXPECT_TRUE(changes.coarsened.empty());
  EXPECT_FALSE(set.active(r));
  EXPECT_EQ(set.coarsening_candidates(), std::vector<Index>{r});

  changes = set.apply({}, {r});
  EXPECT_EQ(changes.coarsened, std::vector<Index>{r});
  EXPECT_TRUE(set.active(r));
  EXPECT_EQ(set.active_count(), 12u);
  EXPECT_TRUE(set.coarsening_candidates().empty());

  // A parent listed for coarsening whose child is refined in the same step stays refined.
  set.apply({r}, {});
  changes = set.apply({h.child(r, 2)}, {r});
  EXPECT_EQ(changes.refined.back(), h.child(r, 2));
  EXPECT_TRUE(changes.coarsened.empty());
  EXPECT_FALSE(set.active(r));
  EXPECT_FALSE(set.active(h.child(r, 2)));
  EXPECT_TRUE(set.balanced());
}

TEST(ActiveSet, NoTetChangesLevelTwiceInOneStep) {
  const TetHierarchy& h = box().h;
  const Index r = 7;
  {
    ActiveSet set(h);  // refined and listed for coarsening: stays refined
    const auto changes = set.apply({r}, {r});
    EXPECT_TRUE(changes.coarsened.empty());
    EXPECT_FALSE(set.active(r));
  }
  {
    ActiveSet set(h);  // a child created by an earlier mark is not refined again
    const auto changes = set.apply({r, h.child(r, 1)}, {});
    EXPECT_EQ(changes.refined, std::vector<Index>{r});
    EXPECT_TRUE(set.active(h.child(r, 1)));
  }
  {
    ActiveSet set(h);  // parent and grandparent listed: only the parent coarsens
    set.refine(r);
    set.refine(h.child(r, 4));
    const auto changes = set.apply({}, {r, h.child(r, 4)});
    EXPECT_EQ(changes.coarsened, std::vector<Index>{h.child(r, 4)});
    EXPECT_FALSE(set.active(r));
    EXPECT_TRUE(set.active(h.child(r, 4)));
  }
  {
    // A tet refined only for balance and listed for coarsening stays refined.
    ActiveSet set(h);
    set.refine(r);
    set.refine(h.child(r, 0));
    const ActiveSet before = set;
    const auto changes = set.apply({h.child(h.child(r, 0), 0)}, before.coarsening_candidates());
    ASSERT_GT(changes.refined.size(), 1u);
    for (const Index t : changes.refined) EXPECT_FALSE(set.active(t));
    EXPECT_TRUE(changes.coarsened.empty());
  }
  // Random steps: every active tet after a step was active before, or is a child of one, or is
  // the parent of 8 that were.
  ActiveSet set(h);
  std::mt19937 rng(7);
  int level_changes = 0;
  for (int step = 0; step < 60; ++step) {
    const ActiveSet before = set;
    std::vector<Index> refine_marks, coarsen_marks;
    for (int k = 0; k < 3; ++k) refine_marks.push_back(random_active_tet(set, rng));
    for (const Index p : set.coarsening_candidates())
      if (std::bernoulli_distribution(0.7)(rng)) coarsen_marks.push_back(p);
    for (const Index t : refine_marks)  // also list the marked tets' parents and themselves
      coarsen_marks.insert(coarsen_marks.end(), {t, h.parent(t)});
    const auto changes = set.apply(refine_marks, coarsen_marks);
    level_changes += int(changes.refined.size() + changes.coarsened.size());
    for (const Index t : set.active_tets()) {
      const bool kept = before.active(t);
      const bool refined_once = h.parent(t) >= 0 && before.active(h.parent(t));
      const bool coarsened_once = h.level[t] < kMaxLevel && all_children_active(before, t);
      ASSERT_TRUE(kept || refined_once || coarsened_once) << "step " << step << " tet " << t;
    }
    for (const Index t : before.active_tets())
      ASSERT_TRUE(set.active(t) || (h.parent(t) >= 0 && set.active(h.parent(t))) ||
                  (h.level[t] < kMaxLevel && all_children_active(set, t)))
          << "step " << step << " tet " << t;
    ASSERT_TRUE(set.balanced());
    ASSERT_TRUE(balanced_by_brute_force(box(), set));
  }
  EXPECT_GT(level_changes, 60);
}

TEST(ActiveSet, CoarseningStopsAtMinLevel) {
  const TetHierarchy& h = box().h;
  ActiveSet set(h, 1);
  EXPECT_EQ(set.coarsening_candidates().size(), 12u);  // the level-0 tets, all with 8 active children
  EXPECT_FALSE(set.can_coarsen(0));
  EXPECT_TRUE(set.apply({}, set.coarsening_candidates()).coarsened.empty());
  std::mt19937 rng(3);
  int coarsenings = 0;
  for (int step = 0; step < 40; ++step) {
    const std::vector<Index> marks = {random_active_tet(set, rng)};
    coarsenings += int(set.apply(step % 2 == 0 ? marks : std::vector<Index>{}, set.coarsening_candidates())
                           .coarsened.size());
    for (const Index t : set.active_tets()) ASSERT_GE(h.level[t], 1);
  }
  EXPECT_GT(coarsenings, 0);
}

TEST(ActiveSet, CheckpointRoundTripsAndRejectsInvalidSets) {
  const TetHierarchy& h = box().h;
  ActiveSet set(h);
  std::mt19937 rng(11);
  refine_randomly(set, rng, 40);
  const std::vector<Index> tets = set.active_tets();
  ASSERT_TRUE(std::is_sorted(tets.begin(), tets.end()));
  const ActiveSet restored(h, tets);
  EXPECT_EQ(restored.active_tets(), tets);
  for (std::size_t n = 0; n < h.node_count(); ++n)
    EXPECT_EQ(restored.status(static_cast<Index>(n)), set.status(static_cast<Index>(n)));

  std::vector<Index> overlapping = tets;
  overlapping.push_back(h.parent(tets.back()));
  EXPECT_THROW(ActiveSet(h, overlapping), Error);
  std::vector<Index> twice = tets;
  twice.push_back(tets.front());
  EXPECT_THROW(ActiveSet(h, twice), Error);
  const std::vector<Index> not_covering(tets.begin() + 1, tets.end());
  EXPECT_THROW(ActiveSet(h, not_covering), Error);
  EXPECT_THROW(ActiveSet(h, std::vector<Index>{Index(h.tet_count())}), Error);
  EXPECT_THROW(ActiveSet(h, ActiveSet(h).active_tets(), 1), Error);  // level 0 is below min_level 1

  // Root r refined, its child 0 refined again, every other level-0 tet kept: child 0's
  // grandchildren touch level-0 tets at r's corner 0, a lattice vertex other tets share.
  const Index r = 3;
  std::vector<Index> unbalanced;
  for (Index t = 0; t < h.level_begin[1]; ++t)
    if (t != r) unbalanced.push_back(t);
  for (int k = 1; k < 8; ++k) unbalanced.push_back(h.child(r, k));
  for (int k = 0; k < 8; ++k) unbalanced.push_back(h.child(h.child(r, 0), k));
  EXPECT_THROW(ActiveSet(h, unbalanced), Error);
}

}  // namespace
}  // namespace nendo::fem
