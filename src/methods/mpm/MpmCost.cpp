// The mpm method's cost model (methods/MethodCost.hpp): measured in docs/performance.md "Sizing a job".
#include "methods/MethodCost.hpp"

namespace nendo {
namespace {

MethodCost mpm_cost() {
  MethodCost cost;
  cost.size = seeded_particles_size;
  cost.distributed.per_particle = 434;
  cost.exchange.per_particle = 174;
  cost.rate = 5.6e6;
  cost.rate_source = "fixed corotated, 1 M particles";
  return cost;
}

[[maybe_unused]] const bool registered = (register_method_cost("mpm", mpm_cost()), true);

}  // namespace
}  // namespace nendo
