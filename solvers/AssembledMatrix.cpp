#include "solvers/AssembledMatrix.hpp"

#include <algorithm>

#include "solvers/PetscCall.hpp"

namespace nendo {

::Mat preallocated_matrix(MPI_Comm comm, PetscInt n, int bs, const std::string& type, const char* prefix,
                          const std::function<void(::Mat)>& insert) {
  ::Mat pattern = nullptr, A = nullptr;
  petsc_call(MatCreate(comm, &pattern), "MatCreate");
  petsc_call(MatSetType(pattern, MATPREALLOCATOR), "MatSetType(MATPREALLOCATOR)");
  petsc_call(MatSetSizes(pattern, n, n, PETSC_DETERMINE, PETSC_DETERMINE), "MatSetSizes");
  petsc_call(MatSetBlockSize(pattern, bs), "MatSetBlockSize");
  petsc_call(MatSetUp(pattern), "MatSetUp");
  insert(pattern);
  petsc_call(MatAssemblyBegin(pattern, MAT_FINAL_ASSEMBLY), "MatAssemblyBegin");
  petsc_call(MatAssemblyEnd(pattern, MAT_FINAL_ASSEMBLY), "MatAssemblyEnd");

  petsc_call(MatCreate(comm, &A), "MatCreate");
  petsc_call(MatSetSizes(A, n, n, PETSC_DETERMINE, PETSC_DETERMINE), "MatSetSizes");
  petsc_call(MatSetBlockSize(A, bs), "MatSetBlockSize");
  petsc_call(MatSetType(A, type.c_str()), "MatSetType");
  if (prefix) petsc_call(MatSetOptionsPrefix(A, prefix), "MatSetOptionsPrefix");
  petsc_call(MatSetFromOptions(A), "MatSetFromOptions");  // -mat_type aij, ...
  petsc_call(MatPreallocatorPreallocate(pattern, PETSC_TRUE, A), "MatPreallocatorPreallocate");
  MatDestroy(&pattern);
  petsc_call(MatSetOption(A, MAT_SYMMETRIC, PETSC_TRUE), "MatSetOption(SYMMETRIC)");
  petsc_call(MatSetOption(A, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_TRUE), "MatSetOption");
  return A;
}

void attach_rigid_body_modes(::Mat A, MPI_Comm comm, PetscInt n, int bs, const Real* xyz) {
  Vec coordinates = nullptr;
  petsc_call(VecCreateMPI(comm, n, PETSC_DETERMINE, &coordinates), "VecCreateMPI");
  petsc_call(VecSetBlockSize(coordinates, bs), "VecSetBlockSize");
  PetscScalar* c = nullptr;
  petsc_call(VecGetArray(coordinates, &c), "VecGetArray");
  std::copy(xyz, xyz + n, c);
  petsc_call(VecRestoreArray(coordinates, &c), "VecRestoreArray");
  MatNullSpace modes = nullptr;
  petsc_call(MatNullSpaceCreateRigidBody(coordinates, &modes), "MatNullSpaceCreateRigidBody");
  petsc_call(MatSetNearNullSpace(A, modes), "MatSetNearNullSpace");
  MatNullSpaceDestroy(&modes);
  VecDestroy(&coordinates);
}

}  // namespace nendo
