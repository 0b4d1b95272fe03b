#pragma once
// Elastoplastic SPH with slave particles (Saida, Fujisawa, Mikawa 2017; spec 000). Masters carry
// the material (mass, velocity, F_E, F_P, rest volume); slaves, advected with the material, carry
// only a position and are where forces act and velocities are sampled. Both live in one particle
// set ("kind" 0 master, 1 slave) on the spine's blocks, so migration, the particle halo, output and
// checkpoints handle them with no extra code. The step reads like spec §4.3; each stage is one
// function below. The block cell holds the kernel support 2h plus a margin (particles_per_cell ≥
// 3, h = d), so the one-cell halo holds every neighbour of an owned particle. The masters' lists of
// slaves last across steps (a VerletList with a skin), and so does the layout
// (Space::migrate_if_moved): between rebuilds a step refreshes the few halo fields that change.
#include <memory>
#include <string>
#include <vector>

#include "colliders/Collider.hpp"
#include "decomposition/CellList.hpp"
#include "decomposition/OwnedHaloView.hpp"
#include "decomposition/VerletList.hpp"
#include "materials/Materials.hpp"
#include "methods/Method.hpp"
#include "methods/slave_sph/CubicSplineKernel.hpp"
#include "methods/slave_sph/SlaveSphSettings.hpp"

namespace nendo {

class ShellKsp;

// What happened to the slaves in the last step (summed over ranks).
struct SlaveEvents {
  std::uint64_t inserted = 0;
  std::uint64_t deleted = 0;   // crowded (closer than delete_distance h to an older slave)
  std::uint64_t orphaned = 0;  // no master within 2h
};

// Invariants of one step's transfers, measured when probing (tests).
struct TransferProbe {
  Vec3 force_sum{};          // Σ_s f_s, 0 with the zero-sum weights
  Real force_magnitude = 0;  // Σ_s |f_s,x|, the scale of force_sum
  Vec3 slave_momentum{};     // Σ_s m_s v^n_s
  Vec3 splat_momentum{};     // Σ_m m_m v^n_m Σ_s V_s W_sm: equal to slave_momentum
};

class SlaveSph final : public Method {
 public:
  static constexpr int kMaxAdjacent = 8;  // slots of the "adjacent" field; a slot's index names the pair
  static constexpr ParticleId kNone = ~ParticleId(0);
  static constexpr ParticleId kInsertedBit = ParticleId(1) << 63;  // ids of inserted slaves
  enum Kind : std::int32_t { kMaster = 0, kSlave = 1 };

  explicit SlaveSph(const Scene& scene);
  ~SlaveSph() override;
  void register_fields(ParticleSet& particles) const override;
  void initialize(Space& space) override;
  StateRecord save_state() const override;
  void restore(Space& space, const StateRecord& state) override;
  void advance(Space& space, Real t, Real dt) override;
  GlobalDiagnostics diagnostics(const Space& space) const override;
  std::vector<StageTime> stage_times() const override { return clock_.times(); }
  const SolverStats* solver_stats() const override { return &stats_; }

  const SlaveEvents& events() const { return events_; }
  // Tests: measure the transfers' invariants in each step (with β = 0, so that f = m (v* − v)/Δt).
  void probe(bool on) { probe_ = on; }
  const TransferProbe& probe_result() const { return probe_result_; }
  Real max_initial_density() const { return n_max_; }  // n_max of spec §3.11
  Real spacing() const { return d_; }
  const CubicSplineKernel& kernel() const { return kernel_; }
  // A master's share of the slaves' 3×3 diagonal blocks of (15R) (the preconditioner): block entry
  // p = (a, c) ∈ {00, 11, 22, 01, 02, 12} is V⁰ Σ_q form[p][q] S_q with S = (ĝ_0², ĝ_1², ĝ_2²,
  // ĝ_0ĝ_1, ĝ_0ĝ_2, ĝ_1ĝ_2), equal to V⁰ Σ_bd (∂P/∂F)_ab,cd g'_b g'_d with g' = F_Eᵀ ĝ.
  static void block_forms(const ElasticHessian<3>& H, const Mat<3>& F, Real volume, Real form[6][6]);
  std::uint64_t neighbour_rebuilds() const { return rebuilds_; }  // new layouts seen so far

 private:
  // Per-step view of the owned particles followed by the halo copies ("combined" indices): all of
  // it after a new layout, the fields that change within a kept one.
  void gather_local(Space& space);
  void refresh_local(Space& space);
  std::vector<std::string> moving_fields() const;
  void gather_moving_fields();
  void delete_crowded_slaves(Space& space);       // §3.12
  void build_candidates();                        // S0, at a new layout
  void find_neighbours();                         // S0
  void exchange_master_sums(Space& space);        // S0: Σ W, Σ g
  void splat_to_slaves(const Vec3& gravity_dv);   // S0b, S1
  void splat_masses(const std::vector<Real>& v);  // (1R), (2R), (22)
  void interpolated(std::size_t c, Real* v) const;
  void master_stresses();                                      // S3 (τ, Hessians)
  void solve_slave_velocities(Space& space, Real t, Real dt);  // S3-S5
  bool warm_start(Space& space);
  Real cold_residual(Space& space, Real beta_dt2);
  void block_preconditioner(Real beta_dt2);  // the 3×3 diagonal blocks of (15R), inverted
  void apply_block_preconditioner(const Real* r, Real* z) const;
  void update_masters(Space& space, Real t, Real dt);  // S6-S9
  void require_bounded_motion(Space& space, std::uint64_t runaway, Real t) const;
  void advect_slaves(Space& space, Real dt);  // S10
  void insert_slaves(Space& space);           // S11, §3.11
  void remove_dead(Space& space);
  void probe_transfers(Space& space, Real dt);
  void hessian_product(Space& space, Real beta_dt2, const Real* u, Real* y);  // (15R) with (S7)
  bool owned_row(std::size_t r) const { return row_master_[r] < view_.owned(); }
  // Initialisation, spec §4.2.
  void build_adjacency(Space& space);       // I3
  void seed_slaves(Space& space);           // I2
  void compute_rest_volumes(Space& space);  // I4, I5

  bool collide(const Real* x, Real* v, Real t, Real dt) const;
  void find_contacts(Real t, Real dt);
  void project_free(std::size_t i, Real* u) const;
  void held_velocity(std::size_t i, Real* u) const;
  void contact_friction(Space& space, Real beta_dt2, const std::vector<Real>& momentum);
  int material_of(std::size_t c) const;
  Real slave_volume(std::size_t c) const;

  SlaveSphSettings settings_;
  Vec3 gravity_;
  Real d_;  // master spacing
  CubicSplineKernel kernel_;
  std::vector<MpmMaterial> materials_;
  std::vector<Real> densities_;
  bool plastic_;
  Real orphan_mass_;  // ε_m
  // The candidate lists' skin: a layout and its lists are kept while no particle moved more than
  // skin/2 (0.15 h: the cube of the benchmark falling at 0.6 m/s rebuilds every other step, at
  // rest rarely; the candidates are (2.3/2)³ = 1.5 times the pairs).
  Real skin_;
  // The farthest a master may move in one step, (block edge − 2h)/2 − skin/2: with the skin/2 a
  // particle may have moved since the layout, two particles that close in by less stay within each
  // other's halo, which every neighbour search of the step relies on.
  Real max_move_;
  ColliderSet colliders_;
  Real n_max_ = 0;
  std::unique_ptr<ShellKsp> ksp_;  // on the space's communicator, made at the first solve
  MPI_Comm ksp_comm_ = MPI_COMM_NULL;
  bool probe_ = false;
  TransferProbe probe_result_;
  SolverStats stats_;
  SlaveEvents events_;
  StageClock clock_;

  // Combined view (owned then halo), rebuilt every step.
  OwnedHaloView view_;
  std::vector<Real> x_, v_, mass_, volume_, F_, Jp_;
  std::vector<std::int32_t> kind_, material_, body_;
  std::vector<char> alive_;
  CellList cells_;
  // Candidates: each master's slaves within 2h + skin at the last new layout, rows in master id
  // order (a slave's sums over masters then come out in master id order, whenever the list was
  // built and on any rank count).
  VerletList candidates_;
  std::vector<std::uint32_t> candidate_rows_;  // rows of candidates_ in ascending master id
  std::uint64_t layout_ = ~std::uint64_t(0);   // Space::layout_version() of the combined view
  std::uint64_t rebuilds_ = 0;
  // The one pair list of the step, master-major: rows are the owned masters and the halo masters
  // with an owned slave within 2h, in ascending id order, each listing its slaves within 2h in
  // ascending id order with W_sm in single precision and the zero-sum ĝ_sm (Eq. 11R) in double
  // (32 bytes a pair with the index): ĝ is what every product reads, and Σ_s ĝ_sm = 0 must hold to double
  // round-off (rigid motion in the operator's null space, the momentum tests). Slave-side sums
  // scatter from the rows in this order.
  std::vector<std::uint32_t> row_master_, row_offset_;
  std::vector<std::uint32_t> pair_slave_;
  std::vector<float> pair_w_;
  std::vector<Real> pair_g_;
  std::vector<std::uint32_t> slaves_;  // owned slaves (combined indices): the unknowns' order
  // Per combined particle: masters' Σ_s W and Σ_s g (4), velocity after gravity (3), τ (9), Q (9);
  // slaves' velocity (3) during the solve, and scatter targets.
  std::vector<Real> sums_, vm_, tau_, q_, vs_, dvs_, hs_, slave_mass_;
  Vec3 gravity_dv_{};
  std::vector<ElasticHessian<3>> hessian_;  // per row
  // Per owned slave (in slaves_ order): mass, v^n, v*, right-hand side, diagonal, solution, inverse
  // diagonal block (9).
  std::vector<Real> ms_, vn_, vstar_, rhs_, diag_, u_, cold_u_, block_inverse_;
  std::vector<char> dead_owned_;
  std::vector<char> constrained_;               // per owned slave: 0 free, 1 normal held, 2 all held (sticky)
  std::vector<Real> normal_, held_;             // per owned slave: contact normal, collider velocity
  std::vector<std::int32_t> contact_collider_;  // per owned slave: the collider held (constrained_ > 0)
  std::vector<Real> friction_dv_;  // per combined slave: friction's velocity change (3), empty if none
};

}  // namespace nendo
