// The ballistic method's cost model (methods/MethodCost.hpp): its fields and the spine's buffers.
#include "methods/MethodCost.hpp"

namespace nendo {
namespace {

MethodCost ballistic_cost() {
  MethodCost cost;
  cost.size = seeded_particles_size;
  cost.distributed.per_particle = 173;
  cost.exchange.per_particle = 35;
  cost.rate = 5e7;
  cost.rate_source = "one kick and drift per particle";
  return cost;
}

[[maybe_unused]] const bool registered = (register_method_cost("ballistic", ballistic_cost()), true);

}  // namespace
}  // namespace nendo
