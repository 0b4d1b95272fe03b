#pragma once
// The distributed space every method stands on: the block geometry, the partition, this rank's
// particles sorted into blocks, and the exchanges that keep them consistent across ranks.
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "decomposition/GhostExchange.hpp"
#include "decomposition/LoadBalance.hpp"
#include "decomposition/ParticleHalo.hpp"
#include "decomposition/ParticleMigration.hpp"

namespace nendo {

class Space {
 public:
  Space(MPI_Comm comm, const BlockGeometry& geometry, ParticleSet particles);

  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int ranks() const { return partition_.ranks(); }
  const BlockGeometry& geometry() const { return geometry_; }
  const Partition& partition() const { return partition_; }
  ParticleSet& particles() { return particles_; }
  const ParticleSet& particles() const { return particles_; }
  const ParticleBlocks& blocks() const { return blocks_; }
  std::uint64_t global_particles() const;

  // Particles may start on any rank (seeding splits work by lattice index, not by space): balance
  // their blocks' counts on a provisional key-range partition, then move them once. Collective.
  void distribute();
  // The same onto a known partition of the same rank count (a checkpoint's), without balancing.
  void distribute(const Partition& partition);
  // After particles moved: send each to its block's owner and re-sort. Collective.
  void migrate();
  // Migrates (returns true) only if some particle anywhere moved more than `slack` since the last
  // migration, or the particle count changed; otherwise keeps the layout — owners, order and halo
  // pattern — so that a method refreshes just the halo fields it needs (halo().update). A kept
  // halo holds every copy within one block cell − 2 slack of each owned particle. An infinite
  // slack (a mesh method, whose stencil is fixed) migrates only for a changed count, keeps no
  // positions, and keeps the layout of the last migration even on the first call. Collective.
  bool migrate_if_moved(Real slack);
  // Increases at every migration (load balance, emission and restart migrate too): a method whose
  // lists index particles rebuilds them when it changed.
  std::uint64_t layout_version() const { return layout_version_; }
  // New partition from the counted block weights, then migrate. Collective.
  void rebalance();
  // Rebalances if the policy says so at this step; returns whether it did. work_seconds: this
  // rank's work since the last check (the step time outside MPI calls), for policy.by_time.
  // Collective.
  bool maybe_rebalance(long step, const LoadBalancePolicy& policy, double work_seconds = 0);

  // The grid ghost exchange for the current particle blocks, rebuilt only after they changed.
  GhostExchange& ghost();
  ParticleHalo& halo();  // built for the current particles
  // The particle fields the halo copies carry besides "id" and "position" (ParticleHalo::build);
  // none named, the default: every field. A method that reads few of its neighbours' fields names
  // them once (initialize, restore).
  void set_halo_fields(std::vector<std::string> fields);
  // Copies the halo held at its last build (0 if never built), without building it.
  std::size_t halo_copies() const { return halo_.particles().size(); }
  ParticleMigration& migration() { return migration_; }

 private:
  MPI_Comm comm_;
  int rank_;
  BlockGeometry geometry_;
  Partition partition_;
  ParticleSet particles_;
  ParticleBlocks blocks_;
  ParticleMigration migration_;
  GhostExchange ghost_;
  ParticleHalo halo_;
  std::vector<std::string> halo_fields_;
  bool ghost_current_ = false;
  bool halo_current_ = false;
  std::uint64_t layout_version_ = 0;
  // Since migrate_if_moved was first called: the count and (finite slacks) the positions at the
  // last migration.
  bool laid_out_ = false, tracks_motion_ = false;
  std::size_t laid_out_count_ = 0;
  std::vector<Real> laid_out_at_;
};

}  // namespace nendo
