#include "solvers/GeometricMultigrid.hpp"

#include <functional>
#include <vector>

#include "solvers/AssembledMatrix.hpp"
#include "solvers/PetscCall.hpp"

namespace nendo {

GeometricMultigrid::~GeometricMultigrid() { destroy(); }

void GeometricMultigrid::destroy() {
  MatDestroy(&interpolation_), MatDestroy(&coarse_), MatDestroy(&smoother_operator_);
  for (Level& level : deeper_) MatDestroy(&level.interpolation), MatDestroy(&level.op);
  deeper_.clear();
  VecDestroy(&unreached_), VecDestroy(&coarse_diagonal_);
}

namespace {

// Nendo's level smoother: Chebyshev + Jacobi (on a shell, the matrix-free diagonal).
void default_smoother(KSP smoother) {
  PC pc = nullptr;
  petsc_call(KSPSetType(smoother, KSPCHEBYSHEV), "KSPSetType(chebyshev)");
  petsc_call(KSPGetPC(smoother, &pc), "KSPGetPC");
  petsc_call(PCSetType(pc, PCJACOBI), "PCSetType(jacobi)");
}

// One GAMG V-cycle with unsmoothed aggregation, as for nendo's assembled operators
// (NewtonSolver::create_ksp), or an exact solve: Cholesky, redundant on every rank.
void default_coarse_solve(KSP coarse, bool exact) {
  PC pc = nullptr;
  petsc_call(KSPSetType(coarse, KSPPREONLY), "KSPSetType(preonly)");
  petsc_call(KSPGetPC(coarse, &pc), "KSPGetPC");
  if (exact) {
    petsc_call(PCSetType(pc, PCREDUNDANT), "PCSetType(redundant)");
    KSP inner = nullptr;
    PC inner_pc = nullptr;
    petsc_call(PCRedundantGetKSP(pc, &inner), "PCRedundantGetKSP");
    petsc_call(KSPGetPC(inner, &inner_pc), "KSPGetPC");
    petsc_call(PCSetType(inner_pc, PCCHOLESKY), "PCSetType(cholesky)");
  } else {
    petsc_call(PCSetType(pc, PCGAMG), "PCSetType(gamg)");
    petsc_call(PCGAMGSetNSmooths(pc, 0), "PCGAMGSetNSmooths");
  }
}

KSP level_solver(PC pc, PetscInt level) {  // level 0: the coarse solve
  KSP ksp = nullptr;
  petsc_call(PCMGGetSmoother(pc, level, &ksp), "PCMGGetSmoother");
  return ksp;
}

::Mat interpolation_matrix(MPI_Comm comm, PetscInt fine_rows, PetscInt coarse_columns, int bs, PetscInt width,
                           const std::function<void(::Mat)>& insert) {
  ::Mat P = nullptr;
  // AIJ with the block size: PETSc's Galerkin products take no BAIJ.
  petsc_call(MatCreateAIJ(comm, fine_rows, coarse_columns, PETSC_DETERMINE, PETSC_DETERMINE, bs * width,
                          nullptr, bs * width, nullptr, &P),
             "MatCreateAIJ(interpolation)");
  petsc_call(MatSetBlockSizes(P, bs, bs), "MatSetBlockSizes");
  insert(P);
  petsc_call(MatAssemblyBegin(P, MAT_FINAL_ASSEMBLY), "MatAssemblyBegin");
  petsc_call(MatAssemblyEnd(P, MAT_FINAL_ASSEMBLY), "MatAssemblyEnd");
  return P;
}

}  // namespace

void GeometricMultigrid::set_defaults(PC pc) {
  petsc_call(PCSetType(pc, PCMG), "PCSetType(mg)");
  petsc_call(PCMGSetLevels(pc, 2, nullptr), "PCMGSetLevels");
  default_smoother(level_solver(pc, 1));
  default_coarse_solve(level_solver(pc, 0), false);
}

// A space with deeper levels, or one whose coarsest level is solved best exactly, gets its own
// number of levels and nendo's defaults on each, then the options database again.
void GeometricMultigrid::configure_levels(PC pc, int levels, bool exact) {
  petsc_call(PCMGSetLevels(pc, levels, nullptr), "PCMGSetLevels");
  for (int l = 1; l < levels; ++l) {
    default_smoother(level_solver(pc, l));
    petsc_call(KSPSetFromOptions(level_solver(pc, l)), "KSPSetFromOptions(smoother)");
  }
  default_coarse_solve(level_solver(pc, 0), exact);
  petsc_call(KSPSetFromOptions(level_solver(pc, 0)), "KSPSetFromOptions(coarse)");
}

void GeometricMultigrid::setup(PC pc, const DofMap& fine, CoarseSpace& coarse, ::Mat fine_operator) {
  destroy();
  MPI_Comm comm = fine.comm();
  const int bs = coarse.block_size(), deeper = coarse.deeper_levels(), levels = 2 + deeper;
  const PetscInt n = coarse.owned_nodes() * bs, width = coarse.interpolation_width();
  PetscInt coarsest = (deeper > 0 ? coarse.deeper_nodes(deeper) : coarse.owned_nodes()) * bs;
  MPI_Allreduce(MPI_IN_PLACE, &coarsest, 1, MPIU_INT, MPI_SUM, comm);
  const bool exact = coarse.exact_coarse_solve_helps() && coarsest <= kExactCoarseUnknowns;
  if (levels > 2 || exact) configure_levels(pc, levels, exact);

  interpolation_ =
      interpolation_matrix(comm, fine.local_size(), n, bs, width, [&](::Mat P) { coarse.interpolation(P); });
  petsc_call(PCMGSetInterpolation(pc, levels - 1, interpolation_), "PCMGSetInterpolation");
  PetscInt rows = n;
  for (int k = 1; k <= deeper; ++k) {
    const PetscInt columns = coarse.deeper_nodes(k) * bs;
    deeper_.push_back({interpolation_matrix(comm, rows, columns, bs, width,
                                            [&](::Mat P) { coarse.deeper_interpolation(k, P); }),
                       nullptr});
    petsc_call(PCMGSetInterpolation(pc, levels - 1 - k, deeper_.back().interpolation),
               "PCMGSetInterpolation");
    rows = columns;
  }

  // The coarse matrix: AIJ, which GAMG (PETSc 3.18) can coarsen, unlike BAIJ.
  coarse_ = preallocated_matrix(comm, n, bs, MATAIJ, "mg_coarse_",
                                [&](::Mat pattern) { coarse.assemble(pattern); });
  std::vector<Real> xyz(static_cast<std::size_t>(n));
  coarse.coordinates(xyz.data());
  attach_rigid_body_modes(coarse_, comm, n, bs, xyz.data());  // GAMG's near null space
  petsc_call(MatCreateVecs(coarse_, &unreached_, &coarse_diagonal_), "MatCreateVecs");
  petsc_call(KSPSetOperators(level_solver(pc, levels - 2), coarse_, coarse_), "KSPSetOperators(coarse)");
  pc_ = pc;

  // The smoother's own view of the fine operator (PCMG keeps a finest-level operator that is not
  // the PC's own).
  petsc_call(MatCreateShell(comm, fine.local_size(), fine.local_size(), PETSC_DETERMINE, PETSC_DETERMINE,
                            fine_operator, &smoother_operator_),
             "MatCreateShell(smoother)");
  petsc_call(
      MatShellSetOperation(smoother_operator_, MATOP_MULT, reinterpret_cast<void (*)(void)>(&smoother_mult)),
      "MatShellSetOperation(MULT)");
  petsc_call(MatShellSetOperation(smoother_operator_, MATOP_GET_DIAGONAL,
                                  reinterpret_cast<void (*)(void)>(&smoother_diagonal)),
             "MatShellSetOperation(GET_DIAGONAL)");
  petsc_call(MatSetBlockSize(smoother_operator_, fine.block_size()), "MatSetBlockSize");
  petsc_call(MatSetOption(smoother_operator_, MAT_SYMMETRIC, PETSC_TRUE), "MatSetOption(SYMMETRIC)");
  petsc_call(KSPSetOperators(level_solver(pc, levels - 1), smoother_operator_, smoother_operator_),
             "KSPSetOperators(smoother)");
}

PetscErrorCode GeometricMultigrid::smoother_mult(::Mat A, Vec x, Vec y) {
  void* fine = nullptr;
  PetscCall(MatShellGetContext(A, &fine));
  return MatMult(static_cast<::Mat>(fine), x, y);
}

PetscErrorCode GeometricMultigrid::smoother_diagonal(::Mat A, Vec d) {
  void* fine = nullptr;
  PetscCall(MatShellGetContext(A, &fine));
  return MatGetDiagonal(static_cast<::Mat>(fine), d);
}

void GeometricMultigrid::update(CoarseSpace& coarse) {
  // A shell's assembly only advances its state: the smoother sets up again at its next solve.
  petsc_call(MatAssemblyBegin(smoother_operator_, MAT_FINAL_ASSEMBLY), "MatAssemblyBegin");
  petsc_call(MatAssemblyEnd(smoother_operator_, MAT_FINAL_ASSEMBLY), "MatAssemblyEnd");
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
  // The deeper levels' Galerkin products, each from the one above (PCMG level numbers count up
  // from the coarsest).
  PetscInt level = 0;
  petsc_call(PCMGGetLevels(pc_, &level), "PCMGGetLevels");
  level -= 2;
  ::Mat above = coarse_;
  for (Level& deeper : deeper_) {
    const bool first = deeper.op == nullptr;
    petsc_call(MatPtAP(above, deeper.interpolation, first ? MAT_INITIAL_MATRIX : MAT_REUSE_MATRIX,
                       PETSC_DEFAULT, &deeper.op),
               "MatPtAP");
    if (first)
      petsc_call(KSPSetOperators(level_solver(pc_, --level), deeper.op, deeper.op), "KSPSetOperators");
    else
      --level;
    above = deeper.op;
  }
}

}  // namespace nendo
