// The pbd_powder method's cost model (methods/MethodCost.hpp): measured in docs/performance.md
// "Sizing a job". Bodies are lattices of spacing Δx; the emitters add their counts.
#include "methods/MethodCost.hpp"
#include "methods/pbd_powder/PbdPowderSettings.hpp"

namespace nendo {
namespace {

ProblemSize powder_size(const Scene& scene) {
  const std::uint64_t bodies =
      count_seeded_particles(scene, scene.sections.get<PbdPowderSettings>().spacing, 1);
  std::uint64_t emitted = 0;
  for (const EmitterSettings& emitter : scene.sections.get<std::vector<EmitterSettings>>())
    emitted += emitter.count;
  ProblemSize size{bodies + emitted, 0, 0, "particles", "", ""};
  if (emitted > 0)
    size.detail = std::to_string(bodies) + " in bodies + " + std::to_string(emitted) + " emitted";
  return size;
}

MethodCost pbd_powder_cost() {
  MethodCost cost;
  cost.size = powder_size;
  cost.distributed.per_particle = 1347;
  cost.exchange.per_particle = 681;
  cost.rate = 1.3e6;  // particle-iterations per second
  cost.work_per_step = [](const Scene& scene) {
    const PbdPowderSettings& s = scene.sections.get<PbdPowderSettings>();
    return double(s.substeps) * s.iterations;
  };
  cost.rate_source = "1.3 M particle-iterations/s, a 1 M block";
  return cost;
}

[[maybe_unused]] const bool registered = (register_method_cost("pbd_powder", pbd_powder_cost()), true);

}  // namespace
}  // namespace nendo
