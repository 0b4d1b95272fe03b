#pragma once
// Halo particles for kernel methods: copies of other ranks' particles within one cell (one kernel
// support: particle methods set dx to the support radius) of the blocks this rank owns, i.e. of
// its key range (so a rank that owns only empty blocks there may receive copies it does not use).
// build() discovers who needs what; update() refreshes chosen fields along the same pattern, as
// often as a method needs (PBD: every iteration). Halo copies are sorted by (block key, id).
#include <mpi.h>

#include <map>
#include <string>
#include <vector>

#include "decomposition/ParticleBlocks.hpp"
#include "decomposition/Partition.hpp"
#include "decomposition/SparseExchange.hpp"

namespace nendo {

class ParticleHalo {
 public:
  ParticleHalo(MPI_Comm comm, int dimension) : exchange_(comm), halo_(dimension) {}

  // Collective. `owned` must not be reordered until the next build(). The copies carry "id",
  // "position" and the named fields of `owned`, or all its fields if none are named: a method that
  // reads few fields of its neighbours names them, so that the copies cost only those.
  void build(const ParticleSet& owned, const ParticleBlocks& blocks, const BlockGeometry& geometry,
             const Partition& partition, const std::vector<std::string>& fields = {});
  // Collective: sends the current values of the named fields to the halo copies.
  void update(const ParticleSet& owned, const std::vector<std::string>& fields);
  // Collective: the same for a method's scratch values that are not particle fields (per-step sums,
  // solver vectors): owned[c p + k] for owned particle p goes to halo[c q + k] of its copy q.
  void update_values(const Real* owned, int components, Real* halo);

  const ParticleSet& particles() const { return halo_; }
  const ParticleBlocks& blocks() const { return halo_blocks_; }
  std::size_t bytes_sent() const { return exchange_.bytes_sent(); }

 private:
  struct Peer {
    int rank;
    std::vector<std::size_t> sends;                    // owned particle indices
    std::size_t receive_begin = 0, receive_count = 0;  // in arrival order
  };
  // Sends stride bytes per copy along the pattern: pack(owned index, out), unpack(halo index, in).
  template <class Pack, class Unpack>
  void send_along_pattern(std::size_t stride, Pack pack, Unpack unpack);
  // Which owned particles go to which rank: those within one cell of its blocks.
  std::map<int, std::vector<std::size_t>> find_sends(const ParticleSet& owned, const ParticleBlocks& blocks,
                                                     const BlockGeometry& geometry,
                                                     const Partition& partition) const;
  // The copies' fields: an empty set with id, position and the named fields (all if none).
  static ParticleSet copies_like(const ParticleSet& owned, const std::vector<std::string>& fields);

  SparseExchange exchange_;
  ParticleSet halo_;
  ParticleBlocks halo_blocks_;
  std::vector<Peer> peers_;
  std::vector<std::size_t> slot_of_arrival_;  // halo index of the i-th particle received
};

}  // namespace nendo
