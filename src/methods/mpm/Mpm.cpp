#include "methods/mpm/Mpm.hpp"

#include <algorithm>

#include "methods/mpm/MpmStep.hpp"

namespace nendo {
namespace {

template <int D>
std::unique_ptr<MpmStepper> make_stepper(const Scene& scene) {
  if (scene.grid.kernel == "cubic") return std::make_unique<MpmStep<D, CubicSpline>>(scene);
  return std::make_unique<MpmStep<D, QuadraticSpline>>(scene);
}

}  // namespace

Mpm::Mpm(const Scene& scene)
    : dimension_(scene.dimension),
      multi_material_(scene.materials.size() > 1),
      plastic_(std::any_of(scene.materials.begin(), scene.materials.end(),
                           [](const auto& m) {
                             return std::visit([](const auto& model) { return model.kPlastic; },
                                               make_mpm_material(m.second));
                           })),
      viscous_(std::any_of(scene.materials.begin(), scene.materials.end(),
                           [](const auto& m) {
                             return m.second.model == Fluid::kName && m.second.params.at("viscosity") > 0;
                           })),
      stepper_(scene.dimension == 3 ? make_stepper<3>(scene) : make_stepper<2>(scene)) {}

void Mpm::register_fields(ParticleSet& particles) const {
  const int d = particles.dimension();
  particles.add_field("B", FieldType::Real, d * d);  // APIC affine matrix (spec 002 §6.1)
  particles.add_field("F", FieldType::Real, d * d);  // deformation gradient (elastic part F_E), row-major
  // Mass is ρ V⁰ of the particle's material; the material index and J_P (spec 002 §3) are carried
  // only when they vary: several materials, a plastic one.
  if (multi_material_) particles.add_field("material", FieldType::Int32, 1);
  if (plastic_) particles.add_field("Jp", FieldType::Real, 1);
  // Viscous Kirchhoff stress J η (L + Lᵀ) from the last velocity gradient: only with a viscous fluid.
  if (viscous_) particles.add_field("tau_viscous", FieldType::Real, d * d);
}

}  // namespace nendo
