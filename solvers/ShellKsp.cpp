#include "solvers/ShellKsp.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/ReproducibleSum.hpp"
#include "solvers/PetscCall.hpp"

namespace nendo {
namespace {

PetscErrorCode reproducible_vec_dot(::Vec x, ::Vec y, PetscScalar* value) {
  PetscInt n = 0;
  const PetscScalar *a = nullptr, *b = nullptr;
  PetscCall(VecGetLocalSize(x, &n));
  PetscCall(VecGetArrayRead(x, &a));
  PetscCall(VecGetArrayRead(y, &b));
  *value = reproducible_dot(PetscObjectComm(reinterpret_cast<PetscObject>(x)), a, b, n);
  PetscCall(VecRestoreArrayRead(y, &b));
  PetscCall(VecRestoreArrayRead(x, &a));
  return 0;
}

PetscErrorCode reproducible_vec_norm(::Vec x, NormType type, PetscReal* value) {
  MPI_Comm comm = PetscObjectComm(reinterpret_cast<PetscObject>(x));
  PetscInt n = 0;
  const PetscScalar* a = nullptr;
  PetscCall(VecGetLocalSize(x, &n));
  PetscCall(VecGetArrayRead(x, &a));
  if (type == NORM_INFINITY) {
    PetscReal local = 0;
    for (PetscInt i = 0; i < n; ++i) local = std::fmax(local, std::fabs(a[i]));
    MPI_Allreduce(&local, value, 1, MPIU_REAL, MPI_MAX, comm);
  } else {
    std::vector<double> ones;
    PetscReal two = 0, one = 0;
    if (type == NORM_2 || type == NORM_FROBENIUS || type == NORM_1_AND_2)
      two = std::sqrt(reproducible_dot(comm, a, a, n));
    if (type == NORM_1 || type == NORM_1_AND_2) {
      std::vector<double> absolute(n);
      for (PetscInt i = 0; i < n; ++i) absolute[i] = std::fabs(a[i]);
      ones.assign(n, 1.0);
      one = reproducible_dot(comm, absolute.data(), ones.data(), n);
    }
    if (type == NORM_1_AND_2) {
      value[0] = one, value[1] = two;
    } else {
      *value = type == NORM_1 ? one : two;
    }
  }
  PetscCall(VecRestoreArrayRead(x, &a));
  return 0;
}

}  // namespace

// Slots of struct _VecOps (petsc/private/vecimpl.h, PETSc 3.18): VecOperation values are the slot
// indices, but the public enum names only a few of them.
constexpr auto kVecOpDot = static_cast<VecOperation>(3);
constexpr auto kVecOpNorm = static_cast<VecOperation>(5);
constexpr auto kVecOpTDot = static_cast<VecOperation>(6);

void make_reproducible(::Vec v) {
  petsc_call(VecSetOperation(v, kVecOpDot, reinterpret_cast<void (*)(void)>(reproducible_vec_dot)),
             "VecSetOperation");
  petsc_call(VecSetOperation(v, kVecOpTDot, reinterpret_cast<void (*)(void)>(reproducible_vec_dot)),
             "VecSetOperation");
  petsc_call(VecSetOperation(v, kVecOpNorm, reinterpret_cast<void (*)(void)>(reproducible_vec_norm)),
             "VecSetOperation");
}

ShellKsp::ShellKsp(MPI_Comm comm, const char* default_type, const char* default_pc) : comm_(comm) {
  petsc_call(KSPCreate(comm, &ksp_), "KSPCreate");
  petsc_call(KSPSetType(ksp_, default_type), "KSPSetType");
  PC pc = nullptr;
  petsc_call(KSPGetPC(ksp_, &pc), "KSPGetPC");
  petsc_call(PCSetType(pc, default_pc), "PCSetType");
  petsc_call(KSPSetInitialGuessNonzero(ksp_, PETSC_TRUE), "KSPSetInitialGuessNonzero");
  petsc_call(KSPConvergedDefaultSetUIRNorm(ksp_), "KSPConvergedDefaultSetUIRNorm");
  petsc_call(KSPSetNormType(ksp_, KSP_NORM_UNPRECONDITIONED), "KSPSetNormType");  // tolerances in b's units
  petsc_call(KSPSetFromOptions(ksp_), "KSPSetFromOptions");
  PetscBool shell = PETSC_FALSE;  // the default or -pc_type shell: the method's preconditioner
  petsc_call(PetscObjectTypeCompare(reinterpret_cast<PetscObject>(pc), PCSHELL, &shell),
             "PetscObjectTypeCompare");
  if (shell) {
    petsc_call(PCShellSetContext(pc, this), "PCShellSetContext");
    petsc_call(PCShellSetApply(pc, &ShellKsp::apply_preconditioner), "PCShellSetApply");
    petsc_call(PCShellSetName(pc, "method"), "PCShellSetName");
  }
}

ShellKsp::~ShellKsp() {
  if (ksp_) KSPDestroy(&ksp_);
  if (shell_) MatDestroy(&shell_);
  if (b_) VecDestroy(&b_);
  if (x_) VecDestroy(&x_);
}

void ShellKsp::resize(std::size_t n) {
  int changed = !shell_ || n != n_;  // recreating is collective: any rank's new size decides
  MPI_Allreduce(MPI_IN_PLACE, &changed, 1, MPI_INT, MPI_MAX, comm_);
  if (!changed) return;
  if (shell_) {  // a new size: the KSP keeps its type and options, drops its work vectors and PC data
    petsc_call(KSPReset(ksp_), "KSPReset");
    MatDestroy(&shell_), VecDestroy(&b_), VecDestroy(&x_);
  }
  n_ = n;
  const auto local = static_cast<PetscInt>(n);
  petsc_call(MatCreateShell(comm_, local, local, PETSC_DETERMINE, PETSC_DETERMINE, this, &shell_),
             "MatCreateShell");
  petsc_call(MatShellSetOperation(shell_, MATOP_MULT, reinterpret_cast<void (*)(void)>(&ShellKsp::mult)),
             "MatShellSetOperation");
  petsc_call(
      MatShellSetOperation(shell_, MATOP_GET_DIAGONAL, reinterpret_cast<void (*)(void)>(&ShellKsp::diagonal)),
      "MatShellSetOperation");
  petsc_call(VecCreateMPI(comm_, local, PETSC_DETERMINE, &b_), "VecCreateMPI");
  make_reproducible(b_);
  petsc_call(VecDuplicate(b_, &x_), "VecDuplicate");
  make_reproducible(x_);
  petsc_call(MatShellSetVecType(shell_, VECMPI), "MatShellSetVecType");
}

namespace {

// y = f(x) on the vectors' local arrays (the shell product and the shell preconditioner).
template <class Function>
PetscErrorCode apply_on_arrays(const Function& f, ::Vec x, ::Vec y) {
  const PetscScalar* in = nullptr;
  PetscScalar* out = nullptr;
  PetscCall(VecGetArrayRead(x, &in));
  PetscCall(VecGetArray(y, &out));
  f(in, out);
  PetscCall(VecRestoreArray(y, &out));
  PetscCall(VecRestoreArrayRead(x, &in));
  return 0;
}

}  // namespace

PetscErrorCode ShellKsp::mult(::Mat A, ::Vec x, ::Vec y) {
  ShellKsp* self = nullptr;
  PetscCall(MatShellGetContext(A, &self));
  return apply_on_arrays(*self->product_, x, y);
}

PetscErrorCode ShellKsp::diagonal(::Mat A, ::Vec d) {
  ShellKsp* self = nullptr;
  PetscCall(MatShellGetContext(A, &self));
  PetscScalar* out = nullptr;
  PetscCall(VecGetArray(d, &out));
  std::copy_n(self->diagonal_, self->n_, out);  // copy_n: a rank with no unknowns has null arrays
  PetscCall(VecRestoreArray(d, &out));
  return 0;
}

PetscErrorCode ShellKsp::apply_preconditioner(PC pc, ::Vec r, ::Vec z) {
  ShellKsp* self = nullptr;
  PetscCall(PCShellGetContext(pc, &self));
  if (!self->preconditioner_) return VecCopy(r, z);
  return apply_on_arrays(*self->preconditioner_, r, z);
}

KspOutcome ShellKsp::solve(std::size_t n, const Product& product, const Real* diagonal, const Real* b,
                           Real* x, Real rtol, Real atol, int max_iterations,
                           const Preconditioner* preconditioner) {
  resize(n);
  product_ = &product;
  diagonal_ = diagonal;
  preconditioner_ = preconditioner;
  PetscScalar* at = nullptr;
  petsc_call(VecGetArray(b_, &at), "VecGetArray");
  std::copy_n(b, n, at);
  petsc_call(VecRestoreArray(b_, &at), "VecRestoreArray");
  petsc_call(VecGetArray(x_, &at), "VecGetArray");
  std::copy_n(x, n, at);
  petsc_call(VecRestoreArray(x_, &at), "VecRestoreArray");
  // A new state of the operator, so that the preconditioner reads the new diagonal.
  petsc_call(MatAssemblyBegin(shell_, MAT_FINAL_ASSEMBLY), "MatAssemblyBegin");
  petsc_call(MatAssemblyEnd(shell_, MAT_FINAL_ASSEMBLY), "MatAssemblyEnd");
  petsc_call(KSPSetOperators(ksp_, shell_, shell_), "KSPSetOperators");
  petsc_call(KSPSetTolerances(ksp_, rtol, atol, PETSC_DEFAULT, max_iterations), "KSPSetTolerances");
  petsc_call(KSPSolve(ksp_, b_, x_), "KSPSolve");
  KspOutcome outcome;
  PetscInt iterations = 0;
  KSPConvergedReason reason;
  petsc_call(KSPGetIterationNumber(ksp_, &iterations), "KSPGetIterationNumber");
  petsc_call(KSPGetConvergedReason(ksp_, &reason), "KSPGetConvergedReason");
  outcome.iterations = static_cast<int>(iterations);
  outcome.converged = reason > 0;
  outcome.reason = KSPConvergedReasons[reason];
  petsc_call(VecGetArray(x_, &at), "VecGetArray");
  std::copy_n(at, n, x);
  petsc_call(VecRestoreArray(x_, &at), "VecRestoreArray");
  return outcome;
}

}  // namespace nendo
