#pragma once
// Hierarchical tetrahedral FEM with level selection (Imai, Yue, Chen, Nishita; spec 004) on the
// O'Brien & Hodgins element (StvkElement.hpp). The nodes of the active tets are the particles of
// the spine (id = hierarchy node number), so migration, the halo, output and checkpoints carry
// them. Each rank holds the model (hierarchy, constants) and the active set of the level-0 tets
// ("roots") around its owned nodes, a ring beyond, the balance reach beyond that and a ring of
// slack, numbered locally; ids on particles and in messages are global (issue 34). The model is
// built again, collectively, when a rank's nodes outgrow it. A root's state is its owner's, the
// rank that owns the particle of its corner 0.
// A step:
//   view       owned nodes, then the halo copies; roots newly around them taken from neighbours;
//              hanging nodes put on their masters (§6.2 2)
//   select     each rank tests the tets whose corner 0 it owns (refine: §4.4 cond(T, 1) fails or
//              the strain-recovery error exceeds τ_err; coarsen: cond(P, κ_c), agree(c, P) and the
//              error below τ_err / 4); the marks go to the neighbouring ranks, each applies its
//              own and theirs to its copy of the active set (§6.3) and then takes the state of
//              every root it does not own from its owner; new nodes are made at their parent
//              edge's midpoint by the owner of the edge's first node, unused ones removed
//   forces     each owned regular node sums, in (tet, corner) order, its active tets' forces and
//              its share of its hanging neighbours' (§6.2 3, 4): tets at a rank boundary are
//              computed on both sides, no reverse sum, so results are bitwise the same on any
//              rank count
//   integrate  symplectic Euler with gravity and mass damping, colliders (§6.2 5)
//   migrate
#include <map>
#include <memory>
#include <vector>

#include "colliders/Collider.hpp"
#include "decomposition/OwnedHaloView.hpp"
#include "decomposition/SparseExchange.hpp"
#include "methods/Method.hpp"
#include "methods/fem/ActiveSet.hpp"
#include "methods/fem/FemModel.hpp"
#include "methods/fem/Level0Roots.hpp"
#include "solvers/NewtonSolver.hpp"

namespace nendo {

namespace fem {
class FemBackwardEuler;
class FemCoarseSpace;
}  // namespace fem

class HierarchicalFem final : public Method {
  friend class fem::FemBackwardEuler;  // reads the view, the incidence and the forces
  friend class fem::FemCoarseSpace;    // reads the view and the needed tets

 public:
  explicit HierarchicalFem(const Scene& scene);
  ~HierarchicalFem() override;
  void register_fields(ParticleSet& particles) const override;
  void seed(MPI_Comm comm, const Scene& scene, ParticleSet& particles) override;
  void initialize(Space& space) override;
  StateRecord save_state() const override;
  void restore(Space& space, const StateRecord& state) override;
  Real stable_dt(const Space& space) const override;
  void advance(Space& space, Real t, Real dt) override;
  GlobalDiagnostics diagnostics(const Space& space) const override;
  std::vector<StageTime> stage_times() const override { return clock_.times(); }
  bool has_mesh() const override { return true; }
  TetMeshView mesh_view(const Space& space) const override;

  const SolverStats* solver_stats() const override { return implicit_ ? &stats_ : nullptr; }
  std::string progress_note() const override;

  // This rank's part of the model, numbered locally (TetHierarchy's global_node, global_tet).
  const fem::FemModel& model() const { return *model_; }
  fem::Index root_count() const { return level0_roots_->root_count(); }  // of the whole mesh
  long model_builds() const { return model_builds_; }                    // on this rank, since it was made
  const fem::Level0Mesh& level0() const { return level0_; }
  // The whole hierarchy, numbered globally, built on this rank: for tests and small tools.
  fem::TetHierarchy whole_hierarchy() const {
    return fem::build_hierarchy(level0_.mesh, model_->hierarchy.max_level);
  }
  // This rank's copy: up to date for the roots around its view (held_roots()), not elsewhere.
  const fem::ActiveSet& active_set() const { return *active_; }
  // The run's active tets, increasing, each from its root's owner. Collective.
  std::vector<fem::Index> active_tets() const;
  std::size_t held_roots() const;                          // roots whose state here is the run's
  Real reach_distance() const { return reach_distance_; }  // of the level changes' exchanges
  long refinements() const { return refinements_; }        // since the start of this run
  long coarsenings() const { return coarsenings_; }

 private:
  // The roots (global, increasing) that owned nodes `ids` need held: those that may hold them, a
  // ring beyond (the corners of their tets and those corners' statuses) and, when adaptive,
  // hold_rings_ beyond that; every root with fem.model: whole.
  std::vector<fem::Index> roots_needed(const ParticleId* ids, std::size_t count) const;
  // Collective: if on any rank the model lacks a root of `needs`, every rank builds it again
  // (rebuild: its needs, a ring of slack and the roots it answers for, keeping their states).
  void cover(MPI_Comm comm, const std::vector<fem::Index>& needs);
  bool outgrown(const std::vector<fem::Index>& needs) const;          // the model lacks one of them
  void rebuild(MPI_Comm comm, const std::vector<fem::Index>& needs);  // collective
  void build_model(MPI_Comm comm, const std::vector<fem::Index>& roots);
  void make_level0(MPI_Comm comm);  // level0_ and level0_roots_ (collective)
  void hold_needs();                // want_roots(needs_, drop) for the view they were found for
  void locate_view();               // view_node_ and slot_ of the view's entries
  std::vector<fem::Index> global_tets(const std::vector<fem::Index>& local) const;
  std::vector<fem::Index> local_tets(const std::vector<fem::Index>& global) const;  // held ones
  void gather_view(Space& space);
  void place_hanging_nodes();
  void interpolate_hanging(std::vector<Real>& values, int components = 3) const;
  bool select_levels(Space& space);
  void recover_strains(Space& space);
  const Real* needed_strain(std::size_t i);  // recover_strains' and measure_stretch's cache
  void measure_stretch();
  void mark(std::vector<fem::Index>& refine, std::vector<fem::Index>& coarsen);
  void check_reach(MPI_Comm comm, const char* what, int* any = nullptr, int* stretched = nullptr);
  void widen_reach(const Space& space);  // collective: to the largest stretch_ of any rank
  using RootStates = std::map<fem::Index, std::vector<fem::Index>>;  // root → its active tets
  void apply_changes(Space& space, const RootStates& changed);
  // Issue 34: the roots around these nodes and hold_rings_ beyond are to be kept up to date;
  // want_roots lists those that are not (wanted_), fetch_wanted takes them from the neighbours,
  // and the others are dropped if `drop`.
  void start_exchanges(Space& space);
  void want_roots(const std::vector<fem::Index>& needs, bool drop);  // local
  void fetch_wanted();                                               // collective
  void drop_unheld();  // after a fetch: the roots want_roots did not find
  void find_hanging();
  void update_neighbours(const Space& space);
  bool owns_root(fem::Index root) const;  // the view owns the particle of its corner 0
  void exchange_marks(std::vector<fem::Index>& refine, std::vector<fem::Index>& coarsen);
  // After apply(): each changed root's owner sends its state to the neighbours; a root not owned
  // here takes it, or goes back to its state before the step. Returns the roots that changed,
  // with their states before the step.
  RootStates settle_roots(fem::ActiveSet::StepChanges& changes);
  void refresh_status(const std::vector<fem::Index>& tets);
  void build_incidence(Space& space);
  // Element forces at the view positions x (and velocities v, for viscosity) into force_.
  void compute_forces(const std::vector<Real>& x, const std::vector<Real>& v);
  void solve_implicit(Space& space, Real t, Real dt);  // FemBackwardEuler.cpp
  void integrate(Space& space, Real t, Real dt);
  void collide(Space& space, Real t, Real dt);
  void follow_masters(Space& space);
  Real kinetic_energy(const Space& space) const;
  // Corner positions (and velocities) of a tet from the view; false if a corner is not here.
  bool gather_corners(fem::Index t, Real (&x)[4][3]) const;
  fem::RestShape rest_shape(fem::Index t) const;  // a needed tet's, else computed

  Scene scene_;
  fem::Level0Mesh level0_;                          // the whole level-0 mesh, on every rank
  std::unique_ptr<fem::Level0Roots> level0_roots_;  // and its roots around its vertices
  std::unique_ptr<fem::FemModel> model_;
  long model_builds_ = 0;
  Real stable_dt_ = 0;                       // the first build's
  std::vector<fem::Index> restored_active_;  // a checkpoint's active tets (global), until the model is built
  bool restored_ = false;
  std::vector<fem::Index> needs_;  // roots_needed() of the view, for the view ids hashed to needs_for_
  std::uint64_t needs_for_ = 0;
  bool needs_known_ = false;
  bool outgrown_ = false;  // the view's needs are not all in the model: check_reach builds it again
  std::unique_ptr<fem::ActiveSet> active_;
  std::vector<fem::NodeStatus> status_;  // per node, what the particles were made for
  ColliderSet colliders_;
  Vec3 gravity_;
  bool adaptive_ = false;  // max_level > min_level
  bool implicit_ = false;  // time.integrator: implicit (backward Euler, FemBackwardEuler.hpp)
  std::unique_ptr<NewtonSolver> newton_;
  SolverStats stats_;
  StageClock clock_;
  long refinements_ = 0, coarsenings_ = 0;
  Real level_energy_change_ = 0;  // kinetic energy the level changes added (spec §10 C9), summed

  // The view: owned particles, then the halo copies, then the nodes made in this step
  // (apply_changes) until the view is gathered again; slot_[node] is a node's index or −1, and
  // view_node_[i] entry i's local node number (−1: a halo copy beyond the model, not read).
  OwnedHaloView view_;
  std::vector<fem::Index> view_node_;
  std::uint64_t located_for_ = 0;  // a hash of the ids, in order, view_node_ was found for
  bool located_ = false;
  std::vector<fem::Index> made_in_view_;
  std::vector<Real> x_, v_;
  std::vector<std::int32_t> slot_;
  std::vector<fem::Index> hanging_;           // hanging nodes in the view
  std::vector<fem::Master> hanging_masters_;  // their two masters each
  // Incidence of owned nodes (CSR over owned particles): (needed tet, corner, weight), built when
  // the view's ids or the active set changed.
  bool topology_changed_ = true;
  std::vector<ParticleId> incidence_built_for_;
  std::size_t incidence_built_own_ = 0;
  std::uint64_t layout_ = 0;  // counts incidence rebuilds: the implicit system's layout
  std::vector<std::uint32_t> incidence_offset_;
  std::vector<std::uint32_t> incidence_corner_;  // 4 × needed tet index + corner
  std::vector<Real> incidence_weight_;
  std::vector<fem::Index> roots_;            // the level-0 tets that may hold owned nodes
  std::vector<fem::Index> needed_;           // active tets touching owned nodes, increasing
  std::vector<std::int32_t> needed_slots_;   // 4 view slots per needed tet
  std::vector<fem::RestShape> needed_rest_;  // per needed tet
  std::vector<Real> tet_forces_;             // 12 per needed tet
  std::vector<Real> force_;                  // 3 per owned particle
  std::vector<Real> energies_;               // of the tets whose corner 0 is owned here (summed reproducibly)
  std::vector<Real> tet_strains_;            // 6 per needed tet: its Green strain (Voigt), if strain_known_
  std::vector<std::uint8_t> strain_known_;   // per needed tet: recover_strains computed it
  std::vector<Real> recovered_;              // 6 per view entry: the recovered Green strain (Voigt)
  long beyond_ = 0;  // data this rank needed and did not have, since the last check_reach                 //
                     // of the tets whose corner 0 is owned here

  // The level changes' exchanges (issue 34): the ranks within reach of this rank's blocks, and per
  // root whether this rank's copy of its state is the run's.
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::unique_ptr<SparseExchange> exchange_;
  std::vector<int> neighbours_;
  std::vector<BlockKey> neighbours_for_;  // the blocks and splitters they were found for
  std::vector<BlockKey> neighbours_splitters_;
  std::vector<std::uint8_t> accurate_;
  std::vector<fem::Index> wanted_;  // roots to take from the neighbours at the next check_reach
  std::uint64_t held_for_ = 0;      // a hash of the set of view ids the held roots were found for
  bool held_known_ = false;
  std::vector<fem::Index> to_hold_;  // found by want_roots, the others dropped by drop_unheld
  bool drop_pending_ = false;
  int hold_rings_ = 0;          // 1 + 2 (max_level − 1): statuses, and balance reached both ways
  Real reach_distance_ = 0;     // (hold_rings_ + 3) longest level-0 edges, stretch_allowance_ times, + a cell
  Real longest_edge_ = 0;       // of the level-0 mesh at rest
  Real stretch_allowance_ = 2;  // the largest stretch the reach holds, raised when a tet exceeds it
  Real stretch_ = 0;            // a bound of the largest stretch of the tets this rank tested

  mutable ParticleSet mesh_vertices_{3};
  mutable std::vector<std::int64_t> mesh_tets_;
  mutable std::vector<TetField> mesh_tet_fields_{{"level", {}}};  // the level of each listed tet
};

}  // namespace nendo
