#pragma once
// Moves every particle to the rank that owns its block, carrying every registered field, and
// returns the owned particle blocks sorted by (block key, id).
#include <mpi.h>

#include <map>
#include <string>
#include <vector>

#include "core/Error.hpp"
#include "decomposition/ParticleBlocks.hpp"
#include "decomposition/Partition.hpp"
#include "decomposition/SparseExchange.hpp"

namespace nendo {

// A particle that no block can hold: its position is NaN or infinite, or beyond the addressable
// domain. migrate() throws it on every rank alike, naming the lowest such id.
class StrayParticleError : public CollectiveError {
 public:
  StrayParticleError(ParticleId id, const std::string& problem)
      : CollectiveError("particle " + std::to_string(id) + " has a " + problem), id_(id), problem_(problem) {}
  ParticleId id() const { return id_; }
  const std::string& problem() const { return problem_; }

 private:
  ParticleId id_;
  std::string problem_;
};

// Keeps the blocks of its last result: while the particle set's layout is the one it left (see
// ParticleSet::layout), the next call checks each particle against the block it sat in and moves
// only what changed block or rank, so a step where few particles cross a block edge costs a pass
// over the positions and a memmove of the stretches between the changes.
class ParticleMigration {
 public:
  explicit ParticleMigration(MPI_Comm comm) : exchange_(comm) {}

  const ParticleBlocks& migrate(ParticleSet& particles, const BlockGeometry& geometry,
                                const Partition& partition);

  std::size_t bytes_sent() const { return exchange_.bytes_sent(); }
  std::size_t particles_sent() const { return particles_sent_; }
  void reset_counters() {
    exchange_.reset_counters();
    particles_sent_ = 0;
  }

 private:
  struct Leaver {
    int rank;
    std::size_t index;
  };
  // A particle that goes into a block of this rank it was not in: one from another block here,
  // or one that arrived.
  struct Insertion {
    BlockKey key;
    ParticleId id;
    std::size_t before;  // the old particle index it goes in front of
    ParticleSet::Placement place;
  };

  SparseExchange exchange_;
  BlockSort sort_;
  ParticleBlocks blocks_, built_;          // the last result; the next one while it is being built
  std::uint64_t sorted_layout_ = 0;        // particles.layout() when blocks_ was made (0: never)
  std::vector<std::size_t> removed_;       // old indices of the particles that leave their block, ascending
  std::vector<std::size_t> removed_from_;  // per old block, how many of them
  std::vector<Leaver> leavers_;
  std::vector<Insertion> insertions_;
  std::vector<ParticleSet::Placement> placements_;
  std::vector<ParticleSet::Move> moves_;
  std::vector<std::size_t> indices_;
  std::vector<BlockKey> key_;  // per particle, for a full sort
  std::vector<bool> keep_;
  std::size_t particles_sent_ = 0;

  ParticleId classify_by_block(const ParticleSet& particles, const BlockGeometry& geometry,
                               const Partition& partition);
  ParticleId classify_all(const ParticleSet& particles, const BlockGeometry& geometry,
                          const Partition& partition);
  void require_addressable(const ParticleSet& particles, ParticleId stray) const;
  std::map<int, Bytes> pack_leavers(const ParticleSet& particles);
  void resort(ParticleSet& particles, const BlockGeometry& geometry, const std::vector<Message>& arrived,
              bool by_block);
  void insert(ParticleSet& particles, const BlockGeometry& geometry, const std::vector<Message>& arrived);
  void plan_moves(std::size_t old_size);
  void build_blocks();
};

}  // namespace nendo
