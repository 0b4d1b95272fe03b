// The implicit defaults keep the motion (issue 30): an elastic cantilever swinging in its first
// bending mode, stepped at 100 times the explicit CFL step with no implicit.scheme in the scene,
// keeps its amplitude.
//
// Scene: a 2-D cantilever 0 ≤ x ≤ L = 1, 0 ≤ y ≤ t = 0.1, clamped at x = 0 by a sticky plane (an
// odd reflection: u = 0 and no rotation of the end section), fixed-corotated, E = 1e6, ν = 0,
// ρ = 1000 (c = √(E/ρ) = 31.6 m/s), Δx = t/4 = 0.025 (160 cells, 2 × 2 particles per cell, 640
// particles), quadratic B-splines, APIC, no gravity, default Newton settings. It starts straight
// with the velocity of the clamped-free beam's first mode (Euler–Bernoulli: v_y = v φ(x)/φ(L),
// v_x = −(y − t/2) ∂v_y/∂x, the APIC matrix from their gradient), tip speed 0.16 m/s: a tip
// amplitude of about 0.05 L. Analytically (Euler–Bernoulli, undamped) ω₁ = 1.8751² √(E t²/(12 ρ L⁴))
// = 3.21 rad/s, T₁ = 1.96 s, and the amplitude stays what it was.
//
// Steps: Δt = 100 Δx/c = 0.079 s (ω₁Δt = 0.25, 25 steps per period), 3 periods. The amplitude of
// a swing is the largest |tip deflection| between two zero crossings; the gate: every complete
// swing within 3 % of the analytic amplitude v_tip/ω₁ (measured: within 1.1 %; the first and the
// last 0.50 % and 0.64 % below it, on 1 and 2 ranks). The implicit midpoint rule (the default scheme) does
// not damp; backward Euler (the default before issue 30) removes a fraction 1 − 1/(1 + (ωΔt)²) of the mode's
// energy every step, about half the amplitude per period: it is run too, and its last swing must be below 3/4
// of the analytic amplitude (measured 0.17), so that the gate tells the two apart.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ImplicitValidation.hpp"
#include "support/PetscEnvironment.hpp"

namespace nendo {
namespace {

using namespace testing;

constexpr Real kLength = 1, kThickness = 0.1, kYoung = 1e6, kDensity = 1000, kTipSpeed = 0.16;
constexpr Real kDx = kThickness / 4, kCflMultiple = 100;
constexpr int kPeriods = 3;
const Real kWaveSpeed = std::sqrt(kYoung / kDensity);
// Euler–Bernoulli clamped-free first mode: β L = 1.8751, φ(x) = cosh βx − cos βx − σ (sinh βx − sin βx).
constexpr Real kBetaL = 1.8751040687119611, kSigma = 0.7340955137589127;
const Real kOmega =
    kBetaL * kBetaL * std::sqrt(kYoung * kThickness * kThickness / (12 * kDensity)) / (kLength * kLength);

// `scheme` empty: the scene names none (the default).
std::string scene(const std::string& scheme) {
  std::string s = "nendo: 1\nmethod: mpm\ndimension: 2\ngravity: [0, 0]\n";
  s += "time: {end: 100, dt: 1.0e-3, integrator: implicit}\n";
  s += "grid: {dx: " + num(kDx) + ", kernel: quadratic, transfer: apic}\n";
  s += "materials:\n  beam: {model: fixed_corotated, E: " + num(kYoung) +
       ", nu: 0, density: " + num(kDensity) + "}\n";
  s += "bodies:\n  - {shape: box, min: [0, 0], max: [" + num(kLength) + ", " + num(kThickness) +
       "], material: beam, particles_per_cell: 2}\n";
  s += "colliders:\n  - {shape: plane, point: [0, 0], normal: [1, 0], boundary: sticky}\n";
  if (!scheme.empty()) s += "implicit: {scheme: " + scheme + "}\n";
  return s;
}

// φ, φ' and φ'' of the first mode, scaled to φ(L) = 1.
void mode(Real x, Real (&phi)[3]) {
  const Real b = kBetaL / kLength;
  const Real tip = std::cosh(kBetaL) - std::cos(kBetaL) - kSigma * (std::sinh(kBetaL) - std::sin(kBetaL));
  const Real bx = b * x;
  phi[0] = (std::cosh(bx) - std::cos(bx) - kSigma * (std::sinh(bx) - std::sin(bx))) / tip;
  phi[1] = b * (std::sinh(bx) + std::sin(bx) - kSigma * (std::cosh(bx) - std::cos(bx))) / tip;
  phi[2] = b * b * (std::cosh(bx) + std::cos(bx) - kSigma * (std::sinh(bx) + std::sin(bx))) / tip;
}

struct Swing {
  std::vector<Real> tip;         // mean y-displacement of the particles of the last cell, per step
  std::vector<Real> amplitudes;  // of the complete swings between zero crossings
  long newton = 0, ksp = 0, retried = 0;
  double seconds = 0;
};

Swing swing(const std::string& scheme, Real dt, long steps) {
  Stopwatch clock;
  MpmRun run(MPI_COMM_WORLD, scene(scheme));
  ParticleSet& ps = run.particles();
  const Real inertia = kDx * kDx / 4;  // APIC's D for quadratic B-splines
  for (std::size_t p = 0; p < ps.size(); ++p) {
    const Real x = ps.positions()[2 * p], y = ps.positions()[2 * p + 1] - kThickness / 2;
    Real phi[3];
    mode(x, phi);
    Real* v = ps.real("velocity") + 2 * p;
    Real* B = ps.real("B") + 4 * p;
    v[0] = -y * kTipSpeed * phi[1], v[1] = kTipSpeed * phi[0];
    B[0] = -y * kTipSpeed * phi[2] * inertia, B[1] = -kTipSpeed * phi[1] * inertia;
    B[2] = kTipSpeed * phi[1] * inertia, B[3] = 0;
  }
  const std::vector<Real> initial = positions_by_id(run);
  Swing s;
  for (long n = 0; n < steps; ++n) {
    s.retried += step_counting_retries(run, dt, 1);
    const SolverStats* stats = run.method->solver_stats();
    s.newton += stats->newton_iterations, s.ksp += stats->ksp_iterations;
    const std::vector<Real> x = positions_by_id(run);
    Real sum = 0, count = 0;
    for (std::size_t i = 0; i < x.size() / 2; ++i)
      if (initial[2 * i] > kLength - kDx) sum += x[2 * i + 1] - initial[2 * i + 1], count += 1;
    s.tip.push_back(sum / count);
  }
  // Swings: the largest |deflection| between consecutive sign changes (complete swings only).
  std::size_t begin = 0;
  for (std::size_t n = 1; n < s.tip.size(); ++n) {
    if ((s.tip[n - 1] > 0) == (s.tip[n] > 0)) continue;
    if (begin > 0) {
      Real largest = 0;
      for (std::size_t k = begin; k < n; ++k) largest = std::max(largest, std::fabs(s.tip[k]));
      s.amplitudes.push_back(largest);
    }
    begin = n;
  }
  s.seconds = clock.seconds();
  return s;
}

TEST(ImplicitSwing, DefaultSchemeKeepsTheAmplitudeAt100TimesTheCflStep) {
  const Real dt = kCflMultiple * kDx / kWaveSpeed;
  const long steps = std::lround(kPeriods * 2 * 3.14159265358979323846 / kOmega / dt);
  const Real amplitude = kTipSpeed / kOmega;  // analytic, undamped
  report("analytic omega_1 [rad/s]", kOmega);
  report("omega_1 dt", kOmega * dt);
  report("analytic tip amplitude v_tip / omega_1 [m]", amplitude);
  for (const std::string scheme : {"", "backward_euler"}) {
    const Swing s = swing(scheme, dt, steps);
    const std::string name = (scheme.empty() ? std::string("default scheme") : scheme) + ": ";
    ASSERT_GE(s.amplitudes.size(), 3u) << name << "fewer than three complete swings";
    Real worst = 0;  // the largest |amplitude / analytic − 1| over the swings
    for (const Real a : s.amplitudes) worst = std::max(worst, std::fabs(a / amplitude - 1));
    report(name + "complete swings", static_cast<Real>(s.amplitudes.size()));
    report(name + "first swing's amplitude / analytic", s.amplitudes.front() / amplitude);
    report(name + "last swing's amplitude / analytic", s.amplitudes.back() / amplitude);
    report(name + "largest |amplitude / analytic - 1|", worst);
    report(name + "Newton iterations", static_cast<Real>(s.newton));
    report(name + "KSP iterations", static_cast<Real>(s.ksp));
    report(name + "seconds", s.seconds);
    EXPECT_EQ(s.retried, 0) << name;
    if (scheme.empty())
      EXPECT_LE(worst, 0.03) << name << "the default scheme damps (or amplifies) the swing";
    else  // the test tells the schemes apart
      EXPECT_LT(s.amplitudes.back() / amplitude, 0.75) << name << "backward Euler no longer damps";
  }
}

}  // namespace
}  // namespace nendo
