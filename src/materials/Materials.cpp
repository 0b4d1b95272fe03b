#include "materials/Materials.hpp"

#include <optional>
#include <string>

#include "core/Error.hpp"
#include "materials/StvkMaterial.hpp"
#include "scene/MaterialSchema.hpp"

namespace nendo {

namespace {

template <class... Models>
MpmMaterial make_by_name(const MaterialSettings& settings, const std::variant<Models...>* /*tag*/) {
  std::optional<MpmMaterial> material;
  static_cast<void>(
      ((settings.model == Models::kName ? (material.emplace(std::in_place_type<Models>, settings), true)
                                        : false) ||
       ...));
  if (!material) throw Error("unknown MPM material model '" + settings.model + "'");
  return std::move(*material);
}

// The models a scene may name, in reference order: the MPM variant's, then the fem method's stvk.
template <class... Models>
bool register_all(const std::variant<Models...>* /*tag*/) {
  (register_material_model(Models::schema()), ...);
  register_material_model(fem::stvk_schema());
  return true;
}

}  // namespace

MpmMaterial make_mpm_material(const MaterialSettings& settings) {
  return make_by_name(settings, static_cast<const MpmMaterial*>(nullptr));
}

// The models register before main() (this library is linked whole: nendo_whole_archive in CMake).
[[maybe_unused]] const bool registered = register_all(static_cast<const MpmMaterial*>(nullptr));

}  // namespace nendo
