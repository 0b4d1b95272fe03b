#include "methods/fem/ActiveSet.hpp"

#include <algorithm>
#include <string>

#include "core/Error.hpp"

namespace nendo::fem {
namespace {

// The active strict ancestor of t, or -1. Since the active tets partition the level-0 tets, at
// most one tet on the path from t to its root is active.
Index active_strict_ancestor(const ActiveSet& set, Index t) {
  const TetHierarchy& h = set.hierarchy();
  for (Index a = h.parent(t); a >= 0; a = h.parent(a))
    if (set.active(a)) return a;
  return -1;
}

// Neither active nor covered by an active ancestor: t's region is covered by active strict
// descendants.
bool is_refined(const ActiveSet& set, Index t) {
  return !set.active(t) && active_strict_ancestor(set, t) < 0;
}

// The refined tets, increasing. Breadth-first from the level-0 tets through the refined ones only,
// so the cost is O(active tets), and each level's tets come out in increasing order after the
// previous level's.
// Calls visit(r) for the given roots, or for every level-0 tet if none are given.
template <class Visit>
void for_each_root(const TetHierarchy& h, const std::vector<Index>* roots, Visit&& visit) {
  if (roots) {
    for (Index t : *roots) visit(t);
  } else {
    for (Index t = h.level_begin[0]; t < h.level_begin[1]; ++t) visit(t);
  }
}

// Under the given roots only, if any are given.
std::vector<Index> refined_tets(const ActiveSet& set, const std::vector<Index>* roots = nullptr) {
  const TetHierarchy& h = set.hierarchy();
  std::vector<Index> refined;
  for_each_root(h, roots, [&](Index t) {
    if (!set.active(t)) refined.push_back(t);
  });
  for (std::size_t i = 0; i < refined.size(); ++i) {
    if (h.level[refined[i]] == h.max_level) continue;  // only in an invalid state
    for (int k = 0; k < 8; ++k)
      if (!set.active(h.child(refined[i], k))) refined.push_back(h.child(refined[i], k));
  }
  return refined;
}

bool all_children_active(const ActiveSet& set, Index parent) {
  const TetHierarchy& h = set.hierarchy();
  if (h.level[parent] >= h.max_level) return false;
  for (int k = 0; k < 8; ++k)
    if (!set.active(h.child(parent, k))) return false;
  return true;
}

void append_masters(const ActiveSet& set, Index n, Real weight, std::vector<Master>& out) {
  if (set.status(n) != NodeStatus::Hanging) {
    out.push_back({n, weight});
    return;
  }
  const auto& edge = set.hierarchy().node_edge[n];
  append_masters(set, edge[0], weight / 2, out);
  append_masters(set, edge[1], weight / 2, out);
}

void check_min_level(const TetHierarchy& h, int min_level) {
  if (min_level < 0 || min_level > h.max_level)
    throw Error("ActiveSet: min_level " + std::to_string(min_level) +
                " is outside the hierarchy's levels 0.." + std::to_string(h.max_level));
}

// Each checkpoint tet is a tet of the hierarchy, of level ≥ min_level, listed once; marks them.
void mark_checkpoint_tets(const TetHierarchy& h, const std::vector<Index>& tets, int min_level,
                          std::vector<std::uint8_t>& marked) {
  for (const Index t : tets) {
    if (t < 0 || static_cast<std::size_t>(t) >= h.tet_count())
      throw InputError("active-set checkpoint: tet " + std::to_string(t) +
                       " is not a tet of the hierarchy (" + std::to_string(h.tet_count()) + " tets)");
    if (h.level[t] < min_level)
      throw InputError("active-set checkpoint: tet " + std::to_string(t) + " has level " +
                       std::to_string(h.level[t]) + ", below min_level " + std::to_string(min_level));
    if (marked[t]) throw InputError("active-set checkpoint: tet " + std::to_string(t) + " is listed twice");
    marked[t] = 1;
  }
}

// No checkpoint tet lies inside another, and each level-0 tet is covered completely. Without
// overlaps the leaves are disjoint, so counting finest-level tets per root proves the cover.
void check_partition(const TetHierarchy& h, const std::vector<Index>& tets,
                     const std::vector<std::uint8_t>& marked) {
  const int finest_shift = 3 * h.max_level;
  std::vector<std::uint64_t> finest_tets(static_cast<std::size_t>(h.level_begin[1]), 0);
  for (const Index t : tets) {
    for (Index a = h.parent(t); a >= 0; a = h.parent(a))
      if (marked[a])
        throw InputError("active-set checkpoint: tets overlap (tet " + std::to_string(t) +
                         " lies inside tet " + std::to_string(a) + ")");
    finest_tets[h.root(t)] += std::uint64_t{1} << (finest_shift - 3 * h.level[t]);
  }
  for (Index r = 0; r < h.level_begin[1]; ++r)
    if (finest_tets[r] != std::uint64_t{1} << finest_shift)
      throw InputError("active-set checkpoint: level-0 tet " + std::to_string(r) +
                       " is not covered completely");
}

}  // namespace

ActiveSet::ActiveSet(const TetHierarchy& h, int min_level, Empty)
    : h_(&h),
      min_level_(min_level),
      active_(h.tet_count(), 0),
      corner_uses_(h.node_count(), 0),
      edge_uses_(h.node_count(), 0) {
  check_min_level(h, min_level);
}

ActiveSet::ActiveSet(const TetHierarchy& h, int min_level) : ActiveSet(h, min_level, Empty{}) {
  // Refining every tet down to min_level activates exactly the tets of min_level.
  for (Index t = h.level_begin[min_level]; t < h.level_begin[min_level + 1]; ++t) activate(t, +1);
}

ActiveSet::ActiveSet(const TetHierarchy& h, const std::vector<Index>& active, int min_level)
    : ActiveSet(h, min_level, Empty{}) {
  mark_checkpoint_tets(h, active, min_level, active_);
  check_partition(h, active, active_);
  std::fill(active_.begin(), active_.end(), 0);
  for (const Index t : active) activate(t, +1);
  if (!balanced()) throw InputError("active-set checkpoint: the tets are not 2:1 balanced (spec 004 §6.3)");
}

std::vector<Index> ActiveSet::active_tets() const { return active_under(nullptr); }

std::vector<Index> ActiveSet::active_tets(const std::vector<Index>& roots) const {
  return active_under(&roots);
}

std::vector<Index> ActiveSet::active_under(const std::vector<Index>* roots) const {
  std::vector<Index> tets;
  if (!roots) tets.reserve(active_count_);
  for_each_root(*h_, roots, [&](Index t) {
    if (active(t)) tets.push_back(t);
  });
  for (const Index p : refined_tets(*this, roots)) {
    if (h_->level[p] == h_->max_level) continue;
    for (int k = 0; k < 8; ++k)
      if (active(h_->child(p, k))) tets.push_back(h_->child(p, k));
  }
  return tets;
}

NodeStatus ActiveSet::status(Index n) const {
  if (corner_uses_[n] == 0) return NodeStatus::Inactive;
  return edge_uses_[n] > 0 ? NodeStatus::Hanging : NodeStatus::Regular;
}

void ActiveSet::masters(Index n, std::vector<Master>& out) const {
  out.clear();
  append_masters(*this, n, 1, out);
  std::sort(out.begin(), out.end(), [](const Master& a, const Master& b) { return a.node < b.node; });
  std::size_t merged = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (merged > 0 && out[merged - 1].node == out[i].node)
      out[merged - 1].weight += out[i].weight;
    else
      out[merged++] = out[i];
  }
  out.resize(merged);
}

void ActiveSet::refine(Index t) {
  if (!active(t) || h_->level[t] >= h_->max_level)
    throw Error("ActiveSet::refine: tet " + std::to_string(t) +
                " is not an active tet below the finest level");
  // Spec §6.3 refine(T) 1: every same-level tet touching T must be active or refined before T's
  // children appear. A coarse cover, once refined, may leave a child of it still covering the
  // neighbour, hence the loop; refine(a) balances a's own neighbourhood first.
  h_->for_each_neighbour(t, [&](Index neighbour) {
    for (Index a = active_strict_ancestor(*this, neighbour); a >= 0;
         a = active_strict_ancestor(*this, neighbour))
      refine(a);
    return true;
  });
  activate(t, -1);
  for (int k = 0; k < 8; ++k) activate(h_->child(t, k), +1);
  if (refine_log_ != nullptr) refine_log_->push_back(t);
}

bool ActiveSet::can_coarsen(Index parent) const {
  if (parent < 0 || static_cast<std::size_t>(parent) >= h_->tet_count()) return false;
  if (h_->level[parent] < min_level_ || !all_children_active(*this, parent)) return false;
  // Spec §6.3 coarsen(P) 1: no tet touching a child may be refined, or it would touch P two levels
  // finer. A finest child's neighbours are finest and never refined: the hierarchy lists none.
  for (int k = 0; k < 8; ++k) {
    const Index c = h_->child(parent, k);
    if (!h_->for_each_neighbour(c, [&](Index s) { return !is_refined(*this, s); })) return false;
  }
  return true;
}

void ActiveSet::coarsen(Index parent) {
  if (parent < 0 || static_cast<std::size_t>(parent) >= h_->tet_count() ||
      !all_children_active(*this, parent))
    throw Error("ActiveSet::coarsen: tet " + std::to_string(parent) + " does not have 8 active children");
  for (int k = 0; k < 8; ++k) activate(h_->child(parent, k), -1);
  activate(parent, +1);
}

ActiveSet::StepChanges ActiveSet::apply(const std::vector<Index>& refine_marks,
                                        const std::vector<Index>& coarsen_marks) {
  StepChanges changes;
  // Only tets active before the step are refined: a child created by an earlier mark keeps its level.
  std::vector<Index> marks;
  for (const Index t : refine_marks)
    if (t >= 0 && static_cast<std::size_t>(t) < h_->tet_count() && active(t) && h_->level[t] < h_->max_level)
      marks.push_back(t);
  std::sort(marks.begin(), marks.end());
  marks.erase(std::unique(marks.begin(), marks.end()), marks.end());
  refine_log_ = &changes.refined;
  before_ = &changes.before;
  for (const Index t : marks)
    if (active(t)) refine(t);  // an earlier mark's balance refinements may have refined t already
  refine_log_ = nullptr;

  // No tet changes level twice in one step: a parent that was refined, created, or had a child
  // refined in this step stays as it is.
  std::vector<Index> refined = changes.refined;
  std::sort(refined.begin(), refined.end());
  const auto was_refined = [&](Index t) {
    return t >= 0 && std::binary_search(refined.begin(), refined.end(), t);
  };
  const auto touched = [&](Index p) {
    if (was_refined(p) || was_refined(h_->parent(p))) return true;
    for (int k = 0; k < 8; ++k)
      if (was_refined(h_->child(p, k))) return true;
    return false;
  };
  marks = coarsen_marks;
  std::sort(marks.begin(), marks.end());
  marks.erase(std::unique(marks.begin(), marks.end()), marks.end());
  for (const Index p : marks) {
    if (!can_coarsen(p) || touched(p)) continue;
    coarsen(p);
    changes.coarsened.push_back(p);
  }
  before_ = nullptr;
  return changes;
}

std::vector<Index> ActiveSet::coarsening_candidates() const { return candidates_under(nullptr); }

std::vector<Index> ActiveSet::coarsening_candidates(const std::vector<Index>& roots) const {
  return candidates_under(&roots);
}

std::vector<Index> ActiveSet::candidates_under(const std::vector<Index>* roots) const {
  std::vector<Index> candidates;
  for (const Index p : refined_tets(*this, roots))
    if (all_children_active(*this, p)) candidates.push_back(p);
  return candidates;
}

bool ActiveSet::balanced() const {
  // Equivalent to "active tets that touch differ by at most one level": an active tet of level
  // ≤ l − 1 touching a refined tet P of level l touches one of P's active descendants, of level
  // ≥ l + 1, at the shared vertex.
  for (const Index p : refined_tets(*this)) {
    if (h_->level[p] == 0) continue;
    if (!h_->for_each_neighbour(p, [&](Index s) { return active_strict_ancestor(*this, s) < 0; }))
      return false;
  }
  return true;
}

void ActiveSet::set_root(Index root, const std::vector<Index>& active) {
  for (const Index t : active_tets({root})) activate(t, -1);
  for (const Index t : active) activate(t, +1);
}

void ActiveSet::activate(Index t, int sign) {
  if (before_ != nullptr) {
    const Index root = h_->root(t);
    if (before_->count(root) == 0) (*before_)[root] = active_tets({root});
  }
  active_[t] = sign > 0 ? 1 : 0;
  active_count_ = static_cast<std::size_t>(static_cast<std::ptrdiff_t>(active_count_) + sign);
  for (const Index n : h_->corners(t)) corner_uses_[n] += sign;
  // Spec §6.3 hanging rule: an active tet of level l holds its 6 edges, so their midpoints hang
  // wherever a finer tet uses them.
  if (h_->level[t] < h_->max_level)
    for (const Index m : h_->midpoints[t]) edge_uses_[m] += sign;
}

}  // namespace nendo::fem
