#pragma once
// Powder by extended position based dynamics with state transitions (Takiguchi and Fujishiro;
// spec 003). Particles flow (the position-based-fluids density constraint) or rest (the same plus
// distance constraints to their resting neighbours: the paper's summed R_i or, by default, pairs
// frozen when they came to rest, §10 B5); they change state once per frame on the density rate
// (rest → flow) and on the speed relative to their neighbours (flow → rest), by default with
// Coulomb's test on the free surface and Coulomb friction between flowing particles (extensions,
// issue 28: heaps stand at arctan μ). Particles closer than Δx are pushed apart (an extension,
// docs/methods/pbd-powder.md). One nendo step is one frame (spec §6):
//   emit            emitters add their particles on the ranks that own them        (§8)
//   substeps        predict (v += Δt_s g, |v| ≤ 0.4 h/Δt_s), neighbours once, then
//                   `iterations` Jacobi rounds: λ and the pair counts (Eq. 4), them to the
//                   halo, Δp (Eqs. 3, 6, contacts, bonds), collisions with Coulomb friction,
//                   p to the halo; the support and friction between particles (one exchange);
//                   v = (p − x)/Δt_s; migration                                   (§6 lines 2-19)
//   transitions     ρ on the end-of-frame positions, Eqs. (8), (9), bonds         (§6 lines 20-28)
// Owned and halo copies predict alike from the same bits, so an iteration needs only the λ and p
// exchanges; neighbour sums run in (cell key, id) order: results are bitwise the same on any
// rank count. The block cell must hold h plus twice the substep drift (grid.dx ≥ 1.8 h).
#include <vector>

#include "colliders/Collider.hpp"
#include "decomposition/OwnedHaloView.hpp"
#include "decomposition/VerletList.hpp"
#include "methods/Method.hpp"
#include "methods/pbd_powder/Emitter.hpp"
#include "methods/pbd_powder/PbdPowderSettings.hpp"
#include "methods/pbd_powder/PowderConstraints.hpp"
#include "methods/pbd_powder/PowderTransitions.hpp"

namespace nendo {

// State counts after the last frame (summed over ranks).
struct PowderCensus {
  std::uint64_t flowing = 0, resting = 0, changed = 0;  // changed: state changes in the frame
};

class PbdPowder final : public Method {
 public:
  static constexpr std::int32_t kFlow = pbd::kFlow, kRest = pbd::kRest;
  static constexpr std::int32_t kNeverChanged = 1 << 30;
  static constexpr int kMaxBonds = 16;     // rest_constraint: pairs
  static constexpr Real kBondReach = 1.5;  // bonds form to resting neighbours this many Δx away
  static constexpr ParticleId kNoBond = ~ParticleId(0);
  static constexpr Real kSurfaceFraction = 0.7;  // rest_when: stopped: see support_of
  static constexpr Real kMaxSkin = 0.3;          // of h: the Verlet lists' skin at most (build_lists)

  explicit PbdPowder(const Scene& scene);
  void register_fields(ParticleSet& particles) const override;
  void seed(MPI_Comm comm, const Scene& scene, ParticleSet& particles) override;
  StateRecord save_state() const override;
  void restore(Space& space, const StateRecord& state) override;
  void advance(Space& space, Real t, Real dt) override;
  GlobalDiagnostics diagnostics(const Space& space) const override;
  std::vector<StageTime> stage_times() const override { return clock_.times(); }
  int derived_field_components(const std::string& name) const override;
  void derive_field(const Space& space, const std::string& name, Real* out) const override;

  const pbd::ConstraintParams& constraints() const { return params_; }
  const pbd::LatticeReference& reference() const { return reference_; }
  const PowderCensus& census() const { return census_; }
  Real speed_threshold() const { return speed_threshold_; }  // τ_v
  const std::vector<pbd::Emitter>& emitters() const { return emitters_; }
  std::uint64_t list_builds() const { return list_builds_; }  // Verlet list builds so far

 private:
  void emit(Space& space, Real t, Real dt);
  bool emission_blocked(const Space& space, const pbd::Emitter& emitter) const;  // §10 B12
  void gather(Space& space);
  void predict(Real dt);
  void neighbours_at(Space& space, std::vector<Real>& at, Real dt);
  Real lists_moved(const Space& space, const std::vector<Real>& at) const;
  void build_lists(Space& space, const std::vector<Real>& at);
  void find_neighbours(const std::vector<Real>& at);
  void substep(Space& space, Real t, Real dt);
  void project_constraints(Space& space, Real t, Real dt);
  void collide(std::size_t i, Real t, Real dt);
  void measure_support(Real dt);
  void particle_friction(Space& space, Real t, Real dt);
  bool measures_support() const { return rule_.rest_when == pbd::RestWhen::kStopped; }
  void update_velocities(Space& space, Real dt);
  void viscosity_and_vorticity(Space& space, Real dt);
  pbd::Support support_of(const Space& space, std::uint32_t i, const std::uint32_t* begin,
                          const std::uint32_t* end, Real dt) const;
  void transitions(Space& space, Real dt);
  void find_bonds(const ParticleSet& owned);              // at a Verlet build
  void select_bonds();                                    // this substep's
  void bond_correction(std::uint32_t i, Real* dp) const;  // §10 B5
  void update_bonds(Space& space);                        // after the transitions

  PbdPowderSettings settings_;
  int dimension_;
  Vec3 gravity_;
  Real radius_;  // particle radius r_p = Δx/2: the collision distance
  Real speed_threshold_;
  pbd::TransitionRule rule_;
  pbd::PowderKernel kernel_;
  pbd::LatticeReference reference_;
  pbd::ConstraintParams params_;
  ColliderSet colliders_;
  std::vector<pbd::Emitter> emitters_;
  std::vector<Real> material_mass_;  // density Δx^D per material
  std::vector<int> emitter_material_;
  PowderCensus census_;
  StageClock clock_;

  // Combined view of one substep: owned particles, then the halo copies; 3 reals per position in
  // 2D too (z = 0).
  OwnedHaloView view_;
  static constexpr int kWeights = 3;  // per particle: λ, contact count, bond count
  std::vector<Real> x_, v_, p_, weights_;
  std::vector<std::int32_t> state_;  // owned
  // Verlet lists of the owned particles (reach h + skin_ at built_at_, kept across substeps and
  // frames while the layout they index is kept, see neighbours_at); this substep's neighbours
  // within h (combined indices, self excluded) lead each row: [near_begin(r), near_end(r)) of owned
  // particle verlet_.row(r).
  VerletList verlet_;
  std::uint64_t verlet_layout_ = ~std::uint64_t(0);  // Space::layout_version() the lists index
  Real skin_ = 0;
  Real step_move_ = 0;  // the farthest move per substep, measured between builds
  int uses_ = 0;        // substeps the lists have served
  bool new_frame_ = true;
  std::vector<Real> built_at_;  // owned positions the Verlet lists were built at
  std::uint64_t list_builds_ = 0;
  std::vector<std::uint32_t> near_count_, far_;
  const std::uint32_t* near_begin(std::size_t r) const { return verlet_.begin(r); }
  const std::uint32_t* near_end(std::size_t r) const { return verlet_.begin(r) + near_count_[r]; }
  std::vector<Real> dp_, dv_, omega_;   // owned, owned, combined
  std::vector<Real> support_, pushed_;  // owned: this substep's support push, the collisions' part of it
  std::vector<Real> friction_;          // combined: friction correction / Σ_j w_ij
  bool pairs_mode_ = false;
  // The bonds of owned particle i (from its Verlet row): partners (combined indices)
  // bond_partner_[bond_offset_[i] .. bond_offset_[i + 1]), bond_length_ alongside; those within h
  // this substep: bond_partner_[active_bond_[active_offset_[i] .. active_offset_[i + 1])].
  std::vector<std::size_t> bond_offset_, active_offset_;
  std::vector<std::uint32_t> active_bond_;
  std::vector<std::uint32_t> bond_partner_;
  std::vector<Real> bond_length_;
};

}  // namespace nendo
