#pragma once
// The fem method's settings (spec 004): its section, its keys of a body, its checks and its
// registry entry.
#include <string>

#include "core/Types.hpp"
#include "scene/SceneRegistry.hpp"

namespace nendo {

// Names follow the spec's symbols.
struct FemSettings {
  Real spacing = 0.1;                  // level-0 edge length of box bodies (m)
  int max_level = 2;                   // L_max
  int min_level = 0;                   // never coarser (an extension: coarse tets lock in bending)
  Real linear_tolerance = 0.05;        // δ_lin (§5 H4f)
  Real agree_tolerance = 0.01;         // τ_agree (§4.4)
  Real error_tolerance = 0.003;        // τ_err: recovered-strain error indicator (an extension; issue 28)
  Real coarsen_factor = 0.8;           // κ_c (§4.4)
  Real damping = 0;                    // c_m, mass-proportional (1/s)
  Real bulk_viscosity = 0;             // φ (Pa s), the same at every level (§10 C11)
  Real shear_viscosity = 0;            // ψ (Pa s)
  std::string boundary = "kinematic";  // kinematic | vertices_only (§10 C2)
  std::string model = "local";         // local | whole: what each rank builds (issue 34)
};

// The keys an fem body adds (body.method_keys.get<FemBody>()).
struct FemBody {
  bool fixed = false;  // vertices inside [fixed_min, fixed_max] at rest are held
  Vec3 fixed_min{}, fixed_max{};
  // Fig. 4: finest tets whose rest centroid is in an odd cell of a lattice of cube side
  // alternate_cell take alternate_material instead ("": none).
  std::string alternate_material;
  Real alternate_cell = 0;
};

}  // namespace nendo
