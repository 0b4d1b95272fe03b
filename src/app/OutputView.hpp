#pragma once
// The particles as a reader sees them (HDF5 output, Catalyst): the chosen fields, split into
// those the particles carry and those derived when asked (the method's, e.g. MPM's stress;
// "rank", the owner; a single-material scene's "material").
#include <string>
#include <vector>

#include "io/ParticleFile.hpp"
#include "methods/Method.hpp"

namespace nendo {

struct OutputFields {
  std::vector<std::string> stored, derived;
  std::vector<std::string> all() const;
};

// The named fields the particles or the method have. A name neither has is left out, with a
// note on rank 0 naming `purpose` ("output", "Catalyst") unless quiet.
OutputFields select_output_fields(const std::vector<std::string>& names, const Scene& scene,
                                  const Method& method, const ParticleSet& particles, int rank,
                                  const std::string& purpose, bool quiet = false);

// id, position and the fields: the stored ones copied, the derived ones computed.
ParticleSet output_view(const Space& space, const Method& method, const OutputFields& fields);

// What readers are told besides the values: the method, the unit of every field (FieldUnits.hpp),
// the material names in the order of the "material" index (the scene's, alphabetical).
ParticleLabels output_labels(const Scene& scene);
// How the output files store the fields: output.precision and output.compression.
ParticleStorage output_storage(const Scene& scene);

}  // namespace nendo
