#pragma once
// The particles as a reader sees them (HDF5 output, Catalyst): the chosen fields, split into
// those the particles carry and those derived when asked (the method's, e.g. MPM's stress;
// "rank", the owner; a single-material scene's "material").
#include <string>
#include <vector>

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

}  // namespace nendo
