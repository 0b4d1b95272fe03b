// validation.md §3 for the fem method: the 1 x 0.1 x 0.1 m cantilever (E = 1e8, ν = 0, ρ = 1000)
// clamped at x = 0 under its weight, on uniform meshes of levels 1-3 (h = 0.05 to 0.0125 m, 2 to 8
// edges through the thickness).
//  - Static (one backward Euler step of 100 s): the tip sag against Timoshenko's δ = 1.4715e-2 m
//    (Euler–Bernoulli) + 0.8 % (shear). Linear tets lock in bending, so the gate is the convergence:
//    the error falls by a factor that grows towards 4 (h²) with each halving of h, and the
//    Richardson extrapolation of the last two levels is within 5 % of δ.
//  - Dynamic: released from rest, straight, under gravity (backward Euler, Δt = T1/100), the tip
//    swings about the mesh's own static sag: its first maximum comes at half the first period, and
//    the mean sag over one period is the static one. The measured f1 is checked against the
//    analytic 5.1084 Hz scaled by the mesh's own stiffness (√(δ/δ_mesh), Rayleigh) on level 2;
//    the gate against 5.1084 Hz itself (within 5 %, level 3) is jobs/validation/fem_beam.py's.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "materials/StvkMaterial.hpp"
#include "methods/fem/HierarchicalFem.hpp"
#include "support/MethodRun.hpp"
#include "support/PetscEnvironment.hpp"

namespace nendo {
namespace {

constexpr Real kPi = 3.14159265358979323846;
constexpr Real kLength = 1, kSide = 0.1, kDensity = 1000, kYoung = 1e8, kGravity = 9.81;
constexpr Real kInertia = kSide * kSide * kSide * kSide / 12, kArea = kSide * kSide;

bool root() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank == 0;
}

// validation.md §3: q L⁴/(8 E I), plus the shear term q L²/(2 κ G A) with κ = 10/12 at ν = 0.
Real timoshenko_sag() {
  const Real q = kDensity * kGravity * kArea, shear = kYoung / 2, kappa = 10.0 / 12.0;
  return q * std::pow(kLength, 4) / (8 * kYoung * kInertia) +
         q * kLength * kLength / (2 * kappa * shear * kArea);
}

// f1 = (1.875104²/2π) √(E I/(ρ A L⁴)).
Real first_frequency() {
  return 1.875104 * 1.875104 / (2 * kPi) *
         std::sqrt(kYoung * kInertia / (kDensity * kArea * std::pow(kLength, 4)));
}

std::string beam_scene(int level, Real dt, Real end) {
  const std::string l = std::to_string(level);
  return "nendo: 1\nmethod: fem\ndimension: 3\ngravity: [0, 0, -9.81]\n"
         "time: {end: " +
         std::to_string(end) + ", dt: " + std::to_string(dt) +
         ", integrator: implicit}\ngrid: {dx: 0.45, block: 3}\n"
         "materials: {beam: {model: stvk, E: 1.0e8, nu: 0.0, density: 1000}}\n"
         "bodies: [{shape: box, material: beam, min: [0, 0, 0], max: [1, 0.1, 0.1], fixed_min: [-1, -1, -1], "
         "fixed_max: [0, 1, 1]}]\n"
         "fem: {spacing: 0.1, max_level: " +
         l + ", min_level: " + l + "}\nimplicit: {operator: assembled, newton_tol: 1.0e-8}\n";
}

// The mean downward displacement of the nodes of the free end, on any rank count. The end face
// turns by up to 0.02 rad (1 mm along x at its edges); the next layer of nodes is 6 mm away or more.
Real tip_sag(const testing::MethodRun& run) {
  const ParticleSet& ps = run.space->particles();
  Real sum[2] = {0, 0};
  for (std::size_t p = 0; p < ps.size(); ++p) {
    if (std::abs(ps.positions()[3 * p] - kLength) > 3e-3) continue;
    sum[0] += kSide / 2 - ps.positions()[3 * p + 2];
    sum[1] += 1;
  }
  MPI_Allreduce(MPI_IN_PLACE, sum, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return sum[0] / sum[1];
}

Real static_sag(int level) {
  testing::MethodRun run(MPI_COMM_WORLD, beam_scene(level, 100, 100));
  run.step();
  return tip_sag(run);
}

struct Swing {
  Real period = 0;    // twice the time of the first maximum of the sag
  Real mean_sag = 0;  // over [0, period]
};

// Released from rest; the first maximum located by a parabola through the largest sample and its
// neighbours.
Swing swing(int level, Real dt, int steps) {
  testing::MethodRun run(MPI_COMM_WORLD, beam_scene(level, dt, dt * steps));
  std::vector<Real> sag{0};
  for (int k = 0; k < steps; ++k) {
    run.step();
    sag.push_back(tip_sag(run));
  }
  std::size_t peak = 1;
  while (peak + 1 < sag.size() && sag[peak + 1] > sag[peak]) ++peak;
  EXPECT_LT(peak + 1, sag.size()) << "no maximum of the sag within " << steps << " steps";
  const Real a = sag[peak - 1], b = sag[peak], c = sag[peak + 1];
  Swing s;
  s.period = 2 * dt * (static_cast<Real>(peak) + 0.5 * (a - c) / (a - 2 * b + c));
  // The mean over the period: trapezoids over the whole steps inside it.
  const auto whole = static_cast<std::size_t>(s.period / dt);
  EXPECT_LT(whole, sag.size()) << "the run is shorter than one period";
  Real integral = 0;
  for (std::size_t k = 0; k < whole && k + 1 < sag.size(); ++k) integral += 0.5 * (sag[k] + sag[k + 1]) * dt;
  s.mean_sag = integral / (static_cast<Real>(whole) * dt);
  return s;
}

TEST(FemBeamValidation, StaticSagConvergesAtTheRateOfLinearTets) {
  const Real reference = timoshenko_sag();
  EXPECT_NEAR(reference, 1.4715e-2 * 1.008, 0.0005e-2);  // validation.md §3 plus the shear term
  Real error[4] = {0, 0, 0, 0};
  for (int level = 1; level <= 3; ++level) {
    const Real sag = static_sag(level);
    error[level] = 1 - sag / reference;
    if (root()) std::printf("level %d: sag %.5e m, %.4f of Timoshenko\n", level, sag, 1 - error[level]);
    EXPECT_GT(error[level], 0) << "linear tets are stiffer than the beam";
  }
  const Real rate12 = error[1] / error[2], rate23 = error[2] / error[3];
  if (root()) std::printf("error ratios per halving: %.3f, %.3f\n", rate12, rate23);
  EXPECT_GT(rate23, rate12) << "the rate grows towards h²";
  EXPECT_GT(rate23, 3.0) << "validation.md §3: linear tets' error falls at least 3x per halving";
  // Richardson with the observed order of the last halving: within the gate's 5 %.
  const Real sag2 = reference * (1 - error[2]), sag3 = reference * (1 - error[3]);
  const Real extrapolated = sag3 + (sag3 - sag2) / (rate23 - 1);
  EXPECT_NEAR(extrapolated / reference, 1, 0.05);
}

TEST(FemBeamValidation, FirstFrequencyAndMeanSagOfTheReleasedBeam) {
  const Real f1 = first_frequency(), reference = timoshenko_sag();
  EXPECT_NEAR(f1, 5.1084, 5e-4);
  const int level = 2;  // 7 s; level 3 (f1 within 5 %) is in jobs/validation/fem_beam.py
  const Real dt = 1 / (100 * f1), sag = static_sag(level);
  const Swing s = swing(level, dt, 110);
  // Backward Euler lengthens the period by a factor ωΔt/atan(ωΔt) (1.0013 at T/100).
  const Real omega_dt = 2 * kPi * f1 * dt, stretch = omega_dt / std::atan(omega_dt);
  const Real measured = 1 / s.period * stretch, mesh = f1 * std::sqrt(reference / sag);
  if (root())
    std::printf("f1 %.4f Hz (mesh stiffness predicts %.4f, beam %.4f); mean sag %.5e, static %.5e\n",
                measured, mesh, f1, s.mean_sag, sag);
  EXPECT_NEAR(measured / mesh, 1, 0.01);  // measured 0.4 %
  EXPECT_GT(measured, f1) << "locking stiffens the beam";
  EXPECT_NEAR(s.mean_sag / sag, 1, 0.02);  // measured 1.0 %
}

}  // namespace
}  // namespace nendo
