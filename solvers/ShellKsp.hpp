#pragma once
// A KSP on an operator given by a product callback and a diagonal (a MatShell), for linear systems a
// method applies but never stores: the slave velocity solve of slave SPH (spec 000 Eq. 15). The
// solver type and preconditioner are defaults that the options database overrides (-ksp_type,
// -pc_type, ...); PCSHELL applies the method's own preconditioner (a callback given to solve()). Dot products
// and norms are reproducible sums (core/ReproducibleSum.hpp), so the iterates, and the results of the method,
// are bitwise the same on any rank count. Lifecycle: one ShellKsp per run; solve() per step, whatever the
// number of unknowns.
#include <petscksp.h>

#include <functional>
#include <string>

#include "core/Types.hpp"

namespace nendo {

struct KspOutcome {
  int iterations = 0;
  bool converged = false;
  std::string reason;  // PETSc's KSPConvergedReason name
};

class ShellKsp {
 public:
  using Product = std::function<void(const Real* x, Real* y)>;         // y = A x on this rank's unknowns
  using Preconditioner = std::function<void(const Real* r, Real* z)>;  // z = M⁻¹ r, for PCSHELL

  ShellKsp(MPI_Comm comm, const char* default_type, const char* default_pc);
  ~ShellKsp();
  ShellKsp(const ShellKsp&) = delete;
  ShellKsp& operator=(const ShellKsp&) = delete;

  // Solves A x = b for this rank's n unknowns, x holding the initial guess on entry. The stopping
  // test is relative to the initial residual (rtol), with an absolute floor atol. `preconditioner`
  // is what a PCSHELL applies (the identity if none). Collective.
  KspOutcome solve(std::size_t n, const Product& product, const Real* diagonal, const Real* b, Real* x,
                   Real rtol, Real atol, int max_iterations, const Preconditioner* preconditioner = nullptr);

 private:
  void resize(std::size_t n);
  static PetscErrorCode mult(::Mat A, ::Vec x, ::Vec y);
  static PetscErrorCode diagonal(::Mat A, ::Vec d);
  static PetscErrorCode apply_preconditioner(PC pc, ::Vec r, ::Vec z);

  MPI_Comm comm_;
  KSP ksp_ = nullptr;
  ::Mat shell_ = nullptr;
  ::Vec b_ = nullptr, x_ = nullptr;
  std::size_t n_ = 0;
  const Product* product_ = nullptr;
  const Real* diagonal_ = nullptr;
  const Preconditioner* preconditioner_ = nullptr;
};

// Makes v's dot products and norms reproducible sums; VecDuplicate passes it on.
void make_reproducible(::Vec v);

}  // namespace nendo
