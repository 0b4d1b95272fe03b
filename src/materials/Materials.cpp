#include "materials/Materials.hpp"

#include <optional>
#include <string>

#include "core/Error.hpp"
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

template <class... Models>
void register_all(const std::variant<Models...>* /*tag*/) {
  (
      [] {
        if (!find_material_model(Models::kName)) register_material_model(Models::schema());
      }(),
      ...);
}

}  // namespace

MpmMaterial make_mpm_material(const MaterialSettings& settings) {
  return make_by_name(settings, static_cast<const MpmMaterial*>(nullptr));
}

void register_mpm_material_schemas() { register_all(static_cast<const MpmMaterial*>(nullptr)); }

}  // namespace nendo
