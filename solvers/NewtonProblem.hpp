#pragma once
// What a Newton–Krylov minimisation needs from the problem it minimises (MPM spec 002 §10.5):
// an energy E(v) over the unknowns numbered by a DofMap, its gradient, its Hessian H as a
// product, a diagonal and an assembly, and the constraints as an orthogonal projector P per node.
// The solver only ever sees the projected quantities: the gradient P ∇E and the operator
// A = P H P + (I − P), which is symmetric (and positive definite when H is), so CG applies.
// Arrays are this rank's owned unknowns, block_size per node, in DofMap order. Every call is
// collective.
#include <petscmat.h>

#include <cstdint>

#include "core/Types.hpp"
#include "solvers/CoarseSpace.hpp"
#include "solvers/DofMap.hpp"

namespace nendo {

class NewtonProblem {
 public:
  virtual ~NewtonProblem() = default;
  virtual const DofMap& dofs() const = 0;
  // Makes v the linearisation point (the energy, gradient and Hessian caches) and returns the
  // projected gradient P ∇E(v). v satisfies the constraints.
  virtual void linearize(const Real* v, Real* gradient) = 0;
  // E(v + d) − E(v) for the linearisation point v, computed as a sum of local differences (no
  // cancellation of large totals); +∞ when v + d is inadmissible (an inverted element).
  virtual Real energy_change(const Real* d) = 0;
  // y = P H P x + (I − P) x at the linearisation point.
  virtual void apply(const Real* x, Real* y) = 0;
  // The diagonal of P H P + (I − P) (Jacobi).
  virtual void diagonal(Real* d) = 0;
  // Adds P H P + (I − P) into A with MatSetValuesBlocked(..., ADD_VALUES), global block indices
  // from the DofMap. Inserts the same pattern every time for a given layout (the solver
  // preallocates by calling it once on a MATPREALLOCATOR matrix).
  virtual void assemble(::Mat A) = 0;
  // x ← P x.
  virtual void project(Real* x) = 0;
  // The size of the gradient in the units a user reads a tolerance in (MPM: the largest nodal
  // velocity error times Δt/h, in cells per step).
  virtual Real scaled_residual(const Real* gradient) = 0;
  // The gradient norm below which round-off dominates (the norms of the terms that cancel in
  // ∇E, times a small multiple of the machine epsilon), at the last linearisation point: Newton
  // stops there too, instead of iterating on noise.
  virtual Real residual_floor() const { return 0; }
  // The round-off of energy_change() at the last linearisation point (a small multiple of the
  // machine epsilon times the magnitudes of the terms it sums): below it the line search cannot
  // tell a decrease of the energy from noise and judges a step by the gradient instead.
  virtual Real energy_noise() const { return 0; }
  // Names the unknowns and the Hessian's sparsity pattern: when every rank reports the same
  // non-zero value as at the solver's last solve, the solver keeps its matrix, preallocation and
  // preconditioner structure (GAMG's interpolation), refreshing only the values. 0: a new layout.
  virtual std::uint64_t layout() const { return 0; }
  // Owned node positions (block_size numbers per node), for the rigid-body near null space that
  // algebraic multigrid uses; false if the problem has none.
  virtual bool coordinates(Real* /*xyz*/) { return false; }
  // The coarser discretisation that geometric multigrid solves on (GeometricMultigrid), built
  // for the current layout; nullptr if the problem has none.
  virtual CoarseSpace* coarse_space() { return nullptr; }
};

}  // namespace nendo
