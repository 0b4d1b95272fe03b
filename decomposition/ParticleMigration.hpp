#pragma once
// Moves every particle to the rank that owns its block, carrying every registered field, and
// returns the owned particle blocks sorted by (block key, id).
#include <mpi.h>

#include <string>

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

class ParticleMigration {
 public:
  explicit ParticleMigration(MPI_Comm comm) : exchange_(comm) {}

  ParticleBlocks migrate(ParticleSet& particles, const BlockGeometry& geometry, const Partition& partition);

  std::size_t bytes_sent() const { return exchange_.bytes_sent(); }
  std::size_t particles_sent() const { return particles_sent_; }
  void reset_counters() {
    exchange_.reset_counters();
    particles_sent_ = 0;
  }

 private:
  SparseExchange exchange_;
  BlockSort sort_;
  std::vector<bool> keep_;
  std::vector<std::size_t> holes_;
  std::size_t particles_sent_ = 0;

  void require_addressable(const ParticleSet& particles, ParticleId stray) const;
};

}  // namespace nendo
