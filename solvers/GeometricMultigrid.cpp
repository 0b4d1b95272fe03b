#include "solvers/GeometricMultigrid.hpp"

#include <vector>

#include "solvers/AssembledMatrix.hpp"
#include "solvers/PetscCall.hpp"

namespace nendo {

GeometricMultigrid::~GeometricMultigrid() { destroy(); }

void GeometricMultigrid::destroy() {
  MatDestroy(&interpolation_), MatDestroy(&coarse_);
  VecDestroy(&unreached_), VecDestroy(&coarse_diagonal_);
}

void GeometricMultigrid::set_defaults(PC pc) {
  petsc_call(PCSetType(pc, PCMG), "PCSetType(mg)");
  petsc_call(PCMGSetLevels(pc, 2, nullptr), "PCMGSetLevels");
  KSP smoother = nullptr, coarse = nullptr;
  PC smoother_pc = nullptr, coarse_pc = nullptr;
  petsc_call(PCMGGetSmoother(pc, 1, &smoother), "PCMGGetSmoother");
  petsc_call(KSPSetType(smoother, KSPCHEBYSHEV), "KSPSetType(chebyshev)");
  petsc_call(KSPGetPC(smoother, &smoother_pc), "KSPGetPC");
  petsc_call(PCSetType(smoother_pc, PCJACOBI), "PCSetType(jacobi)");  // the matrix-free diagonal
  petsc_call(PCMGGetCoarseSolve(pc, &coarse), "PCMGGetCoarseSolve");
  petsc_call(KSPSetType(coarse, KSPPREONLY), "KSPSetType(preonly)");
  petsc_call(KSPGetPC(coarse, &coarse_pc), "KSPGetPC");
  petsc_call(PCSetType(coarse_pc, PCGAMG), "PCSetType(gamg)");
  // Unsmoothed aggregation, as for nendo's assembled operators (NewtonSolver::create_ksp).
  petsc_call(PCGAMGSetNSmooths(coarse_pc, 0), "PCGAMGSetNSmooths");
}

void GeometricMultigrid::setup(PC pc, const DofMap& fine, CoarseSpace& coarse) {
  destroy();
  MPI_Comm comm = fine.comm();
  const int bs = coarse.block_size();
  const PetscInt n = coarse.owned_nodes() * bs, width = coarse.interpolation_width();
  // AIJ with the block size: PETSc's Galerkin products (-pc_mg_galerkin) take no BAIJ.
  petsc_call(MatCreateAIJ(comm, fine.local_size(), n, PETSC_DETERMINE, PETSC_DETERMINE, bs * width, nullptr,
                          bs * width, nullptr, &interpolation_),
             "MatCreateAIJ(interpolation)");
  petsc_call(MatSetBlockSizes(interpolation_, bs, bs), "MatSetBlockSizes");
  coarse.interpolation(interpolation_);
  petsc_call(MatAssemblyBegin(interpolation_, MAT_FINAL_ASSEMBLY), "MatAssemblyBegin");
  petsc_call(MatAssemblyEnd(interpolation_, MAT_FINAL_ASSEMBLY), "MatAssemblyEnd");

  // The coarse matrix: AIJ, which GAMG (PETSc 3.18) can coarsen, unlike BAIJ.
  coarse_ = preallocated_matrix(comm, n, bs, MATAIJ, "mg_coarse_",
                                [&](::Mat pattern) { coarse.assemble(pattern); });
  std::vector<Real> xyz(static_cast<std::size_t>(n));
  coarse.coordinates(xyz.data());
  attach_rigid_body_modes(coarse_, comm, n, bs, xyz.data());  // GAMG's near null space
  petsc_call(MatCreateVecs(coarse_, &unreached_, &coarse_diagonal_), "MatCreateVecs");
  petsc_call(PCMGSetInterpolation(pc, 1, interpolation_), "PCMGSetInterpolation");
  KSP coarse_ksp = nullptr;
  petsc_call(PCMGGetCoarseSolve(pc, &coarse_ksp), "PCMGGetCoarseSolve");
  petsc_call(KSPSetOperators(coarse_ksp, coarse_, coarse_), "KSPSetOperators(coarse)");
}

void GeometricMultigrid::update(CoarseSpace& coarse) {
  petsc_call(MatZeroEntries(coarse_), "MatZeroEntries");
  coarse.assemble(coarse_);
  petsc_call(MatAssemblyBegin(coarse_, MAT_FINAL_ASSEMBLY), "MatAssemblyBegin");
  petsc_call(MatAssemblyEnd(coarse_, MAT_FINAL_ASSEMBLY), "MatAssemblyEnd");
  // A coarse unknown that nothing reaches gets 1 on the diagonal, so the matrix stays definite.
  petsc_call(MatGetDiagonal(coarse_, coarse_diagonal_), "MatGetDiagonal");
  PetscScalar* add = nullptr;
  const PetscScalar* diagonal = nullptr;
  PetscInt n = 0;
  petsc_call(VecGetLocalSize(coarse_diagonal_, &n), "VecGetLocalSize");
  petsc_call(VecGetArray(unreached_, &add), "VecGetArray");
  petsc_call(VecGetArrayRead(coarse_diagonal_, &diagonal), "VecGetArrayRead");
  for (PetscInt i = 0; i < n; ++i) add[i] = diagonal[i] == 0 ? 1 : 0;
  petsc_call(VecRestoreArrayRead(coarse_diagonal_, &diagonal), "VecRestoreArrayRead");
  petsc_call(VecRestoreArray(unreached_, &add), "VecRestoreArray");
  petsc_call(MatDiagonalSet(coarse_, unreached_, ADD_VALUES), "MatDiagonalSet");
}

}  // namespace nendo
