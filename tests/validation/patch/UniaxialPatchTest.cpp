// validation.md §5, first bullet: the uniaxial-stress patch test (CB-Geo benchmark). One cell,
// 4 particles, bottom fixed, top moved at v_y = −0.01 for 10 steps of 0.01, E = 1000, ν = 0:
// σ_yy = −1.000, σ_xx = 0.
//
// CB-Geo's linear hat functions see only the 4 corner nodes of the cell. nendo's B-splines see
// the 3 (quadratic) or 4 (cubic) nearest nodes per axis, rows y = −1, 0, 1, 2 here, so the grid
// velocity is linear only if every one of those rows moves with the linear field
// v_y(y) = −0.01 y / h: row 0 fixed (the bottom), row 1 at −0.01 (the top), and the rows −1 and 2
// outside the cell at +0.01 and −0.02. Each row is a solid box collider around it, moving at its
// row's velocity, with a slip boundary: it prescribes v_y (the box's nearest face is horizontal)
// and leaves v_x to the momentum balance. B-splines reproduce linear fields, so
// L = ∇v = diag(0, −0.01/h) at every particle.
//
// nendo updates F multiplicatively, F ← (I + Δt L) F (spec 002 §7.2), so after n steps
// F_yy = (1 − 0.01 Δt/h)^n, and linear elasticity with ν = 0 gives σ_yy = E (F_yy − 1)
// (σ = P F^T / J with J = F_yy, P_yy = E (F_yy − 1)). After 10 steps: −0.99955011998...,
// not CB-Geo's −1 (which sums strain increments additively: E Σ Δt ε̇ = −1 exactly); both print
// as −1.000.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "MpmHarness.hpp"
#include "ValidationCsv.hpp"

namespace nendo {
namespace {

using testing::MpmRun;

constexpr Real kYoung = 1000, kTopVelocity = -0.01, kDt = 0.01, kCell = 1;
constexpr int kSteps = 10;

using testing::write_csv;  // tests/validation/ValidationCsv.hpp

std::string patch_scene(const std::string& kernel) {
  std::ostringstream s;
  s.precision(17);
  s << "nendo: 1\nmethod: mpm\ndimension: 2\ngravity: [0, 0]\n"
    << "time: {end: " << kSteps * kDt << ", dt: " << kDt << "}\n"
    << "grid: {dx: " << kCell << ", kernel: " << kernel << ", transfer: apic}\n"
    << "materials:\n  patch: {model: linear, E: " << kYoung << ", nu: 0, density: 1}\n"
    << "bodies:\n  - {shape: box, min: [0, 0], max: [" << kCell << ", " << kCell
    << "], material: patch, particles_per_cell: 2}\n"
    << "colliders:\n";
  for (int row = -1; row <= 2; ++row)  // every node row a particle's stencil reaches
    s << "  - {shape: box, inside: false, boundary: slip, min: [-10, " << (row - 0.25) * kCell
      << "], max: [10, " << (row + 0.25) * kCell << "], velocity: [0, " << kTopVelocity * row << "]}\n";
  return s.str();
}

struct Stress {
  Real xx = 0, yy = 0, xy = 0;
};

// Cauchy stress σ = τ / J of every particle (all ranks' particles, on every rank), from the
// material nendo steps with.
std::vector<Stress> particle_stresses(MpmRun& run) {
  ParticleSet& ps = run.particles();
  const MpmMaterial material = make_mpm_material(run.scene.materials.begin()->second);
  std::vector<Real> mine;
  for (std::size_t p = 0; p < ps.size(); ++p) {
    const Mat<2> F = Eigen::Map<const Eigen::Matrix<Real, 2, 2, Eigen::RowMajor>>(ps.real("F") + 4 * p);
    const Mat<2> tau =
        std::visit([&](const auto& m) { return Mat<2>(m.template kirchhoff<2>(F, 1.0)); }, material);
    const Mat<2> sigma = tau / F.determinant();
    mine.insert(mine.end(), {sigma(0, 0), sigma(1, 1), sigma(0, 1)});
  }
  const int ranks = mpi::size(MPI_COMM_WORLD);
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(ranks), displs(ranks);
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), 0);
  std::vector<Real> all(displs.back() + counts.back());
  MPI_Allgatherv(mine.data(), n, MPI_DOUBLE, all.data(), counts.data(), displs.data(), MPI_DOUBLE,
                 MPI_COMM_WORLD);
  std::vector<Stress> out;
  for (std::size_t k = 0; k + 2 < all.size(); k += 3) out.push_back({all[k], all[k + 1], all[k + 2]});
  return out;
}

// σ_yy after n steps of F_yy ← (1 + Δt L_yy) F_yy, L_yy = v_top / h.
Real expected_sigma_yy(int n) { return kYoung * (std::pow(1 + kDt * kTopVelocity / kCell, n) - 1); }

void run_patch(const std::string& kernel) {
  MpmRun run(MPI_COMM_WORLD, patch_scene(kernel));
  std::vector<std::vector<Real>> rows;
  for (int n = 1; n <= kSteps; ++n) {
    run.step(kDt);
    const std::vector<Stress> stresses = particle_stresses(run);
    ASSERT_EQ(stresses.size(), 4u);
    for (const Stress& s : stresses) {
      EXPECT_NEAR(s.yy, expected_sigma_yy(n), 1e-9) << kernel << ", step " << n;
      EXPECT_NEAR(s.xx, 0.0, 5e-9) << kernel << ", step " << n;
      EXPECT_NEAR(s.xy, 0.0, 5e-9) << kernel << ", step " << n;
    }
    const Stress& s = stresses.front();
    rows.push_back(
        {Real(n), n * kDt, s.yy, s.xx, s.xy, expected_sigma_yy(n), kYoung * n * kDt * kTopVelocity / kCell});
  }
  write_csv("patch_uniaxial_" + kernel,
            "step,time,sigma_yy,sigma_xx,sigma_xy,sigma_yy_multiplicative,sigma_yy_additive", rows);
  const std::vector<Stress> stresses = particle_stresses(run);
  char printed[32];
  std::snprintf(printed, sizeof printed, "%.3f", stresses.front().yy);
  EXPECT_STREQ(printed, "-1.000");
  Real worst_yy = 0, worst_xx = 0;
  for (const Stress& s : stresses)
    worst_yy = std::max(worst_yy, std::fabs(s.yy - expected_sigma_yy(kSteps))),
    worst_xx = std::max(worst_xx, std::fabs(s.xx));
  if (mpi::rank(MPI_COMM_WORLD) == 0)
    std::printf("  %s: sigma_yy = %s (%.15f, expected %.15f, |error| %.2e), max |sigma_xx| %.2e\n",
                kernel.c_str(), printed, stresses.front().yy, expected_sigma_yy(kSteps), worst_yy, worst_xx);
}

TEST(UniaxialPatch, QuadraticSplinesGiveTheExactStress) { run_patch("quadratic"); }

TEST(UniaxialPatch, CubicSplinesGiveTheExactStress) { run_patch("cubic"); }

}  // namespace
}  // namespace nendo
