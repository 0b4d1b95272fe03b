// The fem implicit solve's geometric multigrid on the tet hierarchy (issue 30 item 5;
// FemCoarseSpace, solvers/GeometricMultigrid): on an adaptive mesh with hanging nodes, split over
// the ranks (a 0.8 m beam in two blocks; ranks 3 and 4 own nothing),
//   - the coarse operator is exactly the Galerkin product Pᵀ A P of the assembled fine Hessian, and
//     P maps the coarse level's own nodes to themselves (the spaces are nested);
//   - multigrid ends where CG + Jacobi ends, to the Newton tolerance, with a twentieth of the
//     Krylov iterations, and with the same iteration counts on every rank count (as one rank).
#include <gtest/gtest.h>
#include <petscksp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "materials/StvkMaterial.hpp"
#include "methods/fem/FemBackwardEuler.hpp"
#include "methods/fem/HierarchicalFem.hpp"
#include "solvers/AssembledMatrix.hpp"
#include "solvers/GeometricMultigrid.hpp"
#include "support/MethodRun.hpp"
#include "support/PetscEnvironment.hpp"
#include "support/ReferenceRun.hpp"

namespace nendo {
namespace {

// Static steps of 100 s under gravity (backward Euler; the inertia is 1e-5 of the stiffness): the
// strain-recovery indicator refines towards the clamp, one level per step, leaving hanging nodes.
const std::string kBeam =
    "nendo: 1\nmethod: fem\ndimension: 3\ngravity: [0, 0, -9.81]\n"
    "time: {end: 300, dt: 100, integrator: implicit}\ngrid: {dx: 0.22, block: 3}\n"
    "materials: {beam: {model: stvk, E: 3.2e7, nu: 0.3, density: 1000}}\n"
    "bodies: [{shape: box, material: beam, min: [0, 0, 0], max: [0.8, 0.1, 0.1], fixed_min: [-1, -1, -1], "
    "fixed_max: [0, 1, 1]}]\n"
    "fem: {spacing: 0.05, max_level: 2, error_tolerance: 0.003}\n"
    "implicit: {operator: matrix_free, newton_tol: 1.0e-9}\n";

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

struct BeamRun {
  std::vector<Real> x;  // 3 per node, by hierarchy node id (0 where inactive)
  long newton = 0, krylov = 0;
  long hanging = 0, owned_max = 0, owned_total = 0;
  int levels = 0;  // the finest active level
};

BeamRun run_beam(MPI_Comm comm, const std::string& preconditioner, int steps) {
  testing::MethodRun run(comm, kBeam, {"implicit.preconditioner=" + preconditioner});
  BeamRun out;
  for (int k = 0; k < steps; ++k) {
    run.step();
    const SolverStats* stats = run.method->solver_stats();
    out.newton += stats->newton_iterations;
    out.krylov += stats->ksp_iterations;
  }
  const auto& fem = static_cast<const HierarchicalFem&>(*run.method);
  const ParticleSet& ps = run.space->particles();
  const fem::TetHierarchy whole = fem.whole_hierarchy();
  out.x.assign(3 * whole.node_count(), 0.0);
  for (std::size_t p = 0; p < ps.size(); ++p) {
    std::copy_n(ps.positions() + 3 * p, 3, &out.x[3 * ps.ids()[p]]);
    out.hanging += ps.int32("status")[p] == static_cast<std::int32_t>(fem::NodeStatus::Hanging);
  }
  MPI_Allreduce(MPI_IN_PLACE, out.x.data(), static_cast<int>(out.x.size()), MPI_DOUBLE, MPI_SUM, comm);
  MPI_Allreduce(MPI_IN_PLACE, &out.hanging, 1, MPI_LONG, MPI_SUM, comm);
  long owned = static_cast<long>(ps.size());
  MPI_Allreduce(&owned, &out.owned_max, 1, MPI_LONG, MPI_MAX, comm);
  MPI_Allreduce(&owned, &out.owned_total, 1, MPI_LONG, MPI_SUM, comm);
  for (fem::Index t : fem.active_tets()) out.levels = std::max(out.levels, static_cast<int>(whole.level[t]));
  return out;
}

TEST(FemMultigrid, EndsWhereJacobiEndsWithAFractionOfTheKrylovIterations) {
  const BeamRun jacobi = run_beam(MPI_COMM_WORLD, "jacobi", 3),
                multigrid = run_beam(MPI_COMM_WORLD, "multigrid", 3);
  EXPECT_EQ(multigrid.levels, 2);
  EXPECT_GT(multigrid.hanging, 0);
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) {
    EXPECT_LT(multigrid.owned_max, multigrid.owned_total);  // the beam is split
  }
  Real sag = 0, gap = 0;
  for (std::size_t i = 2; i < jacobi.x.size(); i += 3) sag = std::max(sag, 0.1 - jacobi.x[i]);
  for (std::size_t i = 0; i < jacobi.x.size(); ++i)
    gap = std::max(gap, std::abs(jacobi.x[i] - multigrid.x[i]));
  EXPECT_GT(sag, 0.01);                         // centimetres
  EXPECT_LT(gap, 1e-6 * sag) << "sag " << sag;  // the Newton tolerance, not the preconditioner, decides
  // Measured: 55 against 3,430 Krylov iterations in 20 and 23 Newton iterations.
  EXPECT_LT(multigrid.krylov * 20, jacobi.krylov) << multigrid.krylov << " against " << jacobi.krylov;
  // An exact coarsest solve (the level-0 mesh): the same iterations as rank 0 alone finds.
  long alone[2] = {0, 0};
  testing::on_rank0(MPI_COMM_WORLD, [&] {
    const BeamRun one = run_beam(MPI_COMM_SELF, "multigrid", 3);
    alone[0] = one.newton, alone[1] = one.krylov;
  });
  MPI_Bcast(alone, 2, MPI_LONG, 0, MPI_COMM_WORLD);
  EXPECT_EQ(multigrid.newton, alone[0]);
  EXPECT_EQ(multigrid.krylov, alone[1]);
}

// Issue 30 item 6: the Krylov iterations per Newton iteration (each solve to the fixed relative
// tolerance 1e-4) stay within a factor 1.5 from 28 to 680 times the explicit step (1.8e-5 s at
// level 2) and over two mesh levels. Measured 4.5-6.3 per Newton iteration (level 3, not run here:
// 5.5-6.7).
TEST(FemMultigrid, IterationsDoNotGrowWithTheStepOrTheResolution) {
  const std::string uniform =
      "nendo: 1\nmethod: fem\ndimension: 3\ngravity: [0, 0, -9.81]\n"
      "time: {end: 1, dt: 1.0e-3, integrator: implicit}\ngrid: {dx: 0.22, block: 3}\n"
      "materials: {beam: {model: stvk, E: 1.0e7, nu: 0.3, density: 1000}}\n"
      "bodies: [{shape: box, material: beam, min: [0, 0, 0], max: [0.8, 0.1, 0.1], fixed_min: [-1, -1, -1], "
      "fixed_max: [0, 1, 1]}]\n"
      "fem: {spacing: 0.05}\nimplicit: {operator: matrix_free, forcing: fixed}\n";
  Real fewest = 1e300, most = 0;
  for (const char* level : {"1", "2"})
    for (const char* dt : {"5.0e-4", "1.2e-2"}) {
      testing::MethodRun run(MPI_COMM_WORLD, uniform,
                             {std::string("fem.min_level=") + level, std::string("fem.max_level=") + level,
                              std::string("time.dt=") + dt});
      long newton = 0, krylov = 0;
      for (int k = 0; k < 2; ++k) {
        run.step();
        newton += run.method->solver_stats()->newton_iterations;
        krylov += run.method->solver_stats()->ksp_iterations;
      }
      const Real per_newton = static_cast<Real>(krylov) / static_cast<Real>(newton);
      if (world_rank() == 0)
        std::printf("[multigrid ] level %s dt %s: %.2f CG per Newton\n", level, dt, per_newton);
      fewest = std::min(fewest, per_newton), most = std::max(most, per_newton);
    }
  EXPECT_LE(most, 1.5 * fewest);
}

// After the adaptive steps: the coarse matrix against PETSc's Galerkin product of the assembled
// fine Hessian at the same linearisation point.
TEST(FemMultigrid, CoarseOperatorIsTheGalerkinProductOfTheFineHessian) {
  testing::MethodRun run(MPI_COMM_WORLD, kBeam);
  run.advance(3);
  auto& fem = static_cast<HierarchicalFem&>(*run.method);
  fem.restore(*run.space, fem.save_state());  // the view of the migrated particles
  fem::FemBackwardEuler problem(fem, *run.space, 100);
  const DofMap& dofs = problem.dofs();
  std::vector<Real> v(static_cast<std::size_t>(dofs.local_size())), gradient(v.size());
  problem.initial_guess(v.data());
  problem.linearize(v.data(), gradient.data());
  CoarseSpace* coarse = problem.coarse_space();
  ASSERT_NE(coarse, nullptr);
  EXPECT_EQ(coarse->deeper_levels(), 1);  // levels 1 and 0 below the finest, 2

  KSP ksp = nullptr;
  PC pc = nullptr;
  ASSERT_EQ(KSPCreate(MPI_COMM_WORLD, &ksp), 0);
  KSPGetPC(ksp, &pc);
  GeometricMultigrid::set_defaults(pc);
  ::Mat shell = nullptr;  // the smoother's; no product is taken here
  MatCreateShell(MPI_COMM_WORLD, dofs.local_size(), dofs.local_size(), PETSC_DETERMINE, PETSC_DETERMINE,
                 nullptr, &shell);
  GeometricMultigrid mg;
  mg.setup(pc, dofs, *coarse, shell);
  mg.update(*coarse);

  ::Mat fine = preallocated_matrix(MPI_COMM_WORLD, dofs.local_size(), 3, MATAIJ, "",
                                   [&](::Mat pattern) { problem.assemble(pattern); });
  problem.assemble(fine);
  MatAssemblyBegin(fine, MAT_FINAL_ASSEMBLY), MatAssemblyEnd(fine, MAT_FINAL_ASSEMBLY);
  ::Mat galerkin = nullptr;
  ASSERT_EQ(MatPtAP(fine, mg.interpolation(), MAT_INITIAL_MATRIX, PETSC_DEFAULT, &galerkin), 0);
  PetscReal size = 0, difference = 0;
  MatNorm(mg.coarse_operator(), NORM_FROBENIUS, &size);
  MatAXPY(galerkin, -1.0, mg.coarse_operator(), DIFFERENT_NONZERO_PATTERN);
  MatNorm(galerkin, NORM_FROBENIUS, &difference);
  EXPECT_GT(size, 0);
  EXPECT_LE(difference, 1e-12 * size) << difference << " of " << size;

  // Nested spaces: each row of P sums to 1 where no held node takes a share, and the rows of
  // the coarse level's own nodes are rows of the identity; P 1 is never above 1.
  Vec ones = nullptr, out = nullptr;
  MatCreateVecs(mg.interpolation(), &ones, &out);
  VecSet(ones, 1.0);
  MatMult(mg.interpolation(), ones, out);
  PetscReal most = 0, least = 0;
  VecMax(out, nullptr, &most);
  VecMin(out, nullptr, &least);
  EXPECT_NEAR(most, 1.0, 1e-14);
  EXPECT_GE(least, 0.0);
  VecDestroy(&ones), VecDestroy(&out);
  MatDestroy(&galerkin), MatDestroy(&fine), MatDestroy(&shell);
  KSPDestroy(&ksp);
}

}  // namespace
}  // namespace nendo
