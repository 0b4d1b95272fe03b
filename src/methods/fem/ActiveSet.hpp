#pragma once
// Which tets of the hierarchy are simulated (spec 004 §6.3): refine and coarsen with 2:1 vertex
// balance, node status (REGULAR / HANGING / INACTIVE) from per-edge use counts, and the masters of
// hanging nodes. A pure function of the decisions it is given: a rank keeps the roots near its
// nodes up to date by applying its neighbours' decisions and taking their roots' states
// (HierarchicalFem), the rest of its copy may be out of date.
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "methods/fem/TetHierarchy.hpp"

namespace nendo::fem {

enum class NodeStatus : std::uint8_t { Inactive = 0, Regular = 1, Hanging = 2 };

// A node weight pair of a hanging node's flattened masters.
struct Master {
  Index node;
  Real weight;
};

class ActiveSet {
 public:
  // All level-0 tets active, then every tet refined down to min_level.
  ActiveSet(const TetHierarchy& h, int min_level = 0);
  // From a checkpoint: exactly these tets active (validated: a partition of the level-0 tets
  // into leaves, 2:1 balanced); throws nendo::Error otherwise.
  ActiveSet(const TetHierarchy& h, const std::vector<Index>& active, int min_level = 0);

  const TetHierarchy& hierarchy() const { return *h_; }
  bool active(Index t) const { return active_[t] != 0; }
  std::vector<Index> active_tets() const;  // increasing
  // Those under the given roots (increasing level-0 tets): what a rank reads of its nodes' roots,
  // at a cost that follows them, not the whole hierarchy.
  std::vector<Index> active_tets(const std::vector<Index>& roots) const;
  std::size_t active_count() const { return active_count_; }
  NodeStatus status(Index n) const;
  // Masters of node n flattened to regular nodes, in increasing node order, weights summing to 1;
  // a regular node is its own single master.
  void masters(Index n, std::vector<Master>& out) const;

  // Spec §6.3 refine(T): 2:1 balance first (recursively), then T → its 8 children. T active,
  // level(T) < max_level.
  void refine(Index t);
  // Whether parent P may be coarsened: all 8 children active, level(P) ≥ min_level, and balance
  // holds afterwards (spec §6.3 coarsen(P) 1).
  bool can_coarsen(Index parent) const;
  void coarsen(Index parent);  // precondition: can_coarsen(parent)

  // One step of spec §6.2 1b-1c: refine the `refine` tets (in increasing order, skipping any not
  // active before the step or no longer active), then coarsen the `coarsen` parents (increasing
  // order) that were not touched by the refinements and still can be. The lists are what the
  // predicates said on the state before. `refined` lists every tet refined, balance refinements
  // included, in the order they happened; `coarsened` lists the parents coarsened, increasing.
  struct StepChanges {
    std::vector<Index> refined, coarsened;
    std::map<Index, std::vector<Index>> before;  // each root whose tets changed: its active tets before
  };
  StepChanges apply(const std::vector<Index>& refine, const std::vector<Index>& coarsen);
  // Parents whose 8 children are all active (the coarsening candidates of spec §6.2 1c).
  std::vector<Index> coarsening_candidates() const;
  std::vector<Index> coarsening_candidates(const std::vector<Index>& roots) const;  // under roots

  // The active tets under root r become `active` (tets under r that partition it): a rank that
  // keeps only the roots near its nodes up to date takes a root's state from the rank that owns
  // it (issue 34).
  void set_root(Index root, const std::vector<Index>& active);

  // Invariants for tests: every two active tets that share a vertex differ by at most one level.
  bool balanced() const;

 private:
  struct Empty {};
  ActiveSet(const TetHierarchy& h, int min_level, Empty);  // no tet active yet
  void activate(Index t, int sign);
  std::vector<Index> active_under(const std::vector<Index>* roots) const;  // every root if none
  std::vector<Index> candidates_under(const std::vector<Index>* roots) const;
  const TetHierarchy* h_;
  int min_level_;
  std::vector<std::uint8_t> active_;
  std::vector<std::int32_t> corner_uses_;  // per node: active tets with it as a corner
  std::vector<std::int32_t> edge_uses_;    // per node ≥ level 1: active tets containing its parent edge
  std::size_t active_count_ = 0;
  std::vector<Index>* refine_log_ = nullptr;  // set by apply(): refine() records each tet it refines
  std::map<Index, std::vector<Index>>* before_ = nullptr;  // set by apply(): activate() records roots
};

}  // namespace nendo::fem
