// validation.md §4, implicit variant: elastic column under its own weight, quasi-static.
//
// The column of ColumnSelfWeightTest.cpp: 0.2 m wide, H = 0.1 m high, linear elastic E = 1e6,
// ν = 0, ρ = 1800, g = 9.81, slip planes on the lateral faces and the bottom, 2 × 2 particles per
// cell, quadratic B-splines, APIC; analytic base stress −ρgH = −1765.8 Pa. The base stress is
// measured as there: the value at y = 0 of the least-squares line through the mean σ_yy of the
// particle rows with 2Δx ≤ Y ≤ H − 2Δx (reference height Y), leaving out the roller's boundary
// layer and the free surface.
//
// Explicit reference: ColumnSelfWeightTest's run, repeated here at Δx = 0.01 and 0.005 (a load
// ramped over three fundamental periods T1 = 4H/c, σ_yy averaged over two more, Δt = 0.3 Δx/c):
// −1783.165 and −1771.436 Pa, as that test prints.
//
// Implicit: backward Euler, the full gravity from t = 0 and no ramp, 12 steps of Δt = T1
// (ωΔt = 2π for the first mode; 133 and 267 times the explicit step): backward Euler damps the
// transient by a factor ≈ 1/√(1 + (ωΔt)²) ≈ 0.16 per step, so the column settles in a few steps.
//
// Gates, at each Δx: settled (the base stress changed by ≤ 1e-6 relative over the last step, the
// kinetic energy is ≤ 1e-12 of the elastic energy); the base stress within 1 % of the explicit
// reference (measured −1.4e-4, −4.1e-5). Against the analytic −1765.8 Pa the implicit error is
// +0.97 % and +0.32 % (more compressive; recorded, and as in §4 it falls with Δx at observed order
// ≥ 1, measured 1.6).
//
// Newton runs to newton_tol 1e-8: a change of 1e-6 per step is finer than what the default 1e-6
// promises. Until issue 30 the fixed forcing's over-solving met it anyway; Eisenstat–Walker's
// forcing stops each step just below the tolerance and left changes of 1.0e-6 and 4.2e-6 (at
// 1e-8: 4.4e-8 and 1.6e-9 on one rank, 3.8e-8 and 1.6e-9 on two).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ImplicitValidation.hpp"
#include "support/PetscEnvironment.hpp"

namespace nendo {
namespace {

using namespace testing;

constexpr Real kPi = 3.14159265358979323846;
constexpr Real kRho = 1800, kGravity = 9.81, kE = 1e6;
constexpr Real kHeight = 0.1, kWidth = 0.2;
constexpr int kParticlesPerCell = 2;  // per axis
constexpr Real kBaseStress = -kRho * kGravity * kHeight;
constexpr int kImplicitSteps = 12;
const Real kWaveSpeed = std::sqrt(kE / kRho), kT1 = 4 * kHeight / kWaveSpeed;

std::string scene(Real dx, const std::string& integrator) {
  std::string s = "nendo: 1\nmethod: mpm\ndimension: 2\ngravity: [0, " + num(-kGravity) + "]\n";
  s += "time: {end: 1, dt: 1.0e-4, integrator: " + integrator + "}\n";
  s += "grid: {dx: " + num(dx) + ", kernel: quadratic, transfer: apic}\n";
  s += "materials:\n  soil: {model: linear, E: " + num(kE) + ", nu: 0, density: " + num(kRho) + "}\n";
  s += "bodies:\n  - {shape: box, min: [0, 0], max: [" + num(kWidth) + ", " + num(kHeight) +
       "], material: soil, particles_per_cell: " + std::to_string(kParticlesPerCell) + "}\n";
  s += "colliders:\n";
  s += "  - {shape: plane, point: [0, 0], normal: [1, 0], boundary: slip}\n";
  s += "  - {shape: plane, point: [" + num(kWidth) + ", 0], normal: [-1, 0], boundary: slip}\n";
  s += "  - {shape: plane, point: [0, 0], normal: [0, 1], boundary: slip}\n";
  s += "implicit: {scheme: backward_euler, newton_tol: 1.0e-8}\n";
  return s;
}

// Σ σ_yy and the particle count per particle row (by reference height Y), this rank.
struct Rows {
  std::vector<Real> sum, count;
  explicit Rows(Real dx) {
    const int rows = static_cast<int>(std::lround(kHeight * kParticlesPerCell / dx));
    sum.assign(rows, 0.0), count.assign(rows, 0.0);
  }
  void add(MpmRun& run, Real dx) {
    const LinearElastic material(lame_parameters(kE, 0.0));
    ParticleSet& ps = run.particles();
    const Real* F = ps.real("F");
    const Real* Y = ps.real("Y");
    for (std::size_t p = 0; p < ps.size(); ++p) {
      const Eigen::Matrix2d Fp = Eigen::Map<const Eigen::Matrix<Real, 2, 2, Eigen::RowMajor>>(F + 4 * p);
      const Eigen::Matrix2d sigma = material.P<2>(Fp, 1) * Fp.transpose() / Fp.determinant();
      const int row = static_cast<int>(Y[p] * kParticlesPerCell / dx);
      sum[row] += sigma(1, 1);
      count[row] += 1;
    }
  }
  // Collective: the fitted line's value at y = 0.
  Real base_stress(Real dx) const {
    std::vector<Real> s = sum, n = count;
    MPI_Allreduce(MPI_IN_PLACE, s.data(), static_cast<int>(s.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, n.data(), static_cast<int>(n.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    const Real spacing = dx / kParticlesPerCell;
    Real points = 0, sy = 0, syy = 0, ss = 0, sys = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const Real mean = s[i] / n[i], y = (static_cast<Real>(i) + 0.5) * spacing;
      if (y < 2 * dx || y > kHeight - 2 * dx) continue;
      points += 1, sy += y, syy += y * y, ss += mean, sys += y * mean;
    }
    const Real slope = (points * sys - sy * ss) / (points * syy - sy * sy);
    return (ss - slope * sy) / points;
  }
};

void record_reference_height(MpmRun& run) {
  ParticleSet& ps = run.particles();
  for (std::size_t p = 0; p < ps.size(); ++p) ps.real("Y")[p] = ps.positions()[2 * p + 1];
}

// ColumnSelfWeightTest's explicit run: load ramped over 3 T1, σ_yy averaged over 2 T1 more.
Real explicit_base_stress(Real dx) {
  const Real dt = 0.3 * dx / kWaveSpeed;
  const long steps = std::lround(5 * kT1 / dt), average_from = steps - std::lround(2 * kT1 / dt);
  MpmRun run(MPI_COMM_WORLD, scene(dx, "explicit"), {}, {{"body_force", 2}, {"Y", 1}});
  record_reference_height(run);
  Rows rows(dx);
  for (long s = 0; s < steps; ++s) {
    const Real r = run.time / (3 * kT1);
    const Real ramp = r >= 1 ? 1 : r - std::sin(2 * kPi * r) / (2 * kPi);
    ParticleSet& ps = run.particles();
    Real* b = ps.real("body_force");
    for (std::size_t p = 0; p < ps.size(); ++p) b[2 * p] = 0, b[2 * p + 1] = kGravity * (1 - ramp);
    run.step(dt);
    if (s >= average_from) rows.add(run, dx);
  }
  return rows.base_stress(dx);
}

struct Implicit {
  Real base = 0, last_change = 0, kinetic_over_elastic = 0;
  long retried = 0;
};

Implicit implicit_base_stress(Real dx) {
  MpmRun run(MPI_COMM_WORLD, scene(dx, "implicit"), {}, {{"Y", 1}});
  record_reference_height(run);
  Implicit out;
  Real previous = 0;
  for (int s = 0; s < kImplicitSteps; ++s) {
    out.retried += step_counting_retries(run, kT1, 1);
    Rows rows(dx);
    rows.add(run, dx);
    previous = out.base;
    out.base = rows.base_stress(dx);
  }
  out.last_change = std::fabs(out.base / previous - 1);
  const GlobalDiagnostics d = run.diagnostics();
  out.kinetic_over_elastic = d.kinetic_energy / d.elastic_energy;
  return out;
}

TEST(ImplicitColumn, QuasiStaticBaseStressMatchesExplicit) {
  std::vector<Real> errors;
  for (Real dx : {0.01, 0.005}) {
    Stopwatch clock;
    const Real reference = explicit_base_stress(dx);
    const double explicit_seconds = clock.seconds();
    const Implicit implicit = implicit_base_stress(dx);
    const std::string run = "dx = " + label(dx) + ": ";
    report(run + "explicit base stress [Pa]", reference);
    report(run + "implicit base stress [Pa]", implicit.base);
    report(run + "implicit / explicit - 1", implicit.base / reference - 1);
    report(run + "implicit / analytic - 1", implicit.base / kBaseStress - 1);
    report(run + "explicit / analytic - 1", reference / kBaseStress - 1);
    report(run + "implicit dt / explicit dt", kT1 / (0.3 * dx / kWaveSpeed));
    report(run + "last step's relative change of the base stress", implicit.last_change);
    report(run + "kinetic / elastic energy at the end", implicit.kinetic_over_elastic);
    report(run + "explicit seconds", explicit_seconds);
    report(run + "implicit seconds", clock.seconds() - explicit_seconds);
    EXPECT_LE(implicit.last_change, 1e-6) << run;
    EXPECT_LE(implicit.kinetic_over_elastic, 1e-12) << run;
    EXPECT_NEAR(implicit.base / reference, 1, 0.01) << run;
    EXPECT_EQ(implicit.retried, 0) << run;
    errors.push_back(std::fabs(implicit.base - kBaseStress));
  }
  const Real order = std::log(errors[0] / errors[1]) / std::log(2.0);
  report("observed order of the implicit base-stress error", order);
  EXPECT_GE(order, 1.0);
}

}  // namespace
}  // namespace nendo
