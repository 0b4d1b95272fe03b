#pragma once
// What every stage of an MPM step reads and nothing changes during a run: the scene's materials,
// transfer scheme, colliders, gravity and integrator, read once, and the per-particle view of
// the fields the stages share (spec 002 §9.1).
#include <Eigen/Dense>
#include <limits>
#include <type_traits>
#include <variant>
#include <vector>

#include "colliders/Collider.hpp"
#include "core/StageClock.hpp"
#include "decomposition/ParticleSet.hpp"
#include "materials/Materials.hpp"
#include "methods/ImplicitSettings.hpp"
#include "scene/Scene.hpp"

namespace nendo {

enum class Transfer { Apic, Pic, Flip };

// The stages an MPM step times (the benchmark and the run's log report them); P2G includes each
// block's stress.
enum MpmStage { kP2G, kScatter, kGrid, kGather, kG2P, kMigrate, kSolve };
inline StageClock mpm_stage_clock() {
  return StageClock{"P2G", "scatter_add", "grid", "gather", "G2P", "migrate", "solve"};
}

template <int D>
struct MpmModel {
  using Vec = Eigen::Matrix<Real, D, 1>;

  explicit MpmModel(const Scene& scene)
      : gravity(Eigen::Map<const Eigen::Matrix<Real, 3, 1>>(scene.gravity.data()).template head<D>()),
        transfer(scene.grid.transfer == "pic"    ? Transfer::Pic
                 : scene.grid.transfer == "flip" ? Transfer::Flip
                                                 : Transfer::Apic),
        flip_ratio(scene.grid.flip_ratio),
        overlap(scene.grid.overlap),
        cfl(scene.time.cfl.value_or(0)),
        colliders(scene.colliders, scene.dimension),
        implicit(scene.time.integrator == "implicit"),
        midpoint(implicit && scene.sections.get<ImplicitSettings>().scheme == "midpoint"),
        implicit_settings(scene.sections.get<ImplicitSettings>()) {
    for (const auto& [name, settings] : scene.materials) {
      materials.push_back(make_mpm_material(settings));
      density.push_back(settings.params.at("density"));
      plastic = plastic || std::visit([](const auto& m) { return m.kPlastic; }, materials.back());
      rate_term = rate_term || rate_dependent(materials.back());
      hencky = hencky ||
               (!implicit &&
                std::visit([](const auto& m) { return CarriesHencky<std::decay_t<decltype(m)>, D>::value; },
                           materials.back()));
    }
  }

  // What the stages read per particle besides F, x, v, B. A particle carries J_P only when the
  // scene has a plastic material and its material index only when there are several; its mass is
  // ρ V⁰ (make_mpm registers the fields): 208 bytes per particle for an elastic 3D scene.
  struct Fields {
    const std::int32_t* material_index;
    const Real* plastic_ratio;
    const Real* V0;
    const Real* density;
    int material(std::size_t p) const { return material_index ? material_index[p] : 0; }
    Real Jp(std::size_t p) const { return plastic_ratio ? plastic_ratio[p] : 1.0; }
    Real mass(std::size_t p) const { return density[material(p)] * V0[p]; }
  };
  Fields fields(const ParticleSet& ps) const {
    return {ps.has_field("material") ? ps.int32("material") : nullptr,
            ps.has_field("Jp") ? ps.real("Jp") : nullptr, ps.real("volume"), density.data()};
  }

  // Grid components: mass, momentum (+ Δt force), or mass, momentum, force apart when the step
  // needs vⁿ on the grid (FLIP, the implicit midpoint rule). Velocity components: v^{n+1}, then vⁿ
  // (FLIP, midpoint), then the midpoint velocity that moves the particles (midpoint).
  bool split_grid() const { return transfer == Transfer::Flip || midpoint; }
  int grid_components() const { return split_grid() ? 1 + 2 * D : 1 + D; }
  int velocity_components() const { return midpoint ? 3 * D : transfer == Transfer::Flip ? 2 * D : D; }

  Vec gravity;
  Transfer transfer;
  Real flip_ratio;
  bool overlap;  // grid.overlap
  Real cfl;
  ColliderSet colliders;
  std::vector<MpmMaterial> materials;
  std::vector<Real> density;
  bool plastic = false;    // a material projects F after the update (spec §3.2)
  bool rate_term = false;  // a material with a nonzero rate term, HasRateTerm (particles carry tau_viscous)
  // An explicit scene with a material whose stress is linear in the elastic Hencky strain, which
  // G2P's return mapping leaves for the next P2G (particles carry hencky_strain).
  bool hencky = false;
  bool implicit;
  bool midpoint;  // implicit.scheme: midpoint
  ImplicitSettings implicit_settings;
};

}  // namespace nendo
