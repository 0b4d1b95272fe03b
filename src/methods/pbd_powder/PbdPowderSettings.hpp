#pragma once
// The pbd_powder method's settings (spec 003): its section, its emitters, its checks and its
// registry entry.
#include <cstdint>
#include <optional>
#include <string>

#include "core/Types.hpp"
#include "scene/SceneRegistry.hpp"

namespace nendo {

// Names follow the spec's symbols. Particles are Δx = spacing apart, h = support·Δx; one nendo step
// is one frame.
struct PbdPowderSettings {
  Real spacing = 0.005;                   // Δx (m)
  Real support = 2;                       // h / Δx
  int substeps = 8;                       // n_sub per frame (§10 B1)
  int iterations = 4;                     // n_iter Jacobi iterations per substep
  Real relaxation = 0.01;                 // ε_rel: ε = ε_rel D_0 in λ (§5.4); 0: the paper's Eq. (4)
  std::string rest_distance = "mean";     // mean: d̄_0 of the lattice (§5.3) | contact: d = Δx
  std::string rest_constraint = "pairs";  // sum: Eq. (5) | pairs: frozen pair distances (§10 B5)
  bool transitions = true;                // false: every particle keeps its initial state
  std::string initial_state = "flow";     // of body particles (emitted ones start flowing)
  Real density_rate = 10;                 // τ_ρ (1/s), Eq. (8); the spec's 3 lets heaps melt (calibrated)
  std::string density_change = "magnitude";  // magnitude | dilation (§10 B8)
  Real speed_factor = 1;                     // τ_v = speed_factor √(|g| h), Eq. (9)
  std::string rest_when = "stopped";         // stopped (issue 28) | above: the paper (§10 B6) | below
  int transition_frames = 5;                 // K_vis: frames a changed particle is tagged (§4.4)
  bool scorr = false;                        // artificial pressure (§3.3, B4)
  bool unilateral = true;                    // clamp F_i ≥ 0 (B4); the spec's default is false
  bool contact = true;                       // particles kept Δx apart (an extension)
  Real friction = 0.6;                       // μ between particles (an extension, issue 28)
  Real xsph = 0;                             // XSPH viscosity c (§3.3)
  Real vorticity = 0;                        // vorticity confinement ε_vort (§3.3)
};

// A source of powder particles (spec 003 §8): a lattice of spacing Δx in a disc (one layer per
// emission) or a box, emitted every frame or at a rate, until `count` particles. The scene's
// emitters: scene.sections.get<std::vector<EmitterSettings>>().
struct EmitterSettings {
  std::string shape;  // disc | box
  std::string material;
  Vec3 center{};      // disc
  Real radius = 0;    // disc
  int axis = 1;       // disc: its normal
  Vec3 min{}, max{};  // box
  Vec3 velocity{};
  std::optional<Real> rate;  // particles per second; unset: one emission per frame
  std::uint64_t count = 0;   // emission stops at this many particles
  Real start = 0;            // time of the first emission (s)
  Real jitter = 0.01;        // positions jittered by ± jitter Δx
  std::uint64_t seed = 1;
};

}  // namespace nendo
