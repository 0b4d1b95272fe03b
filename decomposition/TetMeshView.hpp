#pragma once
// A rank's tetrahedral mesh as a mesh method (FEM) shows it to the output and Catalyst: the
// vertices are particles, the tets index them.
#include <cstdint>
#include <string>
#include <vector>

#include "decomposition/ParticleSet.hpp"

namespace nendo {

// A number per tet of a mesh (FEM: "level", the tet's level in the hierarchy), in tet order.
struct TetField {
  std::string name;
  std::vector<std::int32_t> values;
};

// A tetrahedral mesh: vertex positions and fields in a ParticleSet, four vertex indices per tet,
// and optionally fields per tet.
struct TetMeshView {
  const ParticleSet* vertices = nullptr;
  const std::vector<std::int64_t>* tets = nullptr;
  const std::vector<TetField>* tet_fields = nullptr;  // null: none
};

}  // namespace nendo
