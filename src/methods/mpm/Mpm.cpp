#include "methods/mpm/Mpm.hpp"

#include "methods/mpm/MpmMethod.hpp"

namespace nendo {
namespace {

template <int D>
std::unique_ptr<Method> make_mpm_of_dimension(const Scene& scene) {
  if (scene.grid.kernel == "cubic") return std::make_unique<MpmMethod<D, CubicSpline>>(scene);
  return std::make_unique<MpmMethod<D, QuadraticSpline>>(scene);
}

}  // namespace

std::unique_ptr<Method> make_mpm(const Scene& scene) {
  return scene.dimension == 3 ? make_mpm_of_dimension<3>(scene) : make_mpm_of_dimension<2>(scene);
}

}  // namespace nendo
