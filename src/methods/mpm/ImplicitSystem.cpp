#include "methods/mpm/ImplicitSystem.hpp"

namespace nendo {

template class MpmImplicitSystem<2, QuadraticSpline>;
template class MpmImplicitSystem<3, QuadraticSpline>;
template class MpmImplicitSystem<2, CubicSpline>;
template class MpmImplicitSystem<3, CubicSpline>;

}  // namespace nendo
