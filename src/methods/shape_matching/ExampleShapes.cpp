#include "methods/shape_matching/ExampleShapes.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/Error.hpp"
#include "io/GmshMesh.hpp"

namespace nendo {
namespace {

constexpr Real kPi = 3.14159265358979323846;
Real radians(Real degrees) { return degrees * kPi / 180; }

// θ(s) = Θ (s/ℓ − ½) about the long axis.
void twist(const ExampleSettings& e, const ExampleFrame& f, Real* x) {
  const int b = (f.axis + 1) % 3, c = (f.axis + 2) % 3;
  const Real theta = radians(e.angle) * ((x[f.axis] - f.start) / f.length - 0.5);
  const Real u = x[b] - f.center[b], w = x[c] - f.center[c];
  x[b] = f.center[b] + std::cos(theta) * u - std::sin(theta) * w;
  x[c] = f.center[c] + std::sin(theta) * u + std::cos(theta) * w;
}

// Centre line a sin(2π s/ℓ) along direction d; cross-sections turned by atan(dz_c/ds).
void bend(const ExampleSettings& e, const ExampleFrame& f, Real* x) {
  const int a = f.axis, d = e.direction;
  const Real s = x[a] - f.start, k = 2 * kPi / f.length;
  const Real phi = std::atan(e.amplitude * k * std::cos(k * s));
  const Real offset = x[d] - f.center[d];
  x[a] = f.start + s - offset * std::sin(phi);
  x[d] = f.center[d] + e.amplitude * std::sin(k * s) + offset * std::cos(phi);
}

// Beyond s0 the axis is compressed by `factor`, the cross-section widened towards 1/√factor.
void squash(const ExampleSettings& e, const ExampleFrame& f, Real* x) {
  const Real s0 = e.start * f.length, s = x[f.axis] - f.start;
  if (s <= s0) return;
  const Real ramp = std::min<Real>(1, (s - s0) / (f.length - s0));
  const Real widen = 1 + (1 / std::sqrt(e.factor) - 1) * ramp;
  x[f.axis] = f.start + s0 + e.factor * (s - s0);
  for (int b = 0; b < 3; ++b)
    if (b != f.axis) x[b] = f.center[b] + widen * (x[b] - f.center[b]);
}

void shear(const ExampleSettings& e, const ExampleFrame& f, Real* x) {
  const Real s0 = e.start * f.length, s = x[f.axis] - f.start;
  if (s > s0) x[e.direction] += std::tan(radians(e.angle)) * (s - s0);
}

std::vector<Real> from_file(const std::string& path, const TetMesh& rest) {
  const TetMesh mesh = read_gmsh_tet_mesh(path);
  if (mesh.vertex_count() != rest.vertex_count() || mesh.tets != rest.tets)
    throw Error(path + ": an example must have the body's vertices and tets in the same order (it has " +
                std::to_string(mesh.vertex_count()) + " vertices and " + std::to_string(mesh.tet_count()) +
                " tets, the body " + std::to_string(rest.vertex_count()) + " and " +
                std::to_string(rest.tet_count()) + ")");
  return mesh.vertices;
}

}  // namespace

ExampleFrame example_frame(const Vec3& lo, const Vec3& hi) {
  ExampleFrame frame;
  for (int a = 1; a < 3; ++a)
    if (hi[a] - lo[a] > hi[frame.axis] - lo[frame.axis]) frame.axis = a;
  frame.start = lo[frame.axis];
  frame.length = hi[frame.axis] - lo[frame.axis];
  for (int a = 0; a < 3; ++a) frame.center[a] = (lo[a] + hi[a]) / 2;
  return frame;
}

bool is_generated(const ExampleSettings& example) { return example.type != "file"; }

std::vector<Real> generated_example(const ExampleSettings& example, const ExampleFrame& frame,
                                    std::vector<Real> x) {
  using Generator = void (*)(const ExampleSettings&, const ExampleFrame&, Real*);
  const Generator generator = example.type == "twist"    ? twist
                              : example.type == "bend"   ? bend
                              : example.type == "squash" ? squash
                              : example.type == "shear"  ? shear
                                                         : nullptr;
  if (!generator) throw Error("unknown example type '" + example.type + "'");
  for (std::size_t v = 0; v < x.size() / 3; ++v) generator(example, frame, &x[3 * v]);
  return x;
}

std::vector<Real> example_shape(const ExampleSettings& example, const TetMesh& rest) {
  if (!is_generated(example)) return from_file(example.path, rest);
  Vec3 lo, hi;
  lo.fill(std::numeric_limits<Real>::infinity());
  hi.fill(-std::numeric_limits<Real>::infinity());
  for (std::size_t v = 0; v < rest.vertex_count(); ++v)
    for (int a = 0; a < 3; ++a)
      lo[a] = std::min(lo[a], rest.vertex(v)[a]), hi[a] = std::max(hi[a], rest.vertex(v)[a]);
  return generated_example(example, example_frame(lo, hi), rest.vertices);
}

}  // namespace nendo
