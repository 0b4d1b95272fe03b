// The ballistic method's scene schema: gravity and the spine's keys, no section of its own.
#include "scene/SceneRegistry.hpp"

namespace nendo {

namespace {

MethodSchema ballistic_schema() {
  MethodSchema method;
  method.name = "ballistic";
  return method;
}

// Registered before main() (the methods library is linked whole: nendo_whole_archive in CMake).
[[maybe_unused]] const bool registered = (register_method(ballistic_schema()), true);

}  // namespace

}  // namespace nendo
