#pragma once
// Example-based elastic shape matching (Koyama, Takayama, Umetani, Igarashi; spec 001) on
// Müller et al. 2005 shape matching with one region per tet-mesh vertex (its 1-ring, FastLSM
// style). Vertices are the particles of the spine: each carries its region's rest data (centroid,
// A_qq^-1, member ids, example stretches, its rows of the projection), so migration, the particle
// halo, output and checkpoints carry the whole state. A step (spec §6):
//   fit_regions     c_r, A_r = A_pq A_qq^-1 (Eq. 1), A_r = R_r S_r            owned regions
//   project         group weights by least squares (Eq. 7) reduced over ranks, negatives removed,
//                   blended to rest (β); T_r = R_r S̃_r                        owned regions
//   exchange        (T_r, c_r) to the halo copies                             one halo update
//   integrate       g_i = mean over r ∋ i of T_r (x_i^0 − c_r^0) + c_r (Eq. 3), Eqs. (4)-(5),
//                   collisions (§9 A8)                                          owned vertices
//   (layout)        kept whatever the motion, redone only by the spine (re-balance, restart): the
//                   halo copies get their positions only (gather_local), the rest data stays
// Every sum runs over a region's members in id order and group weights are summed as integers
// (core/ReproducibleSum.hpp), so results are bitwise the same on any rank count.
#include <cstdint>
#include <vector>

#include "colliders/Collider.hpp"
#include "decomposition/OwnedHaloView.hpp"
#include "methods/Method.hpp"
#include "methods/shape_matching/ShapeMatchingSettings.hpp"

namespace nendo {

namespace shape_matching {
struct BodySetup;
}

class ShapeMatching final : public Method {
 public:
  static constexpr int kFrame = 12;  // T_r (9, row-major) and c_r (3) of a region

  explicit ShapeMatching(const Scene& scene);
  void register_fields(ParticleSet& particles) const override;
  void seed(MPI_Comm comm, const Scene& scene, ParticleSet& particles) override;
  void initialize(Space& space) override;
  void restore(Space& space, const StateRecord& state) override;
  void advance(Space& space, Real t, Real dt) override;
  GlobalDiagnostics diagnostics(const Space& space) const override;
  std::vector<StageTime> stage_times() const override { return clock_.times(); }

  int max_examples() const { return n_max_; }
  int groups() const { return groups_; }  // reduced over ranks (global and slab groups)

 private:
  // The matched rotation keeps a second rotation, of A_r, for bodies with examples.
  bool fits_rotation() const { return rotation_kind_ == kMatched && n_max_ > 0; }
  void gather_local(Space& space);
  void build_rings(const Space& space);
  void fit_regions(Space& space);
  void check_reach(const Space& space);
  void project(Space& space);
  void integrate(Space& space, Real t, Real dt);
  void collide(Real* x, Real* v, Real t) const;
  // The particle of one mesh vertex (ShapeMatchingSetup.cpp); returns its lifted example stretches.
  std::vector<Real> seed_vertex(const shape_matching::BodySetup& body, std::size_t b, std::size_t v,
                                ParticleId id_base, ParticleSet& ps, std::size_t p) const;
  // Which group each body's regions start at, and how many groups there are.
  void count_groups(const Scene& scene);

  ShapeMatchingSettings settings_;
  enum RotationKind { kMatched, kFromApq, kFromA } rotation_kind_;
  std::vector<int> examples_;    // per body: its number of examples
  std::vector<Real> densities_;  // per material, the scene's key order
  std::vector<int> group_base_;  // per body; −1 for per-region groups
  int groups_ = 0;
  int n_max_ = 0;       // most examples of any body
  int components_ = 1;  // of the example fields: 6 max(1, n_max)
  Vec3 gravity_;
  ColliderSet colliders_;
  StageClock clock_;

  // Combined view of this step: owned particles, then the halo copies.
  OwnedHaloView view_;
  std::vector<Real> x_, rest_, share_, centroid0_;
  // Owned regions: members as combined indices (CSR, id order), rebuilt when the order changed.
  std::vector<std::uint32_t> ring_offset_, ring_member_;
  std::vector<ParticleId> ring_built_for_;    // the view's ids when the CSR was built
  std::size_t ring_built_own_ = 0;            // its owned count then
  std::uint64_t layout_ = ~std::uint64_t{0};  // Space::layout_version() of the combined view
  bool kept_layout_ = false;                  // this step kept the last step's layout
  long beyond_ = 0;  // region members missing or beyond the halo's reach in this step
  // Per owned region: R_r (9), or A_pq for the matched rotation; frames (T_r, c_r) of owned and
  // halo regions.
  std::vector<Real> rotation_, frames_;
  std::vector<std::vector<double>> terms_;  // per (group, example): this rank's terms of P_G d_G
};

}  // namespace nendo
