#pragma once
// Grid ghost exchange between particle blocks and the grid blocks they touch.
//
// Each owned particle block s has a *window*: the (B+3)^d grid nodes its particles can reach
// (spec 002 §5.2: a particle in cell c touches nodes [c-1, c+2] for both B-spline kernels). P2G
// writes into windows; scatter_add() sums them into the owned grid blocks; gather() copies grid
// values back into windows for G2P. Windows keep hot loops free of hash look-ups and atomics.
//
// Determinism: a grid node's value is the sum, in the fixed neighbour order of BlockKey.hpp, of
// the windows of the source blocks around it; a window depends only on its own block's particles.
// So grid values are bitwise identical for any partition.
//
// The set of grid blocks a rank owns (all blocks within one block of a particle block, inside its
// key range) and the message plan are built once per particle-block layout and reused for every
// scatter/gather until the particles move between blocks.
#include <mpi.h>

#include <memory>
#include <unordered_map>
#include <vector>

#include "decomposition/BlockGeometry.hpp"
#include "decomposition/ParticleBlocks.hpp"
#include "decomposition/Partition.hpp"
#include "decomposition/SparseExchange.hpp"

namespace nendo {

// Strides of a box of nodes in a dense array, in nodes (the x stride is one node).
struct Strides {
  std::size_t y, z;
};

class GhostExchange {
 public:
  static constexpr int kWindowLower = 1;  // nodes a window reaches below its block
  static constexpr int kWindowUpper = 2;  // ... and above

  GhostExchange(MPI_Comm comm, const BlockGeometry& geometry);

  // Builds the grid blocks and the plan for these particle blocks (collective).
  void build(const ParticleBlocks& sources, const Partition& partition);

  const BlockGeometry& geometry() const { return geometry_; }
  int window_extent(int axis) const { return axis < geometry_.dimension ? geometry_.block + 3 : 1; }
  int window_nodes() const { return window_extent(0) * window_extent(1) * window_extent(2); }
  int nodes_per_block() const { return geometry_.nodes_per_block(); }
  std::size_t source_blocks() const { return source_keys_.size(); }
  const std::vector<BlockKey>& source_keys() const { return source_keys_; }
  // Owned grid blocks, sorted by key; grid arrays are [block][node][component].
  const std::vector<BlockKey>& grid_keys() const { return grid_keys_; }
  std::size_t grid_blocks() const { return grid_keys_.size(); }
  // Slot of an owned grid block, or -1.
  long grid_slot(BlockKey key) const;

  // windows: [source block][window node][component]; grid: [grid block][node][component].
  void scatter_add(const std::vector<Real>& windows, int components, std::vector<Real>& grid) const;
  void gather(const std::vector<Real>& grid, int components, std::vector<Real>& windows) const;

  // The same in two halves, so that work on interior blocks runs while the messages travel:
  // start_*() packs the slices other ranks need and posts the sends and receives; finish_*() waits
  // and sums (copies) in the same fixed order as above, so the result is bitwise the same. Between
  // the halves the caller may change only interior data: the windows of source_order() after its
  // first boundary_sources(), the grid blocks of grid_order() after its first
  // boundary_grid_blocks(). One exchange at a time.
  void start_scatter(const std::vector<Real>& windows, int components) const;
  void finish_scatter(const std::vector<Real>& windows, int components, std::vector<Real>& grid) const;
  void start_gather(const std::vector<Real>& grid, int components) const;
  void finish_gather(const std::vector<Real>& grid, int components, std::vector<Real>& windows) const;
  // Source slots whose windows reach a block owned elsewhere, then the rest (each list ascending).
  const std::vector<std::size_t>& source_order() const { return source_order_; }
  std::size_t boundary_sources() const { return boundary_sources_; }
  // Grid slots that another rank's windows read, then the rest.
  const std::vector<std::size_t>& grid_order() const { return grid_order_; }
  std::size_t boundary_grid_blocks() const { return boundary_grid_blocks_; }

  std::size_t bytes_sent() const { return exchange_.bytes_sent(); }
  std::size_t peers() const { return peers_.size(); }  // ranks this one exchanges slices with
  void reset_counters() { exchange_.reset_counters(); }

 private:
  // One axis-aligned box of nodes shared by a window and a grid block.
  struct Slice {
    int window_begin[3];
    int block_begin[3];
    int count[3];
    int nodes() const { return count[0] * count[1] * count[2]; }
  };
  // A contribution of source window to grid block: where its slice is found.
  struct Link {
    int slice = -1;      // index into slices_ (by offset), -1: none
    long source = -1;    // local source slot, or -1 for a remote one
    int peer = -1;       // remote: index into peers_
    std::size_t at = 0;  // remote: node offset of the slice in that peer's message
  };
  struct Peer {
    int rank;
    std::vector<std::pair<long, int>> sends;     // (source slot, offset index) we send, in order
    std::vector<std::pair<long, int>> receives;  // (grid slot, offset index) we receive, in order
    std::size_t send_nodes = 0, receive_nodes = 0;
  };

  struct Layout {
    std::size_t slot;  // reals per window or per block
    Strides strides;
  };
  static Strides packed_strides(const Slice& s) {
    return {static_cast<std::size_t>(s.count[0]), static_cast<std::size_t>(s.count[0] * s.count[1])};
  }
  Layout window_layout(int components) const;
  Layout block_layout(int components) const;
  // Packs the slices this rank sends (to_owners: window slices to grid owners; else grid slices
  // back to the windows' ranks) and posts the messages into in_flight_.
  void start(bool to_owners, const std::vector<Real>& data, int components) const;
  void wait() const;
  void order_blocks();
  Slice slice_for_offset(const BlockCoord& target_minus_source) const;
  int peer_index(int rank);

  BlockGeometry geometry_;
  SparseExchange exchange_;
  int neighbours_;
  std::vector<Slice> slices_;  // by offset index of target relative to source
  std::vector<BlockKey> source_keys_;
  std::vector<BlockKey> grid_keys_;
  std::unordered_map<BlockKey, long> grid_slots_;
  std::vector<Link> links_;           // [grid slot][neighbour k]: source = grid block + offset k
  std::vector<long> window_targets_;  // [source slot][offset]: local grid slot or -1 (remote)
  std::vector<Peer> peers_;
  std::vector<std::pair<int, std::size_t>> window_remote_;  // [source slot][offset]: (peer, node offset)
  std::vector<std::size_t> source_order_, grid_order_;
  std::size_t boundary_sources_ = 0, boundary_grid_blocks_ = 0;
  // The exchange in flight: packed sends and arrived slices by peer, and their requests.
  struct InFlight {
    std::vector<std::vector<Real>> outgoing, incoming;
    std::vector<MPI_Request> requests;
    bool to_owners = false;
    int components = 0;
  };
  mutable InFlight in_flight_;
};

}  // namespace nendo
