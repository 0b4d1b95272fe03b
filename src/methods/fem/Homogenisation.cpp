#include "methods/fem/Homogenisation.hpp"

#include <petscksp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>

#include "core/CollectiveError.hpp"
#include "core/Error.hpp"
#include "core/Mpi.hpp"
#include "core/SplitMix.hpp"
#include "decomposition/SparseExchange.hpp"
#include "solvers/PetscCall.hpp"

namespace nendo::fem {

namespace {

using Vector3 = Eigen::Matrix<Real, 3, 1>;

constexpr Real kSmallestSample = 1e-3;     // the ± pair of the central difference, H4e
constexpr Real kResidualTolerance = 1e-9;  // H4d: ‖r‖∞ ≤ 1e-9 · max_b ‖f_b‖
// §5: for a homogeneous material the normal bases have r(α) = |α|/2 exactly, so the samples 2δ_lin
// (0.10 for δ_lin = 0.05, and likewise for every δ_lin of the §8 test 7 sweep) sit on the bound;
// the slack keeps rounding from deciding such ties.
constexpr Real kTieSlack = 1e-9;
constexpr int kMaxNewtonIterations = 50;
constexpr int kMaxLineSearchHalvings = 40;
constexpr Real kArmijo = 1e-4;
// One cached result on the wire: D (36), α_min (6), α_max (6).
constexpr int kResultSize = 48;

// The symmetric Voigt basis B^m of §4.3 (m = 0..5 here): engineering shear, so α B^m ↔ α ê_m.
Mat3 basis_strain(int m) {
  static constexpr int kSlots[6][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {0, 2}, {1, 2}};
  const int i = kSlots[m][0], j = kSlots[m][1];
  Mat3 B = Mat3::Zero();
  if (i == j) {
    B(i, i) = 1;
  } else {
    B(i, j) = B(j, i) = 0.5;
  }
  return B;
}

// The finest descendants of t are contiguous in the hierarchy numbering.
struct TetRange {
  Index begin = 0, count = 1;
};

TetRange finest_descendants(const TetHierarchy& h, Index t) {
  TetRange range{t, 1};
  for (int l = h.level[t]; l < h.max_level; ++l) {
    range.begin = h.child(range.begin, 0);
    range.count *= 8;
  }
  return range;
}

Index finest_begin(const TetHierarchy& h) { return h.level_begin[h.max_level]; }

void check_fine_materials(const TetHierarchy& h, const FineMaterials& fine) {
  const std::size_t expected = static_cast<std::size_t>(h.level_begin[h.max_level + 1] - finest_begin(h));
  if (fine.size() != expected)
    throw Error("homogenisation: " + std::to_string(fine.size()) + " fine materials for " +
                std::to_string(expected) + " finest tets");
}

// H4b: ρ_T = Σ ρ_e V_e / V_T.
Real average_density(const TetHierarchy& h, Index t, const FineMaterials& fine) {
  const TetRange range = finest_descendants(h, t);
  Real mass = 0;
  for (Index e = range.begin; e < range.begin + range.count; ++e)
    mass += fine[e - finest_begin(h)].density * tet_rest_shape(h, e).volume;
  return mass / tet_rest_shape(h, t).volume;
}

// The common D_e of the fine tets in `range`, or null if they differ (H4c).
const Stiffness* uniform_stiffness(const TetHierarchy& h, TetRange range, const FineMaterials& fine) {
  const Stiffness& first = fine[range.begin - finest_begin(h)].D;
  for (Index e = range.begin + 1; e < range.begin + range.count; ++e)
    if (!(fine[e - finest_begin(h)].D.array() == first.array()).all()) return nullptr;
  return &first;
}

// Which faces of T every node of T's subtree lies on (bit k: the barycentric coordinate w.r.t.
// corner k is zero). Exact by construction: a midpoint lies on the faces both its ends lie on.
std::unordered_map<Index, std::uint8_t> face_masks(const TetHierarchy& h, Index t) {
  std::unordered_map<Index, std::uint8_t> mask;
  const Corners corners = h.corners(t);
  for (int k = 0; k < 4; ++k) mask[corners[k]] = static_cast<std::uint8_t>(0xF & ~(1 << k));
  std::vector<Index> tets = {t}, children;
  for (int l = h.level[t]; l < h.max_level; ++l) {
    children.clear();
    for (Index p : tets) {
      const Corners c = h.corners(p);
      for (int e = 0; e < 6; ++e)
        mask[h.midpoints[p][e]] = mask.at(c[kEdges[e][0]]) & mask.at(c[kEdges[e][1]]);
      for (int k = 0; k < 8; ++k) children.push_back(h.child(p, k));
    }
    tets.swap(children);
  }
  return mask;
}

// The fine problem of H4a: the finest tets inside T over local node numbers, the held nodes B and
// the interior DOF numbering of I (node-major, 3 per node).
struct FinePatch {
  std::vector<std::array<int, 4>> tet_nodes;
  std::vector<RestShape> rest;
  std::vector<const Stiffness*> stiffness;
  std::vector<Real> rest_positions;  // 3 per local node
  std::vector<int> dof;              // per local node: first interior DOF, or −1 if held
  int interior_nodes = 0;
  Vector3 centroid = Vector3::Zero();  // X_c
};

FinePatch make_patch(const TetHierarchy& h, Index t, const FineMaterials& fine, bool vertices_only) {
  const TetRange range = finest_descendants(h, t);
  const std::unordered_map<Index, std::uint8_t> mask = face_masks(h, t);
  const Corners corners = h.corners(t);
  FinePatch patch;
  std::unordered_map<Index, int> local;
  std::vector<char> held;
  for (Index e = range.begin; e < range.begin + range.count; ++e) {
    std::array<int, 4> nodes;
    const Corners corners_of_e = h.corners(e);
    for (int a = 0; a < 4; ++a) {
      const Index n = corners_of_e[a];
      const auto [it, inserted] = local.emplace(n, static_cast<int>(held.size()));
      if (inserted) {
        const auto on_faces = mask.find(n);
        if (on_faces == mask.end())
          throw Error("homogenisation: fine node outside the subtree of tet " + std::to_string(t));
        const bool corner = std::find(corners.begin(), corners.end(), n) != corners.end();
        held.push_back(vertices_only ? corner : on_faces->second != 0);
        patch.rest_positions.insert(patch.rest_positions.end(), h.rest_position(n), h.rest_position(n) + 3);
      }
      nodes[a] = it->second;
    }
    patch.tet_nodes.push_back(nodes);
    patch.rest.push_back(tet_rest_shape(h, e));
    patch.stiffness.push_back(&fine[e - finest_begin(h)].D);
  }
  for (char is_held : held) {
    patch.dof.push_back(is_held ? -1 : 3 * patch.interior_nodes);
    if (!is_held) ++patch.interior_nodes;
  }
  for (int k = 0; k < 4; ++k) patch.centroid += Eigen::Map<const Vector3>(h.rest_position(corners[k])) / 4;
  return patch;
}

void gather(const FinePatch& patch, std::size_t e, const std::vector<Real>& x, Real (&xe)[4][3]) {
  for (int a = 0; a < 4; ++a)
    for (int i = 0; i < 3; ++i) xe[a][i] = x[3 * patch.tet_nodes[e][a] + i];
}

// x = X_c + (I + α B)(X − X_c) (§4.3) for every local node, plus the scaled interior fluctuation w.
void place_nodes(const FinePatch& patch, const Mat3& map, const std::vector<Real>& fluctuation, Real scale,
                 std::vector<Real>& x) {
  const std::size_t nodes = patch.dof.size();
  for (std::size_t n = 0; n < nodes; ++n) {
    const Vector3 X = Eigen::Map<const Vector3>(&patch.rest_positions[3 * n]);
    Eigen::Map<Vector3> position(&x[3 * n]);
    position = patch.centroid + map * (X - patch.centroid);
    if (patch.dof[n] >= 0)
      for (int i = 0; i < 3; ++i) x[3 * n + i] += scale * fluctuation[patch.dof[n] + i];
  }
}

void record_fluctuation(const FinePatch& patch, const Mat3& map, const std::vector<Real>& x,
                        std::vector<Real>& fluctuation) {
  for (std::size_t n = 0; n < patch.dof.size(); ++n) {
    if (patch.dof[n] < 0) continue;
    const Vector3 X = Eigen::Map<const Vector3>(&patch.rest_positions[3 * n]);
    const Vector3 affine = patch.centroid + map * (X - patch.centroid);
    for (int i = 0; i < 3; ++i) fluctuation[patch.dof[n] + i] = x[3 * n + i] - affine[i];
  }
}

// S̄ = Σ_e V_e S_e / Σ_e V_e (H4d, §10 C3).
Voigt average_stress(const FinePatch& patch, const std::vector<Real>& x) {
  Voigt sum = Voigt::Zero();
  Real volume = 0;
  Real xe[4][3];
  for (std::size_t e = 0; e < patch.tet_nodes.size(); ++e) {
    gather(patch, e, x, xe);
    sum +=
        patch.rest[e].volume * (*patch.stiffness[e] * green_strain(deformation_gradient(patch.rest[e], xe)));
    volume += patch.rest[e].volume;
  }
  return sum / volume;
}

// Owns one PETSc object, so that no path (a throwing constructor included) leaks it.
template <typename Object, PetscErrorCode (*destroy)(Object*)>
struct PetscHandle {
  Object object = nullptr;
  PetscHandle() = default;
  PetscHandle(const PetscHandle&) = delete;
  PetscHandle& operator=(const PetscHandle&) = delete;
  ~PetscHandle() { destroy(&object); }
  operator Object() const { return object; }
};

// The quasi-static relaxation of H4d: Newton on the interior DOFs with a backtracking line search on
// W = Σ V_e ½ eᵀ D_e e. Linear solves: a SeqAIJ tangent with exact preallocation, factored by a
// direct LU (KSPPREONLY + PCLU): robust also where the exact StVK tangent is indefinite (strong
// compression). Options prefix "homogenisation_" (e.g. -homogenisation_pc_type cholesky).
class Relaxation {
 public:
  explicit Relaxation(const FinePatch& patch);

  // Moves the interior nodes of x to equilibrium; false if Newton does not converge.
  bool solve(std::vector<Real>& x);

 private:
  struct State {
    Real energy = 0, interior_force = 0, boundary_force = 0;  // W, ‖f_I‖∞, max_b ‖f_b‖
  };
  State evaluate(const std::vector<Real>& x, std::vector<Real>& forces) const;
  bool find_direction(const std::vector<Real>& x, bool definite);
  void assemble_tangent(const std::vector<Real>& x, bool definite);
  bool line_search(std::vector<Real>& x, State& state);

  const FinePatch& patch_;
  const int size_;
  std::vector<Real> forces_, trial_forces_, rhs_, direction_, trial_;
  PetscHandle<Mat, MatDestroy> tangent_;
  PetscHandle<Vec, VecDestroy> rhs_vec_, direction_vec_;  // over rhs_ and direction_
  PetscHandle<KSP, KSPDestroy> ksp_;
};

std::vector<PetscInt> tangent_row_lengths(const FinePatch& patch) {
  std::vector<std::vector<int>> neighbours(static_cast<std::size_t>(patch.interior_nodes));
  for (const auto& nodes : patch.tet_nodes)
    for (int a : nodes)
      for (int b : nodes)
        if (patch.dof[a] >= 0 && patch.dof[b] >= 0) neighbours[patch.dof[a] / 3].push_back(patch.dof[b] / 3);
  std::vector<PetscInt> lengths;
  for (auto& list : neighbours) {
    std::sort(list.begin(), list.end());
    const auto count = static_cast<PetscInt>(std::unique(list.begin(), list.end()) - list.begin());
    lengths.insert(lengths.end(), 3, 3 * count);
  }
  return lengths;
}

Relaxation::Relaxation(const FinePatch& patch)
    : patch_(patch),
      size_(3 * patch.interior_nodes),
      forces_(patch.rest_positions.size()),
      trial_forces_(patch.rest_positions.size()),
      rhs_(static_cast<std::size_t>(size_)),
      direction_(static_cast<std::size_t>(size_)),
      trial_(patch.rest_positions.size()) {
  if (size_ == 0) return;
  const std::vector<PetscInt> lengths = tangent_row_lengths(patch);
  petsc_call(MatCreateSeqAIJ(PETSC_COMM_SELF, size_, size_, 0, lengths.data(), &tangent_.object),
             "MatCreateSeqAIJ");
  petsc_call(MatSetOption(tangent_, MAT_ROW_ORIENTED, PETSC_FALSE), "MatSetOption");  // Eigen is column-major
  petsc_call(VecCreateSeqWithArray(PETSC_COMM_SELF, 1, size_, rhs_.data(), &rhs_vec_.object),
             "VecCreateSeqWithArray");
  petsc_call(VecCreateSeqWithArray(PETSC_COMM_SELF, 1, size_, direction_.data(), &direction_vec_.object),
             "VecCreateSeqWithArray");
  petsc_call(KSPCreate(PETSC_COMM_SELF, &ksp_.object), "KSPCreate");
  petsc_call(KSPSetType(ksp_, KSPPREONLY), "KSPSetType");
  PC pc = nullptr;
  petsc_call(KSPGetPC(ksp_, &pc), "KSPGetPC");
  petsc_call(PCSetType(pc, PCLU), "PCSetType");
  petsc_call(KSPSetOptionsPrefix(ksp_, "homogenisation_"), "KSPSetOptionsPrefix");
  petsc_call(KSPSetFromOptions(ksp_), "KSPSetFromOptions");
}

Relaxation::State Relaxation::evaluate(const std::vector<Real>& x, std::vector<Real>& forces) const {
  State state;
  std::fill(forces.begin(), forces.end(), 0.0);
  Real xe[4][3], fe[4][3];
  for (std::size_t e = 0; e < patch_.tet_nodes.size(); ++e) {
    gather(patch_, e, x, xe);
    state.energy += strain_energy(patch_.rest[e], *patch_.stiffness[e], xe);
    element_forces(patch_.rest[e], *patch_.stiffness[e], xe, fe);
    for (int a = 0; a < 4; ++a)
      for (int i = 0; i < 3; ++i) forces[3 * patch_.tet_nodes[e][a] + i] += fe[a][i];
  }
  for (std::size_t n = 0; n < patch_.dof.size(); ++n) {
    const Vector3 f = Eigen::Map<const Vector3>(&forces[3 * n]);
    if (patch_.dof[n] >= 0) {
      state.interior_force = std::max(state.interior_force, f.cwiseAbs().maxCoeff());
    } else {
      state.boundary_force = std::max(state.boundary_force, f.norm());
    }
  }
  return state;
}

void Relaxation::assemble_tangent(const std::vector<Real>& x, bool definite) {
  petsc_call(MatZeroEntries(tangent_), "MatZeroEntries");
  Real xe[4][3];
  PetscInt rows[12];
  for (std::size_t e = 0; e < patch_.tet_nodes.size(); ++e) {
    for (int a = 0; a < 4; ++a)
      for (int i = 0; i < 3; ++i) {
        const int dof = patch_.dof[patch_.tet_nodes[e][a]];
        rows[3 * a + i] = dof < 0 ? -1 : dof + i;  // PETSc skips negative (held) rows and columns
      }
    gather(patch_, e, x, xe);
    const Mat12 hessian = element_hessian(patch_.rest[e], *patch_.stiffness[e], xe, definite);
    petsc_call(MatSetValues(tangent_, 12, rows, 12, rows, hessian.data(), ADD_VALUES), "MatSetValues");
  }
  petsc_call(MatAssemblyBegin(tangent_, MAT_FINAL_ASSEMBLY), "MatAssemblyBegin");
  petsc_call(MatAssemblyEnd(tangent_, MAT_FINAL_ASSEMBLY), "MatAssemblyEnd");
}

// Solves K d = f_I (the Newton step for W, whose gradient is −f); true if d is a descent direction.
bool Relaxation::find_direction(const std::vector<Real>& x, bool definite) {
  assemble_tangent(x, definite);
  PetscScalar* rhs = nullptr;  // rhs_'s storage, written through PETSc so that it sees the change
  petsc_call(VecGetArray(rhs_vec_, &rhs), "VecGetArray");
  for (std::size_t n = 0; n < patch_.dof.size(); ++n)
    if (patch_.dof[n] >= 0)
      for (int i = 0; i < 3; ++i) rhs[patch_.dof[n] + i] = forces_[3 * n + i];
  petsc_call(VecRestoreArray(rhs_vec_, &rhs), "VecRestoreArray");
  petsc_call(KSPSetOperators(ksp_, tangent_, tangent_), "KSPSetOperators");
  petsc_call(KSPSolve(ksp_, rhs_vec_, direction_vec_), "KSPSolve");
  KSPConvergedReason reason;
  petsc_call(KSPGetConvergedReason(ksp_, &reason), "KSPGetConvergedReason");
  if (reason < 0) return false;
  Real slope = 0;
  for (int k = 0; k < size_; ++k) slope += rhs_[k] * direction_[k];
  return std::isfinite(slope) && slope > 0;
}

// Backtracking from the full Newton step: Armijo on W; near convergence W changes below its
// rounding, so a step that leaves W flat and lowers ‖f_I‖∞ is accepted too.
bool Relaxation::line_search(std::vector<Real>& x, State& state) {
  Real slope = 0;
  for (int k = 0; k < size_; ++k) slope -= rhs_[k] * direction_[k];
  Real step = 1;
  for (int halving = 0; halving <= kMaxLineSearchHalvings; ++halving, step /= 2) {
    trial_ = x;
    for (std::size_t n = 0; n < patch_.dof.size(); ++n)
      if (patch_.dof[n] >= 0)
        for (int i = 0; i < 3; ++i) trial_[3 * n + i] += step * direction_[patch_.dof[n] + i];
    const State trial = evaluate(trial_, trial_forces_);
    const bool armijo = trial.energy <= state.energy + kArmijo * step * slope;
    const bool flat = trial.energy <= state.energy + 1e-12 * std::abs(state.energy) &&
                      trial.interior_force < state.interior_force;
    if (armijo || flat) {
      x.swap(trial_);
      forces_.swap(trial_forces_);
      state = trial;
      return true;
    }
  }
  return false;
}

bool Relaxation::solve(std::vector<Real>& x) {
  if (size_ == 0) return true;  // every fine node is held: nothing to relax
  State state = evaluate(x, forces_);
  for (int iteration = 0; iteration < kMaxNewtonIterations; ++iteration) {
    if (state.interior_force <= kResidualTolerance * state.boundary_force) return true;
    // The exact StVK tangent may be indefinite in compression; then its clamped form (§3).
    if (!find_direction(x, false) && !find_direction(x, true)) return false;
    if (!line_search(x, state)) return false;
  }
  return state.interior_force <= kResidualTolerance * state.boundary_force;
}

// Indices of the samples of one side of A, from ±1e-3 outwards.
std::vector<std::size_t> side_order(const std::vector<Real>& alpha, int sign) {
  std::vector<std::size_t> order;
  for (std::size_t k = 0; k < alpha.size(); ++k)
    if (sign * alpha[k] > 0) order.push_back(k);
  if (sign < 0) std::reverse(order.begin(), order.end());
  return order;
}

// H4d for every basis and sample, each side warm-started outwards from ±1e-3 by carrying the
// interior fluctuation w = x − (affine map) over to the next α, scaled by α/α_previous (w is
// linear in α for small α). A relaxation that does not
// converge (StVK loses stability in strong compression) ends its side: its S̄ and all further ones
// are NaN, so the linear range (H4f) cannot pass it.
void relaxed_curves(const FinePatch& patch, StressStrainCurves& curves) {
  Relaxation relaxation(patch);
  std::vector<Real> x(patch.rest_positions.size()),
      fluctuation(3 * static_cast<std::size_t>(patch.interior_nodes));
  const Voigt not_computed = Voigt::Constant(std::numeric_limits<Real>::quiet_NaN());
  for (int m = 0; m < 6; ++m) {
    curves.stress[m].assign(curves.alpha.size(), not_computed);
    for (int sign : {1, -1}) {
      std::fill(fluctuation.begin(), fluctuation.end(), 0.0);
      Real previous = sign * kSmallestSample;
      for (std::size_t k : side_order(curves.alpha, sign)) {
        const Mat3 map = Mat3::Identity() + curves.alpha[k] * basis_strain(m);
        place_nodes(patch, map, fluctuation, curves.alpha[k] / previous, x);
        if (!relaxation.solve(x)) break;
        curves.stress[m][k] = average_stress(patch, x);
        record_fluctuation(patch, map, x, fluctuation);
        previous = curves.alpha[k];
      }
    }
  }
}

// H4c: a homogeneous material under affine boundary conditions stays affine, so every fine
// element has F = I + α B^m and S̄ is one element evaluation.
void homogeneous_curves(const Stiffness& D, StressStrainCurves& curves) {
  for (int m = 0; m < 6; ++m) {
    curves.stress[m].clear();
    for (Real alpha : curves.alpha)
      curves.stress[m].push_back(D * green_strain(Mat3::Identity() + alpha * basis_strain(m)));
  }
}

std::size_t sample_index(const std::vector<Real>& alpha, Real value) {
  return static_cast<std::size_t>(std::find(alpha.begin(), alpha.end(), value) - alpha.begin());
}

// H4e: D_T[:,m] = (S̄(+1e-3) − S̄(−1e-3)) / 2e-3, then symmetrised.
Stiffness stiffness_from_curves(const StressStrainCurves& curves, Index t) {
  const std::size_t plus = sample_index(curves.alpha, kSmallestSample);
  const std::size_t minus = sample_index(curves.alpha, -kSmallestSample);
  Stiffness D;
  for (int m = 0; m < 6; ++m) {
    D.col(m) = (curves.stress[m][plus] - curves.stress[m][minus]) / (2 * kSmallestSample);
    if (!D.col(m).allFinite())
      throw Error("homogenisation: the relaxation at α = ±1e-3 of basis " + std::to_string(m + 1) +
                  " of tet " + std::to_string(t) + " did not converge");
  }
  return (D + D.transpose()) / 2;
}

// H4f: the last sample of one side (outwards) up to which r(α) ≤ δ_lin holds throughout; 0 if the
// first fails. A NaN S̄ (no convergence) fails.
Real linear_bound(const StressStrainCurves& curves, int m, int sign, Real tolerance) {
  const Voigt column = curves.constants.D.col(m);
  Real bound = 0;
  for (std::size_t k : side_order(curves.alpha, sign)) {
    const Real alpha = curves.alpha[k];
    const Real r = (curves.stress[m][k] - alpha * column).norm() / (alpha * column).norm();
    if (!(r <= tolerance + kTieSlack)) break;
    bound = alpha;
  }
  return bound;
}

void linear_ranges(StressStrainCurves& curves, Real tolerance) {
  for (int m = 0; m < 6; ++m) {
    curves.constants.alpha_max[m] = linear_bound(curves, m, 1, tolerance);
    curves.constants.alpha_min[m] = linear_bound(curves, m, -1, tolerance);
  }
}

// The cache key of §9: (depth to the finest level, D_m / longest edge rounded to 1e-9, the fine
// materials in hierarchy order). Tets with equal keys have the same homogenisation up to rounding.
struct SimilarityKey {
  int depth = 0;
  std::array<std::int64_t, 9> shape{};
  std::uint64_t materials = 0;
  bool operator<(const SimilarityKey& other) const {
    return std::tie(depth, shape, materials) < std::tie(other.depth, other.shape, other.materials);
  }
};

// FNV-1a over the bits of the doubles.
void hash_doubles(std::uint64_t& hash, const Real* values, std::size_t count) {
  for (std::size_t k = 0; k < count; ++k) {
    std::uint64_t bits;
    std::memcpy(&bits, &values[k], sizeof bits);
    for (int byte = 0; byte < 8; ++byte) {
      hash ^= (bits >> (8 * byte)) & 0xFF;
      hash *= 1099511628211ULL;
    }
  }
}

// `digests`: each distinct fine material's hash (its D and density, bit for bit), by its index.
SimilarityKey similarity_key(const TetHierarchy& h, Index t, const FineMaterials& fine,
                             const std::vector<std::uint64_t>& digests) {
  SimilarityKey key;
  key.depth = h.max_level - h.level[t];
  const Corners c = h.corners(t);
  Real longest = 0;
  for (const auto& edge : kEdges) {
    const Vector3 a = Eigen::Map<const Vector3>(h.rest_position(c[edge[0]]));
    longest = std::max(longest, (Eigen::Map<const Vector3>(h.rest_position(c[edge[1]])) - a).norm());
  }
  const Real* origin = h.rest_position(c[0]);
  for (int k = 0; k < 3; ++k)
    for (int i = 0; i < 3; ++i)
      key.shape[3 * k + i] = std::llround((h.rest_position(c[k + 1])[i] - origin[i]) / longest * 1e9);
  key.materials = 14695981039346656037ULL;
  const TetRange range = finest_descendants(h, t);
  for (Index e = range.begin; e < range.begin + range.count; ++e)
    key.materials = (key.materials ^ digests[fine.index(static_cast<std::size_t>(e - finest_begin(h)))]) *
                    1099511628211ULL;
  return key;
}

void pack(const TetConstants& constants, std::vector<Real>& out) {
  out.insert(out.end(), constants.D.data(), constants.D.data() + 36);
  out.insert(out.end(), constants.alpha_min.begin(), constants.alpha_min.end());
  out.insert(out.end(), constants.alpha_max.begin(), constants.alpha_max.end());
}

TetConstants unpack(const Real* in) {
  TetConstants constants;
  std::copy(in, in + 36, constants.D.data());
  std::copy(in + 36, in + 42, constants.alpha_min.begin());
  std::copy(in + 42, in + 48, constants.alpha_max.begin());
  return constants;
}

// A similarity key as 11 words, to send.
using KeyWords = std::array<std::int64_t, 11>;
KeyWords words(const SimilarityKey& key) {
  KeyWords w;
  w[0] = key.depth;
  std::copy(key.shape.begin(), key.shape.end(), w.begin() + 1);
  std::memcpy(&w[10], &key.materials, sizeof key.materials);
  return w;
}

// This rank's classes: each distinct key of its tets below the finest level, with its smallest
// tet (global number) and where that tet is here.
struct LocalClass {
  Index first_global, first_local;
  int index;  // in order of first appearance here
};

// Which rank homogenises each class, found without any rank listing every class: each key goes
// to a meeting rank (by its hash), which takes the class's first tet in the whole hierarchy as
// its representative, picks a rank holding that tet to compute it (in turn among them), and tells
// that rank who needs the result. Returns, for this rank, the classes to compute: (key, ranks).
std::vector<std::pair<KeyWords, std::vector<int>>> assign_classes(
    const SparseExchange& exchange, const std::map<KeyWords, LocalClass>& mine) {
  const int ranks = mpi::size(exchange.comm());
  std::map<int, Bytes> to_meeting;
  for (const auto& [key, c] : mine) {
    std::uint64_t hash = 0;
    for (std::int64_t w : key) hash = splitmix64(hash ^ static_cast<std::uint64_t>(w));
    Bytes& out = to_meeting[static_cast<int>(hash % static_cast<std::uint64_t>(ranks))];
    put(out, key);
    put(out, c.first_global);
  }
  struct Report {
    Index first;
    int rank;
  };
  std::map<KeyWords, std::vector<Report>> reports;
  for (const Message& m : exchange.discover(to_meeting))
    for (ByteReader in(m.bytes); !in.done();) {
      const auto key = in.get<KeyWords>();
      reports[key].push_back({in.get<Index>(), m.rank});
    }
  std::map<int, Bytes> to_computing;
  std::size_t turn = static_cast<std::size_t>(exchange.rank());
  for (const auto& [key, list] : reports) {
    Index representative = std::numeric_limits<Index>::max();
    for (const Report& r : list) representative = std::min(representative, r.first);
    std::vector<int> holders, needing;  // in rank order: discover() returns messages so
    for (const Report& r : list) {
      needing.push_back(r.rank);
      if (r.first == representative) holders.push_back(r.rank);
    }
    Bytes& out = to_computing[holders[turn++ % holders.size()]];
    put(out, key);
    put(out, static_cast<std::int32_t>(needing.size()));
    for (int r : needing) put(out, r);
  }
  std::vector<std::pair<KeyWords, std::vector<int>>> tasks;
  for (const Message& m : exchange.discover(to_computing))
    for (ByteReader in(m.bytes); !in.done();) {
      auto& [key, needing] = tasks.emplace_back();
      key = in.get<KeyWords>();
      needing.resize(static_cast<std::size_t>(in.get<std::int32_t>()));
      for (int& r : needing) r = in.get<int>();
    }
  return tasks;
}

}  // namespace

RestShape tet_rest_shape(const TetHierarchy& h, Index t) {
  const Corners c = h.corners(t);
  return rest_shape(h.rest_position(c[0]), h.rest_position(c[1]), h.rest_position(c[2]),
                    h.rest_position(c[3]));
}

std::vector<Real> strain_samples() {
  std::vector<Real> magnitudes = {1e-3, 0.005};
  for (int k = 1; k <= 10; ++k) magnitudes.push_back(k / 100.0);
  for (int k = 12; k <= 30; k += 2) magnitudes.push_back(k / 100.0);
  for (int k = 35; k <= 100; k += 5) magnitudes.push_back(k / 100.0);
  std::vector<Real> samples;
  for (Real magnitude : magnitudes) {
    samples.push_back(magnitude);
    if (magnitude < 0.5) samples.push_back(-magnitude);  // H4d: α > −0.5
  }
  std::sort(samples.begin(), samples.end());
  return samples;
}

StressStrainCurves homogenise_tet(const TetHierarchy& h, Index t, const FineMaterials& fine,
                                  const HomogenisationSettings& settings) {
  check_fine_materials(h, fine);
  if (t < 0 || t >= h.level_begin[h.max_level])
    throw Error("homogenisation: tet " + std::to_string(t) + " is not a tet below the finest level");
  StressStrainCurves curves;
  curves.alpha = strain_samples();
  const Stiffness* uniform = uniform_stiffness(h, finest_descendants(h, t), fine);
  if (uniform && settings.fast_path && !settings.vertices_only) {
    homogeneous_curves(*uniform, curves);
    curves.constants.D = *uniform;
  } else {
    relaxed_curves(make_patch(h, t, fine, settings.vertices_only), curves);
    curves.constants.D = stiffness_from_curves(curves, t);
  }
  linear_ranges(curves, settings.linear_tolerance);
  curves.constants.density = average_density(h, t, fine);
  return curves;
}

TetConstantsTable homogenise(MPI_Comm comm, const TetHierarchy& h, const FineMaterials& fine,
                             const HomogenisationSettings& settings) {
  check_fine_materials(h, fine);
  const Index coarse_tets = h.level_begin[h.max_level];
  std::vector<std::uint64_t> digests(fine.distinct_count(), 14695981039346656037ULL);
  for (std::uint32_t m = 0; m < digests.size(); ++m) {
    hash_doubles(digests[m], fine.distinct(m).D.data(), 36);
    hash_doubles(digests[m], &fine.distinct(m).density, 1);
  }
  std::map<KeyWords, LocalClass> mine;
  std::vector<int> class_of(static_cast<std::size_t>(coarse_tets));
  for (Index t = 0; t < coarse_tets; ++t) {
    const auto index = static_cast<int>(mine.size());
    const auto [it, fresh] =
        mine.try_emplace(words(similarity_key(h, t, fine, digests)), LocalClass{h.global_tet(t), t, index});
    if (!fresh && h.global_tet(t) < it->second.first_global)
      it->second.first_global = h.global_tet(t), it->second.first_local = t;
    class_of[t] = it->second.index;
  }

  // Each class is homogenised once, from its first tet in the whole hierarchy, so that the
  // constants are bitwise the same however the hierarchy is held and on any rank count.
  const SparseExchange exchange(comm);
  std::map<int, Bytes> results;
  std::string failure;
  try {
    for (const auto& [key, needing] : assign_classes(exchange, mine)) {
      std::vector<Real> packed;
      pack(homogenise_tet(h, mine.at(key).first_local, fine, settings).constants, packed);
      for (int r : needing) {
        put(results[r], key);
        for (Real v : packed) put(results[r], v);
      }
    }
  } catch (const std::exception& error) {
    failure = error.what();
  }
  raise_collectively(comm, failure);
  std::vector<TetConstants> computed(mine.size());  // by class index
  for (const Message& m : exchange.discover(results))
    for (ByteReader in(m.bytes); !in.done();) {
      const auto key = in.get<KeyWords>();
      std::array<Real, kResultSize> packed;
      for (Real& v : packed) v = in.get<Real>();
      computed[mine.at(key).index] = unpack(packed.data());
    }

  TetConstantsTable constants;
  for (Index t = 0; t < coarse_tets; ++t) {
    TetConstants c = computed[class_of[t]];
    c.density = average_density(h, t, fine);
    constants.push_back(c);
  }
  const Real infinity = std::numeric_limits<Real>::infinity();
  for (Index t = coarse_tets; t < static_cast<Index>(h.tet_count()); ++t) {  // H5
    const FineMaterial& material = fine[t - coarse_tets];
    TetConstants c;
    c.D = material.D;
    c.alpha_min.fill(-infinity);
    c.alpha_max.fill(infinity);
    c.density = material.density;
    constants.push_back(c);
  }
  return constants;
}

}  // namespace nendo::fem
