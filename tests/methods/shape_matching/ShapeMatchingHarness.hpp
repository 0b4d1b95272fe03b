#pragma once
// Runs a shape-matching scene in-process (parse, seed, distribute, step) and gathers the vertex
// state to every rank, for tests that look between steps.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/Mpi.hpp"
#include "decomposition/GlobalView.hpp"
#include "methods/shape_matching/ShapeMatching.hpp"
#include "support/MethodRun.hpp"

namespace nendo::testing {

struct SmVertex {
  ParticleId id;
  std::int32_t body, group;
  Real x[3], v[3], rest[3], weights[4], stretch[12], projection[12], mass, descriptor[6];
};

struct SmRun : MethodRun {
  using MethodRun::MethodRun;

  // Every vertex of every rank, sorted by id, on every rank (up to 2 examples). Collective.
  std::vector<SmVertex> gather() const {
    const ParticleSet& ps = space->particles();
    const int wc = ps.field("weights").components(), sc = ps.field("example_stretch").components();
    std::vector<SmVertex> mine(ps.size());
    for (std::size_t p = 0; p < ps.size(); ++p) {
      SmVertex& q = mine[p];
      q = SmVertex{};
      q.id = ps.ids()[p];
      q.body = ps.int32("body")[p];
      q.group = ps.int32("group")[p];
      q.mass = ps.real("mass")[p];
      std::copy_n(ps.real("stretch") + 6 * p, 6, q.descriptor);
      std::copy_n(ps.positions() + 3 * p, 3, q.x);
      std::copy_n(ps.real("velocity") + 3 * p, 3, q.v);
      std::copy_n(ps.real("rest") + 3 * p, 3, q.rest);
      std::copy_n(ps.real("weights") + wc * p, std::min(wc, 4), q.weights);
      std::copy_n(ps.real("example_stretch") + sc * p, std::min(sc, 12), q.stretch);
      std::copy_n(ps.real("projection") + sc * p, std::min(sc, 12), q.projection);
    }
    std::vector<SmVertex> all = all_gather(space->comm(), mine);
    std::sort(all.begin(), all.end(), [](const SmVertex& a, const SmVertex& b) { return a.id < b.id; });
    return all;
  }
};

// A scene with one bar (nx × ny × nz vertices, spacing 0.04 m) and `extra` body keys.
inline std::string bar_scene(const std::string& body_keys, const std::string& top = "", int nx = 13,
                             int ny = 4, int nz = 4) {
  const double s = 0.04;
  return "nendo: 1\nmethod: shape_matching\ndimension: 3\ngravity: [0, 0, 0]\n"
         "time: {end: 1.0, dt: 0.0166666666666667}\ngrid: {dx: 0.12, block: 3}\n"
         "materials: {rubber: {model: neo_hookean, E: 1.0e6, nu: 0.3, density: 1000}}\n"
         "bodies:\n  - {shape: box, min: [0, 0, 0], max: [" +
         std::to_string(s * (nx - 1)) + ", " + std::to_string(s * (ny - 1)) + ", " +
         std::to_string(s * (nz - 1)) + "], particles_per_cell: 3, material: rubber" +
         (body_keys.empty() ? "" : ", " + body_keys) + "}\n" + top;
}

}  // namespace nendo::testing
