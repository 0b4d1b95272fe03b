#pragma once
// Runs a pbd_powder scene in-process (parse, seed, distribute, step frame by frame) and gathers
// the particles to every rank, sorted by id, for tests that look between frames.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "decomposition/GlobalView.hpp"
#include "methods/pbd_powder/PbdPowder.hpp"
#include "support/MethodRun.hpp"

namespace nendo::testing {

struct Grain {
  ParticleId id;
  Real x[3], v[3], density;
  std::int32_t state, changed;
};

struct PowderRun : MethodRun {
  using MethodRun::MethodRun;

  const PbdPowder& powder() const { return static_cast<const PbdPowder&>(*method); }

  // Collective.
  std::vector<Grain> gather() const {
    const ParticleSet& ps = space->particles();
    const int d = ps.dimension();
    std::vector<Grain> mine(ps.size());
    for (std::size_t p = 0; p < ps.size(); ++p) {
      Grain& g = mine[p];
      g = Grain{};
      g.id = ps.ids()[p];
      std::copy_n(ps.positions() + d * p, d, g.x);
      std::copy_n(ps.real("velocity") + d * p, d, g.v);
      g.density = ps.real("density")[p];
      g.state = ps.int32("state")[p];
      g.changed = ps.int32("changed")[p];
    }
    std::vector<Grain> all = all_gather(space->comm(), mine);
    std::sort(all.begin(), all.end(), [](const Grain& a, const Grain& b) { return a.id < b.id; });
    return all;
  }
};

// The paper's pour (spec 003 §8) scaled by the arguments: a disc of radius 3Δx at `height`
// pouring `count` particles onto a floor with Coulomb friction `friction`, jittered from `seed`;
// `extra`: more top-level YAML.
inline std::string pour_scene(int count, Real height, const std::string& pbd = "",
                              const std::string& extra = "", Real friction = 0.6, int seed = 1) {
  return "nendo: 1\nmethod: pbd_powder\ndimension: 3\ngravity: [0, -9.81, 0]\n"
         "time: {end: 30, dt: 0.0166666666666667}\ngrid: {dx: 0.02, block: 4}\n"
         "materials: {powder: {model: drucker_prager, E: 3.5e5, nu: 0.3, density: 1500}}\n"
         "emitters:\n  - {shape: disc, center: [0, " +
         std::to_string(height) +
         ", 0], radius: 0.015, axis: y, velocity: [0, -0.3, 0], count: " + std::to_string(count) +
         ", material: powder, seed: " + std::to_string(seed) +
         "}\n"
         "colliders: [{shape: plane, point: [0, 0, 0], normal: [0, 1, 0], boundary: separate, friction: " +
         std::to_string(friction) +
         "}]\n"
         "pbd_powder: {spacing: 0.005" +
         (pbd.empty() ? "" : ", " + pbd) + "}\n" + extra;
}

// Heap measures of spec §9 test 7: the 95th percentile of the horizontal distance from the
// emitter axis (footprint), the highest particle, and the angle of repose from the flank
// estimator of test 7(d): the height profile H(r) (max y in 1 cm radial bins), a least-squares
// line over the bins with 0.2 H_max ≤ H ≤ 0.8 H_max, θ = atan |slope|. A heap a few centimetres
// high has only two to four bins on its flank, so one alignment of the bins is luck (issue 28:
// 0.5-29.5° for one heap); `angle` is the median over kBinOffsets alignments, bin edges at
// r = (k − offset) cm.
struct Heap {
  Real angle = 0;  // degrees, median over the bin offsets
  Real height = 0;
  Real footprint = 0;
  Real rest_fraction = 0;
  std::vector<Real> angles;  // per bin offset
};

constexpr Real kBinWidth = 0.01;
constexpr int kBinOffsets = 5;  // offsets 0, 0.2, ..., 0.8 bin widths

// The flank angle (degrees) with the bin edges at r = (k − offset) kBinWidth; a bin's r is the
// middle of its part at r ≥ 0.
inline Real flank_angle(const std::vector<Grain>& grains, Real offset) {
  std::vector<Real> H(40, 0.0);
  for (const Grain& g : grains) {
    const auto bin = static_cast<std::size_t>(std::hypot(g.x[0], g.x[2]) / kBinWidth + offset);
    if (bin < H.size()) H[bin] = std::max(H[bin], g.x[1]);
  }
  const Real top = *std::max_element(H.begin(), H.end());
  Real n = 0, sr = 0, sh = 0, srr = 0, srh = 0;
  for (std::size_t b = 0; b < H.size(); ++b) {
    if (H[b] < 0.2 * top || H[b] > 0.8 * top) continue;
    const Real r = 0.5 * kBinWidth * (std::max<Real>(b - offset, 0) + b + 1 - offset);
    n += 1, sr += r, sh += H[b], srr += r * r, srh += r * H[b];
  }
  return n >= 2 ? std::atan(std::fabs((n * srh - sr * sh) / (n * srr - sr * sr))) * 180 / M_PI : 0;
}

inline Real median(std::vector<Real> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n == 0 ? 0 : n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

inline Heap measure_heap(const std::vector<Grain>& grains) {
  Heap heap;
  std::vector<Real> radii;
  std::size_t rest = 0;
  for (const Grain& g : grains) {
    radii.push_back(std::hypot(g.x[0], g.x[2]));
    heap.height = std::max(heap.height, g.x[1]);
    rest += g.state == PbdPowder::kRest;
  }
  heap.rest_fraction = grains.empty() ? 0 : static_cast<Real>(rest) / static_cast<Real>(grains.size());
  std::sort(radii.begin(), radii.end());
  heap.footprint = radii.empty() ? 0 : radii[static_cast<std::size_t>(0.95 * (radii.size() - 1))];
  for (int k = 0; k < kBinOffsets; ++k) heap.angles.push_back(flank_angle(grains, Real(k) / kBinOffsets));
  heap.angle = median(heap.angles);
  return heap;
}

}  // namespace nendo::testing
