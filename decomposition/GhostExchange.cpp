#include "decomposition/GhostExchange.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "core/Error.hpp"

namespace nendo {
namespace {

// dst[box] (+)= src[box] for a box of nodes, `c` components per node.
template <bool Add>
void copy_box(const Real* src, Strides s, const int* src_begin, Real* dst, Strides d, const int* dst_begin,
              const int* count, int c) {
  for (int z = 0; z < count[2]; ++z)
    for (int y = 0; y < count[1]; ++y) {
      const Real* from = src + c * (src_begin[0] + (src_begin[1] + y) * s.y + (src_begin[2] + z) * s.z);
      Real* to = dst + c * (dst_begin[0] + (dst_begin[1] + y) * d.y + (dst_begin[2] + z) * d.z);
      const int n = count[0] * c;
      if constexpr (Add) {
        for (int i = 0; i < n; ++i) to[i] += from[i];
      } else {
        std::memcpy(to, from, sizeof(Real) * n);
      }
    }
}

constexpr int kZero[3] = {0, 0, 0};

}  // namespace

GhostExchange::GhostExchange(MPI_Comm comm, const BlockGeometry& geometry)
    : geometry_(geometry), exchange_(comm), neighbours_(neighbour_count(geometry.dimension)) {
  if (geometry.block < 3)
    throw Error("grid.block must be at least 3 so that a window reaches only neighbouring blocks");
  for (int o = 0; o < neighbours_; ++o)
    slices_.push_back(slice_for_offset(neighbour_offset(geometry.dimension, o)));
}

GhostExchange::Slice GhostExchange::slice_for_offset(const BlockCoord& offset) const {
  Slice s{};
  for (int a = 0; a < 3; ++a) {
    const int b = geometry_.block_extent(a);
    if (a >= geometry_.dimension) {
      s.window_begin[a] = 0, s.block_begin[a] = 0, s.count[a] = 1;
    } else if (offset[a] < 0) {
      s.window_begin[a] = 0, s.block_begin[a] = b - kWindowLower, s.count[a] = kWindowLower;
    } else if (offset[a] == 0) {
      s.window_begin[a] = kWindowLower, s.block_begin[a] = 0, s.count[a] = b;
    } else {
      s.window_begin[a] = kWindowLower + b, s.block_begin[a] = 0, s.count[a] = kWindowUpper;
    }
  }
  return s;
}

long GhostExchange::grid_slot(BlockKey key) const {
  auto it = grid_slots_.find(key);
  return it == grid_slots_.end() ? -1 : it->second;
}

int GhostExchange::peer_index(int rank) {
  for (std::size_t p = 0; p < peers_.size(); ++p)
    if (peers_[p].rank == rank) return static_cast<int>(p);
  peers_.push_back(Peer{rank, {}, {}, 0, 0});
  return static_cast<int>(peers_.size()) - 1;
}

void GhostExchange::build(const ParticleBlocks& sources, const Partition& partition) {
  const int dim = geometry_.dimension;
  const int me = exchange_.rank();
  const std::size_t S = sources.count();
  const int K = neighbours_;
  source_keys_ = sources.keys;
  peers_.clear();
  window_targets_.assign(S * K, -1);
  window_remote_.assign(S * K, {-1, 0});

  struct PendingLink {
    BlockKey target;
    int k;  // source = target + neighbour_offset(k)
    Link link;
  };
  std::vector<PendingLink> pending;
  std::map<int, Bytes> headers;
  for (std::size_t s = 0; s < S; ++s) {
    const BlockCoord cs = decode_block_key(source_keys_[s]);
    for (int o = 0; o < K; ++o) {
      const BlockKey t = encode_block_key(add(cs, neighbour_offset(dim, o)));
      const int r = partition.owner(t);
      if (r == me) {
        pending.push_back({t, K - 1 - o, Link{o, static_cast<long>(s), -1, 0}});
        continue;
      }
      Peer& peer = peers_[peer_index(r)];
      window_remote_[s * K + o] = {peer_index(r), peer.send_nodes};
      peer.sends.push_back({static_cast<long>(s), o});
      peer.send_nodes += slices_[o].nodes();
      put(headers[r], source_keys_[s]);
      put(headers[r], static_cast<std::int32_t>(o));
    }
  }
  for (const Message& m : exchange_.discover(headers)) {
    const int p = peer_index(m.rank);
    ByteReader in(m.bytes);
    while (!in.done()) {
      const BlockKey s = in.get<BlockKey>();
      const int o = in.get<std::int32_t>();
      const BlockKey t = encode_block_key(add(decode_block_key(s), neighbour_offset(dim, o)));
      if (partition.owner(t) != me)
        throw Error("ghost exchange: received a contribution to a block not owned here");
      pending.push_back({t, K - 1 - o, Link{o, -1, p, peers_[p].receive_nodes}});
      peers_[p].receive_nodes += slices_[o].nodes();
    }
  }

  grid_keys_.clear();
  for (const auto& l : pending) grid_keys_.push_back(l.target);
  std::sort(grid_keys_.begin(), grid_keys_.end());
  grid_keys_.erase(std::unique(grid_keys_.begin(), grid_keys_.end()), grid_keys_.end());
  grid_slots_.clear();
  for (std::size_t g = 0; g < grid_keys_.size(); ++g) grid_slots_[grid_keys_[g]] = static_cast<long>(g);

  links_.assign(grid_keys_.size() * K, Link{});
  for (const auto& l : pending) {
    const long g = grid_slots_[l.target];
    links_[g * K + l.k] = l.link;
    if (l.link.source >= 0)
      window_targets_[l.link.source * K + l.link.slice] = g;
    else
      peers_[l.link.peer].receives.push_back({g, l.link.slice});
  }
  // Receives were appended in message order, which is the order of their node offsets.
  order_blocks();
}

void GhostExchange::order_blocks() {
  const std::size_t S = source_keys_.size(), G = grid_keys_.size();
  const int K = neighbours_;
  std::vector<char> boundary(S, 0);
  for (std::size_t s = 0; s < S * K; ++s)
    if (window_remote_[s].first >= 0) boundary[s / K] = 1;
  source_order_.clear();
  for (char want : {1, 0})
    for (std::size_t s = 0; s < S; ++s)
      if (boundary[s] == want) source_order_.push_back(s);
  boundary_sources_ = static_cast<std::size_t>(std::count(boundary.begin(), boundary.end(), 1));

  boundary.assign(G, 0);
  for (const Peer& peer : peers_)
    for (auto [g, o] : peer.receives) boundary[g] = 1;
  grid_order_.clear();
  for (char want : {1, 0})
    for (std::size_t g = 0; g < G; ++g)
      if (boundary[g] == want) grid_order_.push_back(g);
  boundary_grid_blocks_ = static_cast<std::size_t>(std::count(boundary.begin(), boundary.end(), 1));
}

GhostExchange::Layout GhostExchange::window_layout(int c) const {
  return {window_nodes() * static_cast<std::size_t>(c),
          {static_cast<std::size_t>(window_extent(0)),
           static_cast<std::size_t>(window_extent(0) * window_extent(1))}};
}

GhostExchange::Layout GhostExchange::block_layout(int c) const {
  const std::size_t bx = geometry_.block_extent(0), by = geometry_.block_extent(1);
  return {nodes_per_block() * static_cast<std::size_t>(c), {bx, bx * by}};
}

void GhostExchange::start(bool to_owners, const std::vector<Real>& data, int c) const {
  if (!in_flight_.requests.empty()) throw Error("ghost exchange: an exchange is already in flight");
  const Layout layout = to_owners ? window_layout(c) : block_layout(c);
  const std::size_t P = peers_.size();
  in_flight_.outgoing.resize(P), in_flight_.incoming.resize(P);
  in_flight_.to_owners = to_owners, in_flight_.components = c;
  std::vector<SparseExchange::Buffer> sends, receives;
  for (std::size_t p = 0; p < P; ++p) {
    const Peer& peer = peers_[p];
    const auto& items = to_owners ? peer.sends : peer.receives;
    std::vector<Real>& out = in_flight_.outgoing[p];
    std::vector<Real>& in = in_flight_.incoming[p];
    out.resize((to_owners ? peer.send_nodes : peer.receive_nodes) * c);
    in.resize((to_owners ? peer.receive_nodes : peer.send_nodes) * c);
    std::size_t at = 0;
    for (auto [slot, o] : items) {
      const Slice& sl = slices_[o];
      copy_box<false>(data.data() + slot * layout.slot, layout.strides,
                      to_owners ? sl.window_begin : sl.block_begin, out.data() + at * c, packed_strides(sl),
                      kZero, sl.count, c);
      at += sl.nodes();
    }
    if (!out.empty()) sends.push_back({peer.rank, out.data(), out.size() * sizeof(Real)});
    if (!in.empty()) receives.push_back({peer.rank, in.data(), in.size() * sizeof(Real)});
  }
  in_flight_.requests = exchange_.start(sends, receives);
}

void GhostExchange::wait() const {
  MPI_Waitall(static_cast<int>(in_flight_.requests.size()), in_flight_.requests.data(), MPI_STATUSES_IGNORE);
  in_flight_.requests.clear();
}

void GhostExchange::start_scatter(const std::vector<Real>& windows, int c) const { start(true, windows, c); }

void GhostExchange::start_gather(const std::vector<Real>& grid, int c) const { start(false, grid, c); }

void GhostExchange::scatter_add(const std::vector<Real>& windows, int c, std::vector<Real>& grid) const {
  start_scatter(windows, c);
  finish_scatter(windows, c, grid);
}

void GhostExchange::gather(const std::vector<Real>& grid, int c, std::vector<Real>& windows) const {
  start_gather(grid, c);
  finish_gather(grid, c, windows);
}

void GhostExchange::finish_scatter(const std::vector<Real>& windows, int c, std::vector<Real>& grid) const {
  if (!in_flight_.to_owners || in_flight_.components != c)
    throw Error("ghost exchange: finish_scatter without a matching start_scatter");
  const int K = neighbours_;
  const Layout window = window_layout(c), block = block_layout(c);
  wait();
  const std::vector<std::vector<Real>>& incoming = in_flight_.incoming;
  grid.assign(grid_keys_.size() * block.slot, 0.0);
  for (std::size_t g = 0; g < grid_keys_.size(); ++g)
    for (int k = 0; k < K; ++k) {
      const Link& l = links_[g * K + k];
      if (l.slice < 0) continue;
      const Slice& sl = slices_[l.slice];
      Real* target = grid.data() + g * block.slot;
      if (l.source >= 0)
        copy_box<true>(windows.data() + l.source * window.slot, window.strides, sl.window_begin, target,
                       block.strides, sl.block_begin, sl.count, c);
      else
        copy_box<true>(incoming[l.peer].data() + l.at * c, packed_strides(sl), kZero, target, block.strides,
                       sl.block_begin, sl.count, c);
    }
}

void GhostExchange::finish_gather(const std::vector<Real>& grid, int c, std::vector<Real>& windows) const {
  if (in_flight_.to_owners || in_flight_.components != c)
    throw Error("ghost exchange: finish_gather without a matching start_gather");
  const int K = neighbours_;
  const Layout window = window_layout(c), block = block_layout(c);
  wait();
  const std::vector<std::vector<Real>>& incoming = in_flight_.incoming;
  windows.assign(source_keys_.size() * window.slot, 0.0);
  for (std::size_t s = 0; s < source_keys_.size(); ++s)
    for (int o = 0; o < K; ++o) {
      const Slice& sl = slices_[o];
      const long g = window_targets_[s * K + o];
      Real* target = windows.data() + s * window.slot;
      if (g >= 0) {
        copy_box<false>(grid.data() + g * block.slot, block.strides, sl.block_begin, target, window.strides,
                        sl.window_begin, sl.count, c);
      } else {
        const auto [p, at] = window_remote_[s * K + o];
        copy_box<false>(incoming[p].data() + at * c, packed_strides(sl), kZero, target, window.strides,
                        sl.window_begin, sl.count, c);
      }
    }
}

}  // namespace nendo
