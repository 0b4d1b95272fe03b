#pragma once
// Explicit and implicit MPM (spec 002 §9, §10): APIC (default), PIC or FLIP transfers with
// quadratic or cubic B-splines, on the spine's blocks, windows and ghost exchange. The method is
// MpmMethod<D, Kernel> (MpmMethod.hpp); the explicit step reads like spec §9.2 (ExplicitStep.hpp).
#include <memory>

#include "methods/Method.hpp"

namespace nendo {

// The MPM method of the scene's dimension and grid.kernel.
std::unique_ptr<Method> make_mpm(const Scene& scene);

}  // namespace nendo
