// The mpm method's scene schema (spec 002): the spine's grid and time sections and the implicit
// solver's; its materials are every model no other method claims.
#include "methods/ImplicitSettings.hpp"

namespace nendo {

namespace {

MethodSchema mpm_schema() {
  MethodSchema method;
  method.name = "mpm";
  method.sections = {implicit_section()};
  method.geometric_multigrid = true;  // the block grid coarsened by 2 (ImplicitCoarseGrid.hpp)
  return method;
}

// Registered before main() (the methods library is linked whole: nendo_whole_archive in CMake).
[[maybe_unused]] const bool registered = (register_method(mpm_schema()), true);

}  // namespace

}  // namespace nendo
