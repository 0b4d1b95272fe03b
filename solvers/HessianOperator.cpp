#include "solvers/HessianOperator.hpp"

#include <exception>
#include <vector>

#include "core/Error.hpp"
#include "solvers/AssembledMatrix.hpp"
#include "solvers/PetscCall.hpp"

namespace nendo {

HessianOperator::~HessianOperator() {
  if (mat_) MatDestroy(&mat_);
}

namespace {

// An exception must not cross PETSc's C frames: it becomes an error code, and the message is
// kept for the solver to rethrow.
template <class F>
PetscErrorCode guarded(F&& f) {
  try {
    f();
    return 0;
  } catch (const std::exception& e) {
    PetscPrintf(PETSC_COMM_SELF, "nendo: %s\n", e.what());
    return PETSC_ERR_LIB;
  }
}

class ShellHessian final : public HessianOperator {
 public:
  void setup(NewtonProblem& problem) override {
    if (mat_) MatDestroy(&mat_);
    const DofMap& dofs = problem.dofs();
    MPI_Comm comm = dofs.comm();
    petsc_call(MatCreateShell(comm, dofs.local_size(), dofs.local_size(), PETSC_DETERMINE, PETSC_DETERMINE,
                              &problem, &mat_),
               "MatCreateShell");
    petsc_call(MatShellSetOperation(mat_, MATOP_MULT, reinterpret_cast<void (*)(void)>(&mult)),
               "MatShellSetOperation(MULT)");
    petsc_call(MatShellSetOperation(mat_, MATOP_GET_DIAGONAL, reinterpret_cast<void (*)(void)>(&diagonal)),
               "MatShellSetOperation(GET_DIAGONAL)");
    petsc_call(MatSetBlockSize(mat_, dofs.block_size()), "MatSetBlockSize");
    petsc_call(MatSetOption(mat_, MAT_SYMMETRIC, PETSC_TRUE), "MatSetOption(SYMMETRIC)");
  }
  // The product reads the problem's caches (the problem may be a new object of the same layout);
  // the object state must change (an assembly does that) so that the PC recomputes the diagonal.
  void update(NewtonProblem& problem) override {
    petsc_call(MatShellSetContext(mat_, &problem), "MatShellSetContext");
    petsc_call(MatAssemblyBegin(mat_, MAT_FINAL_ASSEMBLY), "MatAssemblyBegin");
    petsc_call(MatAssemblyEnd(mat_, MAT_FINAL_ASSEMBLY), "MatAssemblyEnd");
  }

 private:
  static NewtonProblem& problem_of(::Mat A) {
    void* context = nullptr;
    MatShellGetContext(A, &context);
    return *static_cast<NewtonProblem*>(context);
  }
  static PetscErrorCode mult(::Mat A, Vec x, Vec y) {
    const PetscScalar* in = nullptr;
    PetscScalar* out = nullptr;
    PetscCall(VecGetArrayRead(x, &in));
    PetscCall(VecGetArray(y, &out));
    const PetscErrorCode code = guarded([&] { problem_of(A).apply(in, out); });
    PetscCall(VecRestoreArray(y, &out));
    PetscCall(VecRestoreArrayRead(x, &in));
    return code;
  }
  static PetscErrorCode diagonal(::Mat A, Vec d) {
    PetscScalar* out = nullptr;
    PetscCall(VecGetArray(d, &out));
    const PetscErrorCode code = guarded([&] { problem_of(A).diagonal(out); });
    PetscCall(VecRestoreArray(d, &out));
    return code;
  }
};

class AssembledHessian final : public HessianOperator {
 public:
  void setup(NewtonProblem& problem) override {
    if (mat_) MatDestroy(&mat_);
    const DofMap& dofs = problem.dofs();
    mat_ = preallocated_matrix(dofs.comm(), dofs.local_size(), dofs.block_size(), matrix_type_, nullptr,
                               [&](::Mat pattern) { problem.assemble(pattern); });
    std::vector<Real> xyz(static_cast<std::size_t>(dofs.local_size()));
    int has = problem.coordinates(xyz.data()) ? 1 : 0, all = 0;
    MPI_Allreduce(&has, &all, 1, MPI_INT, MPI_MIN, dofs.comm());
    if (all) attach_rigid_body_modes(mat_, dofs.comm(), dofs.local_size(), dofs.block_size(), xyz.data());
  }
  void update(NewtonProblem& problem) override {
    petsc_call(MatZeroEntries(mat_), "MatZeroEntries");
    problem.assemble(mat_);
    petsc_call(MatAssemblyBegin(mat_, MAT_FINAL_ASSEMBLY), "MatAssemblyBegin");
    petsc_call(MatAssemblyEnd(mat_, MAT_FINAL_ASSEMBLY), "MatAssemblyEnd");
  }
};

}  // namespace

std::unique_ptr<HessianOperator> make_hessian_operator(const std::string& type) {
  if (type == "matrix_free") return std::make_unique<ShellHessian>();
  if (type == "assembled") return std::make_unique<AssembledHessian>();
  throw Error("implicit.operator '" + type + "' is not one of matrix_free, assembled");
}

}  // namespace nendo
