#include "app/FieldUnits.hpp"

#include <array>

namespace nendo {
namespace {

struct FieldUnit {
  const char* name;
  const char* unit_3d;
  const char* unit_2d;  // a 2D run is a slice of unit depth
};

// Fields of every method (decomposition/ParticleSet, methods/*), the derived ones (app/OutputView,
// Method::derive_field) and Catalyst's stress invariants (io/catalyst/VtkPieces).
constexpr std::array<FieldUnit, 43> kUnits = {{
    {"id", "1", "1"},
    {"position", "m", "m"},
    {"velocity", "m/s", "m/s"},
    {"mass", "kg", "kg/m"},
    {"volume", "m^3", "m^2"},
    {"material", "1", "1"},
    {"rank", "1", "1"},
    {"stress", "Pa", "Pa"},
    {"pressure", "Pa", "Pa"},
    {"von_mises", "Pa", "Pa"},
    {"J", "1", "1"},
    {"Jp", "1", "1"},
    // MPM
    {"F", "1", "1"},
    {"B", "m^2/s", "m^2/s"},  // APIC: sum of w v (x_i - x_p)^T
    {"tau_viscous", "Pa", "Pa"},
    {"hencky_strain", "1", "1"},
    // slave SPH
    {"Fp", "1", "1"},
    {"body", "1", "1"},
    {"kind", "1", "1"},
    {"adjacent", "1", "1"},  // particle ids
    {"solve_correction", "m/s", "m/s"},
    // shape matching
    {"rest", "m", "m"},
    {"rest_centroid", "m", "m"},
    {"mass_share", "kg", "kg/m"},
    {"fixed", "1", "1"},
    {"group", "1", "1"},
    {"aqq_inv", "1/(kg m^2)", "1/(kg m^2)"},
    {"ring", "1", "1"},
    {"example_stretch", "1", "1"},
    {"projection", "1", "1"},
    {"weights", "1", "1"},
    {"stretch", "1", "1"},
    {"rotation", "1", "1"},  // unit quaternion
    {"fit_rotation", "1", "1"},
    // powder PBD
    {"state", "1", "1"},
    {"changed", "1", "1"},      // frames
    {"density", "1", "1"},      // rho / rho_0
    {"support", "m/s", "m/s"},  // support push per substep length
    {"bond", "1", "1"},         // particle ids
    {"bond_length", "m", "m"},
    {"display_state", "1", "1"},
    // FEM
    {"status", "1", "1"},
    {"level", "1", "1"},
}};

}  // namespace

std::map<std::string, std::string> field_units(int dimension) {
  std::map<std::string, std::string> units;
  for (const FieldUnit& entry : kUnits) units[entry.name] = dimension == 2 ? entry.unit_2d : entry.unit_3d;
  return units;
}

}  // namespace nendo
