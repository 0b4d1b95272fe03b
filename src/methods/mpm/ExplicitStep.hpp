#pragma once
// The explicit MPM step of spec 002 §9.2 for dimension D and kernel Kernel: the algorithm's stages
// in order, each one of the transfers (Transfers.hpp) or an exchange of the spine.
#include "core/StageClock.hpp"
#include "decomposition/Space.hpp"
#include "methods/mpm/MpmModel.hpp"
#include "methods/mpm/Transfers.hpp"

namespace nendo {

// One explicit step from t to t + dt (step: its number, for messages).
template <int D, class Kernel>
void explicit_step(Space& space, Real t, Real dt, long step, const MpmModel<D>& model,
                   Transfers<D, Kernel>& transfers, StageClock& clock) {
  // Each exchange overlaps with work on interior blocks: the blocks other ranks need go first,
  // their slices travel while the rest is computed (the sums keep their order: same bits).
  // Without overlap, the first part is every block.
  const GhostExchange& ghost = space.ghost();
  const std::size_t sources = ghost.source_keys().size(), grids = ghost.grid_blocks();
  const std::size_t source_edge = model.overlap ? ghost.boundary_sources() : sources;
  const std::size_t grid_edge = model.overlap ? ghost.boundary_grid_blocks() : grids;
  const int c = model.grid_components(), cv = model.velocity_components();
  transfers.sticky().update(space, t);  // which sticky walls reflect
  clock.time(kP2G, [&] {                // §9.2 steps 1-3, 6, with the stress of §8 eq. (189) block by block
    transfers.clear_windows(ghost);
    transfers.particles_to_grid(space, ghost, dt, 0, source_edge);
  });
  clock.time(kScatter, [&] { ghost.start_scatter(transfers.windows(), c); });
  clock.time(kP2G, [&] { transfers.particles_to_grid(space, ghost, dt, source_edge, sources); });
  clock.time(kScatter, [&] { ghost.finish_scatter(transfers.windows(), c, transfers.grid()); });
  clock.time(kGrid, [&] {  // steps 4, 5, 7, 8
    transfers.clear_grid_velocity(ghost);
    transfers.update_grid(ghost, t, dt, true, 0, grid_edge);
  });
  clock.time(kGather, [&] { ghost.start_gather(transfers.grid_velocity(), cv); });
  clock.time(kGrid, [&] { transfers.update_grid(ghost, t, dt, true, grid_edge, grids); });
  clock.time(kGather, [&] { ghost.finish_gather(transfers.grid_velocity(), cv, transfers.windows()); });
  clock.time(kGrid, [&] { transfers.reflect_behind_sticky_walls(space); });
  clock.time(kG2P, [&] { transfers.grid_to_particles(space, dt, step); });  // steps 9-11, 13
  clock.time(kMigrate, [&] { space.migrate(); });                           // step 14
}

}  // namespace nendo
