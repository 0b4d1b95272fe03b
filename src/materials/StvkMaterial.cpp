#include "materials/StvkMaterial.hpp"

#include <cmath>

#include "materials/ElasticParameters.hpp"
#include "scene/MaterialSchema.hpp"

namespace nendo::fem {

Stiffness isotropic_stiffness(Real lambda, Real mu) {
  Stiffness D = Stiffness::Zero();
  D.topLeftCorner<3, 3>().setConstant(lambda);
  D.topLeftCorner<3, 3>().diagonal().array() += 2 * mu;
  D.bottomRightCorner<3, 3>().diagonal().setConstant(mu);
  return D;
}

// D_iso + k_f v vᵀ (spec §7 Fig. 3): with engineering shear, v·e = aᵀ E a, the fibre's stretch.
Stiffness fibre_stiffness(Real lambda, Real mu, const Vec3& fibre, Real k_fibre) {
  using Vec = Eigen::Matrix<Real, 3, 1>;
  const Vec a = Vec(fibre[0], fibre[1], fibre[2]).normalized();
  Eigen::Matrix<Real, 6, 1> v;  // Voigt
  v << a.x() * a.x(), a.y() * a.y(), a.z() * a.z(), a.x() * a.y(), a.x() * a.z(), a.y() * a.z();
  return isotropic_stiffness(lambda, mu) + k_fibre * v * v.transpose();
}

Stiffness stvk_stiffness(const MaterialSettings& material) {
  const Lame lame = lame_parameters(material);
  const Real k_fibre = material_parameter(material, "fibre_stiffness");
  if (k_fibre == 0) return isotropic_stiffness(lame.lambda, lame.mu);
  const Vec3 fibre = {material_parameter(material, "fibre_x"), material_parameter(material, "fibre_y"),
                      material_parameter(material, "fibre_z")};
  return fibre_stiffness(lame.lambda, lame.mu, fibre, k_fibre);
}

Real stvk_wave_speed(const MaterialSettings& material) {
  const Lame lame = lame_parameters(material);
  const Real modulus = lame.lambda + 2 * lame.mu + material_parameter(material, "fibre_stiffness");
  return std::sqrt(modulus / material_parameter(material, "density"));
}

}  // namespace nendo::fem

namespace nendo::fem {

MaterialModelSchema stvk_schema() {
  std::vector<KeySchema> keys = elastic_solid_keys();
  keys.push_back(KeySchema::real("fibre_stiffness",
                                 "k_f of the fibre term k_f v v^T added to the isotropic D (spec 004 Fig. 3; "
                                 "9 E in the paper's reconstruction)")
                     .measured_in("Pa")
                     .defaults_to("0")
                     .at_least(0));
  keys.push_back(KeySchema::real("fibre_x", "fibre direction, x component (normalised)").defaults_to("1"));
  keys.push_back(KeySchema::real("fibre_y", "fibre direction, y component").defaults_to("0"));
  keys.push_back(KeySchema::real("fibre_z", "fibre direction, z component").defaults_to("0"));
  return {kStvkModel,
          "St. Venant-Kirchhoff (the fem method's linear law on Green strain), optionally fibre-reinforced",
          std::move(keys)};
}

}  // namespace nendo::fem
