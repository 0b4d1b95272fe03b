// The slave_sph method's cost model (methods/MethodCost.hpp): measured in docs/performance.md
// "Sizing a job". Masters are the bodies' lattice; slaves the lattice shifted by d/2 within 2h = 2d
// of a master (SlaveTopology.cpp, I2).
#include <cmath>

#include "bodies/BodySeeder.hpp"
#include "methods/MethodCost.hpp"
#include "methods/slave_sph/SlaveSphSettings.hpp"

namespace nendo {
namespace {

// A box of n_a masters per axis: per axis n_a + 1 slave planes lie d/2 from the masters and 2 lie
// 3d/2 off; a slave is within 2d of a master when its squared offsets sum below 4 d^2, i.e. when
// at most one axis is off by 3d/2.
double box_slaves(const std::uint64_t n[3]) {
  double near = 1, one_off = 0;
  for (int a = 0; a < 3; ++a) near *= double(n[a] + 1);
  for (int a = 0; a < 3; ++a) one_off += 2 * near / double(n[a] + 1);
  return near + one_off;
}

ProblemSize slave_sph_size(const Scene& scene) {
  ProblemSize size{0, 0, 0, "masters + slaves", "", ""};
  std::uint64_t masters = 0;
  double slaves = 0;
  for (const BodySettings& body : scene.bodies) {
    Scene one = scene;
    one.bodies = {body};
    const std::uint64_t m = count_seeded_particles(one, scene.grid.dx);
    masters += m;
    if (!scene.sections.get<SlaveSphSettings>().slaves) continue;  // the masters-only baseline
    if (body.shape == "box") {
      std::uint64_t n[3];
      for (int a = 0; a < 3; ++a) {  // the masters per axis: the box's extent along a, counted alone
        BodySettings axis = body;
        axis.min[0] = body.min[a], axis.max[0] = body.max[a];
        n[a] = count_lattice_particles(axis, 1, scene.grid.dx);
      }
      slaves += box_slaves(n);
    } else {  // as a box of the same number of masters
      const auto side = std::uint64_t(std::llround(std::cbrt(double(m))));
      const std::uint64_t n[3] = {side, side, side};
      slaves += box_slaves(n);
      size.estimated = "the slaves of a " + body.shape + " body are estimated as those of a cube";
    }
  }
  if (scene.bodies.size() > 1 && slaves > 0)
    size.estimated = "slaves of bodies that touch are counted once per body";
  size.particles = masters + std::uint64_t(std::llround(slaves));
  size.detail = std::to_string(masters) + " masters + " + std::to_string(std::llround(slaves)) + " slaves";
  return size;
}

MethodCost slave_sph_cost() {
  MethodCost cost;
  cost.size = slave_sph_size;
  cost.distributed.per_particle = 1893;
  cost.exchange.per_particle = 865;
  cost.rate = 2.6e5;
  cost.rate_source = "64^3 plastic cube on the floor";
  return cost;
}

[[maybe_unused]] const bool registered = (register_method_cost("slave_sph", slave_sph_cost()), true);

}  // namespace
}  // namespace nendo
