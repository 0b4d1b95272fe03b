#include "decomposition/ParticleHalo.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>

namespace nendo {
namespace {

// Which of the 3^d neighbour blocks the cells around a particle reach, given its cell inside its
// block: along each axis, -1 only from the first cell, +1 only from the last.
template <class Visit>
void for_each_reached_neighbour(int dimension, const std::int64_t* local_cell, int block, Visit visit) {
  int lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  const int z_stride = dimension == 3 ? 9 : 0;  // neighbour_offset() order: k = (x+1) + 3(y+1) [+ 9(z+1)]
  for (int a = 0; a < dimension; ++a) {
    lo[a] = local_cell[a] == 0 ? -1 : 0;
    hi[a] = local_cell[a] == block - 1 ? 1 : 0;
  }
  for (int z = lo[2]; z <= hi[2]; ++z)
    for (int y = lo[1]; y <= hi[1]; ++y)
      for (int x = lo[0]; x <= hi[0]; ++x) visit((x + 1) + 3 * (y + 1) + z_stride * (z + 1));
}

}  // namespace

std::map<int, std::vector<std::size_t>> ParticleHalo::find_sends(const ParticleSet& owned,
                                                                 const ParticleBlocks& blocks,
                                                                 const BlockGeometry& geometry,
                                                                 const Partition& partition) const {
  const int me = exchange_.rank();
  const int dim = owned.dimension();
  const int K = neighbour_count(dim);
  const Real* x = owned.positions();
  std::map<int, std::vector<std::size_t>> sends;
  std::vector<int> owner(K);
  for (std::size_t b = 0; b < blocks.count(); ++b) {
    const BlockCoord cb = decode_block_key(blocks.keys[b]);
    bool all_mine = true;
    for (int k = 0; k < K; ++k) {
      owner[k] = partition.owner(encode_block_key(add(cb, neighbour_offset(dim, k))));
      all_mine = all_mine && owner[k] == me;
    }
    if (all_mine) continue;
    for (std::size_t p = blocks.begin(b); p < blocks.end(b); ++p) {
      std::int64_t local[3] = {0, 0, 0};
      for (int a = 0; a < dim; ++a)
        local[a] = geometry.cell(x + dim * p, a) - std::int64_t(cb[a]) * geometry.block;
      int ranks[27], n = 0;
      for_each_reached_neighbour(dim, local, geometry.block, [&](int k) {
        if (owner[k] != me && std::find(ranks, ranks + n, owner[k]) == ranks + n) ranks[n++] = owner[k];
      });
      for (int i = 0; i < n; ++i) sends[ranks[i]].push_back(p);
    }
  }
  return sends;
}

ParticleSet ParticleHalo::copies_like(const ParticleSet& owned, const std::vector<std::string>& fields) {
  if (fields.empty()) return owned.empty_like();
  ParticleSet copies(owned.dimension());
  for (const std::string& name : fields) {
    const ParticleField& f = owned.field(name);
    copies.add_field(name, f.type(), f.components());
  }
  return copies;
}

void ParticleHalo::build(const ParticleSet& owned, const ParticleBlocks& blocks,
                         const BlockGeometry& geometry, const Partition& partition,
                         const std::vector<std::string>& fields) {
  halo_ = copies_like(owned, fields);  // frees the last build's copies first
  std::vector<const ParticleField*> from;
  std::size_t stride = 0;
  for (const ParticleField& f : halo_.fields()) {
    from.push_back(&owned.field(f.name()));
    stride += f.bytes_per_particle();
  }
  peers_.clear();
  std::map<int, Bytes> outgoing;
  for (auto& [rank, indices] : find_sends(owned, blocks, geometry, partition)) {
    Bytes& out = outgoing[rank];
    out.resize(indices.size() * stride);
    unsigned char* at = out.data();
    for (std::size_t p : indices)
      for (const ParticleField* f : from) f->pack(p, at), at += f->bytes_per_particle();
    peers_.push_back(Peer{rank, std::move(indices), 0, 0});
  }
  std::vector<Message> arrived = exchange_.discover(outgoing);
  outgoing.clear();
  std::size_t copies = 0;
  for (const Message& m : arrived) copies += m.bytes.size() / stride;
  halo_.resize(copies);
  std::size_t slot = 0;
  for (Message& m : arrived) {
    auto it = std::find_if(peers_.begin(), peers_.end(), [&](const Peer& p) { return p.rank == m.rank; });
    if (it == peers_.end()) it = peers_.insert(peers_.end(), Peer{m.rank, {}, 0, 0});
    it->receive_begin = slot;
    it->receive_count = m.bytes.size() / stride;
    const unsigned char* at = m.bytes.data();
    for (std::size_t i = 0; i < it->receive_count; ++i, ++slot)
      for (ParticleField& f : halo_.fields()) f.unpack(slot, at), at += f.bytes_per_particle();
    Bytes().swap(m.bytes);
  }
  std::sort(peers_.begin(), peers_.end(), [](const Peer& a, const Peer& b) { return a.rank < b.rank; });

  // Sort the copies by (block key, id) and remember where each arrival went.
  std::vector<ParticleId> arrival_id(halo_.ids(), halo_.ids() + halo_.size());
  halo_blocks_ = sort_by_block(halo_, geometry);
  std::vector<std::size_t> by_id(halo_.size());
  std::iota(by_id.begin(), by_id.end(), 0);
  const ParticleId* id = halo_.ids();
  std::sort(by_id.begin(), by_id.end(), [&](std::size_t a, std::size_t b) { return id[a] < id[b]; });
  slot_of_arrival_.resize(halo_.size());
  for (std::size_t i = 0; i < arrival_id.size(); ++i) {
    auto it = std::lower_bound(by_id.begin(), by_id.end(), arrival_id[i],
                               [&](std::size_t slot, ParticleId v) { return id[slot] < v; });
    slot_of_arrival_[i] = *it;
  }
}

template <class Pack, class Unpack>
void ParticleHalo::send_along_pattern(std::size_t stride, Pack pack, Unpack unpack) {
  std::map<int, Bytes> outgoing;
  std::vector<int> sources;
  for (const Peer& peer : peers_) {
    if (peer.receive_count > 0) sources.push_back(peer.rank);
    if (peer.sends.empty()) continue;
    Bytes& out = outgoing[peer.rank];
    out.resize(peer.sends.size() * stride);
    unsigned char* at = out.data();
    for (std::size_t p : peer.sends) pack(p, at), at += stride;
  }
  for (const Message& m : exchange_.exchange(outgoing, sources)) {
    auto peer = std::find_if(peers_.begin(), peers_.end(), [&](const Peer& p) { return p.rank == m.rank; });
    const unsigned char* at = m.bytes.data();
    for (std::size_t i = 0; i < peer->receive_count; ++i, at += stride)
      unpack(slot_of_arrival_[peer->receive_begin + i], at);
  }
}

void ParticleHalo::update(const ParticleSet& owned, const std::vector<std::string>& fields) {
  std::vector<const ParticleField*> from;
  std::vector<ParticleField*> to;
  std::size_t stride = 0;
  for (const auto& name : fields) {
    from.push_back(&owned.field(name));
    to.push_back(&halo_.field(name));
    stride += from.back()->bytes_per_particle();
  }
  send_along_pattern(
      stride,
      [&](std::size_t p, unsigned char* at) {
        for (const ParticleField* f : from) f->pack(p, at), at += f->bytes_per_particle();
      },
      [&](std::size_t q, const unsigned char* at) {
        for (ParticleField* f : to) f->unpack(q, at), at += f->bytes_per_particle();
      });
}

void ParticleHalo::update_values(const Real* owned, int components, Real* halo) {
  const std::size_t stride = sizeof(Real) * components;
  send_along_pattern(
      stride, [&](std::size_t p, unsigned char* at) { std::memcpy(at, owned + components * p, stride); },
      [&](std::size_t q, const unsigned char* at) { std::memcpy(halo + components * q, at, stride); });
}

}  // namespace nendo
