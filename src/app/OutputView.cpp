#include "app/OutputView.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "app/FieldUnits.hpp"
#include "core/Mpi.hpp"

namespace nendo {

std::vector<std::string> OutputFields::all() const {
  std::vector<std::string> names = stored;
  names.insert(names.end(), derived.begin(), derived.end());
  return names;
}

OutputFields select_output_fields(const std::vector<std::string>& names, const Scene& scene,
                                  const Method& method, const ParticleSet& particles, int rank,
                                  const std::string& purpose, bool quiet) {
  OutputFields fields;
  for (const auto& name : names) {
    if (particles.has_field(name))
      fields.stored.push_back(name);
    else if (name == "rank" || (name == "material" && scene.materials.size() <= 1) ||
             method.derived_field_components(name) > 0)
      fields.derived.push_back(name);
    else if (rank == 0 && !quiet)
      fmt::print("nendo: note: method '{}' has no particle field '{}'; it is not in the {}\n", scene.method,
                 name, purpose);
  }
  return fields;
}

ParticleSet output_view(const Space& space, const Method& method, const OutputFields& fields) {
  const ParticleSet& ps = space.particles();
  ParticleSet view(ps.dimension());
  for (const auto& name : fields.stored)
    if (!view.has_field(name)) view.add_field(name, ps.field(name).type(), ps.field(name).components());
  // "rank" and a single-material scene's "material" are integers the driver knows.
  const auto is_index = [](const std::string& name) { return name == "rank" || name == "material"; };
  for (const auto& name : fields.derived)
    view.add_field(name, is_index(name) ? FieldType::Int32 : FieldType::Real,
                   is_index(name) ? 1 : method.derived_field_components(name));
  view.resize(ps.size());
  const auto copy = [&](const ParticleField& from) {
    if (ps.size() > 0)  // an empty rank's fields have no storage
      std::memcpy(view.field(from.name()).raw(), from.raw(), from.bytes_per_particle() * ps.size());
  };
  copy(ps.fields()[0]);  // id
  copy(ps.fields()[1]);  // position
  for (const auto& name : fields.stored) copy(ps.field(name));
  for (const auto& name : fields.derived) {
    if (name == "rank")
      std::fill_n(view.int32("rank"), ps.size(), mpi::rank(space.comm()));
    else if (name == "material")
      std::fill_n(view.int32("material"), ps.size(), 0);
    else
      method.derive_field(space, name, view.real(name));
  }
  return view;
}

ParticleLabels output_labels(const Scene& scene) {
  ParticleLabels labels;
  labels.method = scene.method;
  for (const auto& material : scene.materials) labels.material_names.push_back(material.first);
  labels.units = field_units(scene.dimension);
  return labels;
}

ParticleStorage output_storage(const Scene& scene) {
  ParticleStorage storage;
  storage.single_precision = scene.output.precision == "single";
  storage.compression = scene.output.compression == "deflate" ? Compression::Deflate : Compression::None;
  storage.deflate_level = scene.output.compression_level;
  return storage;
}

}  // namespace nendo
