#pragma once
// The slave_sph method's settings (spec 000): its section, its checks and its registry entry.
#include <string>

#include "core/Types.hpp"
#include "scene/SceneRegistry.hpp"

namespace nendo {

// Names follow the spec's symbols.
struct SlaveSphSettings {
  bool slaves = true;           // false: the masters-only baseline of spec §4.4 (zero-energy modes)
  Real alpha = 0.9;             // master velocity blend, Eq. (8)
  std::string blend = "paper";  // paper: Eq. (8) literally | flip: the kept part follows the slaves' change
  Real beta = 1;                // implicitness of the slave velocity solve, Eq. (15)
  Real gamma = 2.5;             // adjacency radius γ r with r = d/2 (§3.11, A13)
  Real delete_distance = 0.15;  // slave-slave deletion distance in units of h (§3.12)
  bool insertion = true;        // §3.11
  bool deletion = true;         // §3.12
  std::string gradient = "zero_sum";  // zero_sum (g̃, A5) | plain (the paper's literal g)
  std::string reference = "shepard";  // v̂_m (7R) | master (the literal v^n_m of Eq. 7)
  Real cg_tol = 1e-5;                 // relative residual of the CG solve (A8)
  int cg_max = 1000;
  bool project_spd = true;  // definiteness projection of each master's energy Hessian
};

}  // namespace nendo
