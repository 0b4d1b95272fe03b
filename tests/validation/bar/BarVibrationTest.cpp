// validation.md §1: axial vibration of an elastic bar (Bardenhagen 2002 §4.2), explicit MPM.
// A bar 0 ≤ x ≤ L = 1, E = 100, ρ = 1, ν = 0, fixed at x = 0 and free at x = L, starts with
// v(x) = v0 sin(πx/2L), v0 = 0.1: the first mode, period T = 4L/c = 0.4 s, centre-of-mass
// velocity v_cm(t) = (2 v0/π) cos(ω1 t), total energy ρ v0² L/4 per unit cross-section.
// 2-D strip two cells high between slip planes (with ν = 0 the motion is exactly 1-D),
// `model: linear` (for uniaxial strain with ν = 0 the same stress as fixed-corotated),
// 2 × 2 particles per cell, quadratic B-splines, Δt = 0.1 Δx/c, five periods.
// x = 0 is held either by a sticky plane or by antisymmetry (no collider); the explicit step holds
// a sticky wall as an odd reflection, which on a node plane makes the two the same bar.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "MpmHarness.hpp"
#include "ValidationCsv.hpp"

namespace nendo {
namespace {

using testing::MpmRun;

constexpr Real kPi = 3.14159265358979323846;
constexpr Real kLength = 1, kYoung = 100, kDensity = 1, kV0 = 0.1;
const Real kWaveSpeed = std::sqrt(kYoung / kDensity);               // c = 10
const Real kPeriod = 4 * kLength / kWaveSpeed;                      // T = 0.4 s
const Real kAmplitude = 2 * kV0 / kPi;                              // 0.063662
const Real kEnergyPerSection = kDensity * kV0 * kV0 * kLength / 4;  // 0.0025
constexpr int kPeriods = 5;
constexpr int kCellsHigh = 2;

using testing::write_csv;  // tests/validation/ValidationCsv.hpp

// How the end x = 0 is held.
enum class End {
  StickyWall,     // a sticky plane at x = 0: the grid nodes at and behind it are held at rest
  Antisymmetric,  // the bar is −L ≤ x ≤ L, free-free, with v(−x) = −v(x): x = 0 stays at rest
  Free,           // free-free, 0 ≤ x ≤ L
};

struct BarCase {
  int cells = 20;  // cells along 0 ≤ x ≤ L
  std::string transfer = "apic";
  Real flip_ratio = 0.99;
  End end = End::StickyWall;
  bool uniform = false;  // v = v0 everywhere instead of the first mode
  int periods = kPeriods;
};

struct BarSeries {
  Real dx = 0, dt = 0, section = 0;                // section: the cross-section of the half 0 ≤ x ≤ L
  std::vector<Real> time, v_cm, kinetic, elastic;  // v_cm of 0 ≤ x ≤ L; energies of the whole bar
  Real total(std::size_t k) const { return kinetic[k] + elastic[k]; }
  Real bars = 1;  // 2 for the antisymmetric bar: energies per unit section of 0 ≤ x ≤ L divide by it
};

std::string bar_scene(const BarCase& c, Real dx, Real height) {
  std::ostringstream s;
  s.precision(17);
  s << "nendo: 1\nmethod: mpm\ndimension: 2\ngravity: [0, 0]\n"
    << "time: {end: " << c.periods * kPeriod << ", dt: " << 0.1 * dx / kWaveSpeed << "}\n"
    << "grid: {dx: " << dx << ", kernel: quadratic, transfer: " << c.transfer
    << ", flip_ratio: " << c.flip_ratio << "}\n"
    << "materials:\n  bar: {model: linear, E: " << kYoung << ", nu: 0, density: " << kDensity << "}\n"
    << "bodies:\n  - {shape: box, min: [" << (c.end == End::Antisymmetric ? -kLength : 0) << ", 0], max: ["
    << kLength << ", " << height << "], material: bar, particles_per_cell: 2}\n"
    << "colliders:\n"
    << "  - {shape: plane, point: [0, 0], normal: [0, 1], boundary: slip}\n"
    << "  - {shape: plane, point: [0, " << height << "], normal: [0, -1], boundary: slip}\n";
  if (c.end == End::StickyWall) s << "  - {shape: plane, point: [0, 0], normal: [1, 0], boundary: sticky}\n";
  return s.str();
}

// Centre-of-mass velocity of the material at x > 0 (collective).
Real centre_of_mass_velocity(MpmRun& run) {
  ParticleSet& ps = run.particles();
  Real local[2] = {0, 0}, global[2];
  for (std::size_t p = 0; p < ps.size(); ++p) {
    if (ps.positions()[2 * p] <= 0) continue;
    local[0] += run.mass(p) * ps.real("velocity")[2 * p];
    local[1] += run.mass(p);
  }
  MPI_Allreduce(local, global, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return global[0] / global[1];
}

BarSeries run_bar(const BarCase& c) {
  BarSeries out;
  out.dx = kLength / c.cells;
  out.dt = 0.1 * out.dx / kWaveSpeed;
  out.section = kCellsHigh * out.dx;
  out.bars = c.end == End::Antisymmetric ? 2 : 1;
  MpmRun run(MPI_COMM_WORLD, bar_scene(c, out.dx, out.section));
  // The initial state: v(x) and, for APIC, the affine matrix of that field, B = ∇v D_p with
  // D_p = Δx²/4 (spec 002 §0, "C D_p for an affine initial field"); B = 0 would make the first
  // transfer a PIC one, which loses about 0.3 % of the energy at 20 cells.
  ParticleSet& ps = run.particles();
  const Real k = kPi / (2 * kLength);
  for (std::size_t p = 0; p < ps.size(); ++p) {
    const Real x = ps.positions()[2 * p];
    Real* v = ps.real("velocity") + 2 * p;
    Real* B = ps.real("B") + 4 * p;
    v[0] = c.uniform ? kV0 : kV0 * std::sin(k * x), v[1] = 0;
    B[0] = B[1] = B[2] = B[3] = 0;
    if (c.transfer == "apic" && !c.uniform) B[0] = kV0 * k * std::cos(k * x) * out.dx * out.dx / 4;
  }
  const long steps = std::lround(c.periods * kPeriod / out.dt);
  auto record = [&] {
    const GlobalDiagnostics d = run.diagnostics();
    out.time.push_back(run.time);
    out.v_cm.push_back(centre_of_mass_velocity(run));
    out.kinetic.push_back(d.kinetic_energy);
    out.elastic.push_back(d.elastic_energy);
  };
  record();
  for (long s = 0; s < steps; ++s) {
    run.step(out.dt);
    record();
  }
  return out;
}

// Runs are shared between the tests of one process.
const BarSeries& bar(const BarCase& c) {
  static std::map<std::string, BarSeries> cache;
  std::ostringstream key;
  key << c.cells << c.transfer << c.flip_ratio << int(c.end) << c.uniform << c.periods;
  auto it = cache.find(key.str());
  if (it == cache.end()) it = cache.emplace(key.str(), run_bar(c)).first;
  return it->second;
}

// Zero crossings of v_cm, linearly interpolated between steps.
std::vector<Real> zero_crossings(const BarSeries& s) {
  std::vector<Real> t;
  for (std::size_t k = 1; k < s.v_cm.size(); ++k) {
    const Real a = s.v_cm[k - 1], b = s.v_cm[k];
    if ((a > 0 && b <= 0) || (a < 0 && b >= 0))
      t.push_back(s.time[k - 1] + (s.time[k] - s.time[k - 1]) * a / (a - b));
  }
  return t;
}

// Half a period between consecutive crossings: T = 2 (t_last − t_first) / (crossings − 1).
Real measured_period(const BarSeries& s) {
  const std::vector<Real> t = zero_crossings(s);
  if (t.size() < 2) return NAN;
  return 2 * (t.back() - t.front()) / static_cast<Real>(t.size() - 1);
}

// The peak |v_cm| of every half period between two zero crossings (the first, from t = 0 to the
// first crossing, included: it starts at the initial value).
std::vector<Real> half_period_peaks(const BarSeries& s) {
  const std::vector<Real> t = zero_crossings(s);
  std::vector<Real> peaks;
  Real peak = 0;
  std::size_t next = 0;
  for (std::size_t k = 0; k < s.v_cm.size(); ++k) {
    if (next < t.size() && s.time[k] > t[next]) {
      peaks.push_back(peak);
      peak = 0;
      ++next;
    }
    peak = std::max(peak, std::fabs(s.v_cm[k]));
  }
  return peaks;  // the last, unfinished half period is left out
}

Real max_energy_drift(const BarSeries& s) {
  Real drift = 0;
  for (std::size_t k = 0; k < s.time.size(); ++k)
    drift = std::max(drift, std::fabs(s.total(k) / s.total(0) - 1));
  return drift;
}

void write_series(const std::string& name, const BarSeries& s) {
  std::vector<std::vector<Real>> rows;
  const std::size_t every = std::max<std::size_t>(1, s.time.size() / 2000);
  const Real per_section = 1 / (s.section * s.bars);
  for (std::size_t k = 0; k < s.time.size(); k += every)
    rows.push_back({s.time[k], s.v_cm[k], s.kinetic[k] * per_section, s.elastic[k] * per_section,
                    s.total(k) * per_section, kAmplitude * std::cos(2 * kPi * s.time[k] / kPeriod)});
  write_csv(name, "time,v_cm,kinetic_per_section,elastic_per_section,total_per_section,v_cm_exact", rows);
}

void print(const std::string& what, Real value) {
  if (mpi::rank(MPI_COMM_WORLD) == 0) std::printf("  %-50s %.6g\n", what.c_str(), value);
}

Real smallest(const std::vector<Real>& values) { return *std::min_element(values.begin(), values.end()); }
Real largest(const std::vector<Real>& values) { return *std::max_element(values.begin(), values.end()); }

// The amplitude and energy gates on one run: every half period's peak |v_cm| within 2 % of
// 2 v0/π, total energy within 1 % of its initial value at every step.
void expect_amplitude_and_energy(const BarSeries& s, const std::string& run) {
  EXPECT_NEAR(s.total(0) / (s.section * s.bars), kEnergyPerSection, 1e-3 * kEnergyPerSection) << run;
  const std::vector<Real> peaks = half_period_peaks(s);
  ASSERT_GE(peaks.size(), 2u * kPeriods - 1) << run;
  for (std::size_t k = 0; k < peaks.size(); ++k)
    EXPECT_NEAR(peaks[k], kAmplitude, 0.02 * kAmplitude) << run << ", half period " << k;
  EXPECT_LE(max_energy_drift(s), 0.01) << run;
  EXPECT_NEAR(measured_period(s), kPeriod, 0.02 * kPeriod) << run;
  print(run + ": E0 per unit section", s.total(0) / (s.section * s.bars));
  print(run + ": half-period peaks of v_cm / 0.063662, min", smallest(peaks) / kAmplitude);
  print(run + ": half-period peaks of v_cm / 0.063662, max", largest(peaks) / kAmplitude);
  print(run + ": energy drift max |E/E0 - 1|", max_energy_drift(s));
  print(run + ": period / 0.4 - 1", measured_period(s) / kPeriod - 1);
}

// Amplitude and energy, with x = 0 held by antisymmetry: the bar −L ≤ x ≤ L, free at both ends,
// starts with v0 sin(πx/2L), its own first mode; x = 0 is at rest by symmetry, and 0 ≤ x ≤ L is
// the fixed-free bar exactly. This measures the interior scheme with no collider.
TEST(BarVibration, ApicKeepsAmplitudeAndEnergyOverFivePeriods) {
  BarCase c{20, "apic"};
  c.end = End::Antisymmetric;
  const BarSeries& s = bar(c);
  write_series("bar_antisymmetric_apic_20", s);
  expect_amplitude_and_energy(s, "APIC, antisymmetric, 20 cells");
}

// "APIC or FLIP ≥ 0.99": FLIP 1 meets the energy gate too. FLIP 0.99 does not at this Δt: its 1 %
// PIC share damps the mode by about 1.5e-5 of the energy per step, 4000 steps in five periods.
TEST(BarVibration, PureFlipKeepsAmplitudeAndEnergyOverFivePeriods) {
  BarCase c{20, "flip"};
  c.end = End::Antisymmetric, c.flip_ratio = 1;
  const BarSeries& s = bar(c);
  write_series("bar_antisymmetric_flip1_20", s);
  expect_amplitude_and_energy(s, "FLIP 1, antisymmetric, 20 cells");
  c.flip_ratio = 0.99;
  const BarSeries& blended = bar(c);
  write_series("bar_antisymmetric_flip099_20", blended);
  print("FLIP 0.99, antisymmetric, 20 cells: energy drift (not a gate)", max_energy_drift(blended));
}

// Period within 2 % at 20 cells and 0.5 % at 80, and the error at least halving with each halving of
// Δx (validation.md §1). The plain sticky projection of the nodes at and behind the wall held the
// bar a fraction of a cell behind x = 0: +1.62 %, +0.79 %, +0.39 % (first order). The reflection
// holds it at x = 0: the error is the interior scheme's, second order.
TEST(BarVibration, StickyWallPeriodConvergesWithTheCellSize) {
  const int cells[] = {20, 40, 80};
  Real error[3];
  std::vector<std::vector<Real>> rows;
  for (int k = 0; k < 3; ++k) {
    const BarSeries& s = bar({cells[k], "apic"});
    if (k == 0) write_series("bar_sticky_apic_20", s);
    error[k] = measured_period(s) / kPeriod - 1;
    const std::vector<Real> peaks = half_period_peaks(s);
    rows.push_back({Real(cells[k]), s.dx, measured_period(s), error[k], max_energy_drift(s),
                    smallest(peaks) / kAmplitude});
    const std::string run = "APIC, sticky wall, " + std::to_string(cells[k]) + " cells";
    print(run + ": period / 0.4 - 1", error[k]);
    print(run + ": energy drift", max_energy_drift(s));
    print(run + ": smallest v_cm peak / 0.063662", smallest(peaks) / kAmplitude);
  }
  write_csv("bar_convergence", "cells,dx,period,period_error,energy_drift,smallest_peak_over_amplitude",
            rows);
  EXPECT_LE(std::fabs(error[0]), 0.02);
  EXPECT_LE(std::fabs(error[2]), 0.005);
  for (int k = 0; k < 2; ++k) {
    print("period error ratio " + std::to_string(cells[k]) + " / " + std::to_string(cells[k + 1]) + " cells",
          error[k] / error[k + 1]);
    EXPECT_GE(error[k] / error[k + 1], std::pow(2.0, 0.85)) << cells[k] << " -> " << cells[k + 1] << " cells";
  }
}

// The amplitude and energy gates with the sticky collider at x = 0, as validation.md §1 states
// them. With the plain sticky projection (before issue 28) the energy drifted 7.7 % and the v_cm
// peaks fell to 0.970 of 2 v0/π over five periods: the nodes at and behind the wall were set to
// rest after every P2G, discarding what the particles put there, a loss per step.
TEST(BarVibration, StickyWallKeepsAmplitudeAndEnergyOverFivePeriods) {
  expect_amplitude_and_energy(bar({20, "apic"}), "APIC, sticky wall, 20 cells");
}

// The wall on a node plane, held as an odd reflection, is the antisymmetric bar: the particles'
// mirror images are exactly what the reflection puts behind the wall. Same period and energies up
// to the order of the sums.
TEST(BarVibration, StickyWallOnANodePlaneIsTheAntisymmetricBar) {
  BarCase c{20, "apic"};
  c.end = End::Antisymmetric;
  const BarSeries &wall = bar({20, "apic"}), &mirror = bar(c);
  EXPECT_NEAR(measured_period(wall), measured_period(mirror), 1e-9 * kPeriod);
  ASSERT_EQ(wall.time.size(), mirror.time.size());
  for (std::size_t k = 0; k < wall.time.size(); ++k) {
    ASSERT_NEAR(wall.v_cm[k], mirror.v_cm[k], 1e-9 * kAmplitude) << "step " << k;
    ASSERT_NEAR(wall.total(k) / wall.section, mirror.total(k) / (mirror.section * mirror.bars),
                1e-9 * kEnergyPerSection)
        << "step " << k;
  }
}

// Material behind a sticky wall (the bar embedded 0.1 m into it, as a clamp) keeps the plain
// projection: the reflection would take it for the mirror image. Every particle deeper than half a
// cell reads only nodes held at rest, so it stays exactly where it was, while the bar vibrates.
TEST(BarVibration, StickyWallWithMaterialBehindItClampsIt) {
  const Real dx = kLength / 20;
  BarCase c{20, "apic"};
  std::string scene = bar_scene(c, dx, kCellsHigh * dx);
  const std::string from = "min: [0, 0]";
  scene.replace(scene.find(from), from.size(), "min: [-0.1, 0]");
  MpmRun run(MPI_COMM_WORLD, scene);
  ParticleSet& ps = run.particles();
  for (std::size_t p = 0; p < ps.size(); ++p)
    ps.real("velocity")[2 * p] =
        ps.positions()[2 * p] > 0 ? kV0 * std::sin(kPi * ps.positions()[2 * p] / 2) : 0;
  std::map<ParticleId, Real> start;
  for (std::size_t p = 0; p < ps.size(); ++p) start[ps.ids()[p]] = ps.positions()[2 * p];
  for (int n = 0; n < 200; ++n) run.step(0.1 * dx / kWaveSpeed);
  long embedded = 0, moving = 0;
  for (std::size_t p = 0; p < run.particles().size(); ++p) {
    const Real x0 = start.count(run.particles().ids()[p]) ? start[run.particles().ids()[p]] : 0;
    if (x0 < -0.5 * dx) {
      ++embedded;
      EXPECT_EQ(run.particles().real("velocity")[2 * p], 0.0) << "particle at x = " << x0;
      EXPECT_EQ(run.particles().positions()[2 * p], x0) << "particle at x = " << x0;
    } else if (x0 > 0.5 && std::fabs(run.particles().real("velocity")[2 * p]) > 1e-3 * kV0) {
      ++moving;
    }
  }
  long counts[2] = {embedded, moving};
  MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_GT(counts[0], 0);
  EXPECT_GT(counts[1], 0);  // the free part vibrates
}

// Free-free, uniform v0: no force on the centre of mass, so v_cm stays v0 (class A).
TEST(BarVibration, FreeFreeUniformVelocityKeepsTheCentreOfMassVelocity) {
  BarCase c{20, "apic"};
  c.end = End::Free, c.uniform = true, c.periods = 1;
  const BarSeries& s = bar(c);
  Real worst = 0;
  for (Real v : s.v_cm) worst = std::max(worst, std::fabs(v - kV0));
  EXPECT_LE(worst, 1e-12 * kV0);
  print("free-free uniform: max |v_cm - v0| / v0", worst / kV0);
}

}  // namespace
}  // namespace nendo
