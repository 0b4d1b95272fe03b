#pragma once
// Backward Euler for the fem method as a minimisation (Sifakis & Barbič 2012; the incremental
// potential of MPM spec 002 §10.5): the velocities v of the regular free nodes minimise
//   E(v) = Σ_k m_k [½ (1 + c_m Δt) |v_k|² − v_k · ṽ_k] + W(xⁿ + Δt v),   ṽ_k = v_kⁿ + Δt g,
// whose gradient is zero exactly at M(v − vⁿ)/Δt = f(xⁿ⁺¹) + M g − c_m M v. Hanging nodes move with
// their masters (v_h = Σ w v_m), held nodes stay. The Hessian (1 + c_m Δt) M + Δt² K is assembled
// (each tet once, by the rank that owns its corner 0) into a PETSc matrix for KSP (CG + GAMG by
// default), or applied matrix-free from the same element tangents. Gradients are summed per owned
// node in the explicit step's (tet, corner) order, energies reproducibly: a solve does the same
// arithmetic on any rank count.
#include <memory>
#include <vector>

#include "methods/fem/FemCoarseSpace.hpp"
#include "methods/fem/HierarchicalFem.hpp"
#include "solvers/DofMap.hpp"
#include "solvers/NewtonProblem.hpp"

namespace nendo::fem {

class FemBackwardEuler final : public NewtonProblem {
 public:
  FemBackwardEuler(HierarchicalFem& fem, Space& space, Real dt);
  const DofMap& dofs() const override { return dofs_; }
  void linearize(const Real* v, Real* gradient) override;
  Real energy_change(const Real* d) override;
  void apply(const Real* x, Real* y) override;
  void diagonal(Real* d) override;
  void assemble(::Mat A) override;
  void project(Real* /*x*/) override {}  // held nodes carry no unknowns
  Real scaled_residual(const Real* gradient) override;
  bool coordinates(Real* xyz) override;
  Real residual_floor() const override { return floor_; }
  Real energy_noise() const override { return energy_noise_; }
  std::uint64_t layout() const override { return fem_.layout_; }
  CoarseSpace* coarse_space() override;  // the Bey hierarchy one level up (FemCoarseSpace)

  // The unknowns' start (vⁿ of the free regular nodes) and, after a solve, the step's end state.
  void initial_guess(Real* v) const;
  void finish(const Real* v);

 private:
  // Node velocities of the whole view from the unknowns (halo copies by exchange, hanging nodes
  // from their masters, held nodes 0): out has 3 per view entry.
  void spread(const Real* unknowns, std::vector<Real>& out);
  // P_T x for needed tet i (12 numbers) from view values.
  void corner_values(std::size_t i, const std::vector<Real>& view, Real (&out)[4][3]) const;
  Mat12 tangent(std::size_t i) const;    // Δt² K_T at the linearisation point
  const std::vector<Mat12>& tangents();  // of every needed tet, cached per linearisation

  HierarchicalFem& fem_;
  Space& space_;
  Real dt_, mass_factor_;
  DofMap dofs_;
  std::vector<std::int64_t> global_;   // per view entry: global block index, or −1
  std::vector<Real> v_, x_, scratch_;  // per view entry (3 each): the linearisation point
  std::vector<Real> target_;           // m ṽ per unknown node (3 each)
  std::vector<Real> product_;          // 12 per needed tet: K_T P_T x in apply()
  std::vector<Real> round_off_;        // 4 per needed tet: element_force_round_off at the linearisation point
  std::vector<Mat12> tangents_;        // see tangents(); not used by the assembly (memory)
  bool tangents_current_ = false;
  Real floor_ = 0, energy_noise_ = 0;  // at the linearisation point
  Real h_min_ = 0;                     // the smallest finest-level altitude (scaled residual)
  std::unique_ptr<FemCoarseSpace> coarse_;
};

}  // namespace nendo::fem
