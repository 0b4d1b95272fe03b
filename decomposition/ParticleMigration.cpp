#include "decomposition/ParticleMigration.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace nendo {
namespace {

constexpr BlockKey kDropped = kBlockKeyEnd;  // no block's key: 21 bits per axis use 63 of 64

// partition.owner(key), looked up once per run of equal keys (a block's particles come together).
class OwnerOf {
 public:
  explicit OwnerOf(const Partition& partition) : partition_(partition) {}
  int operator()(BlockKey key) {
    if (key != key_) key_ = key, owner_ = partition_.owner(key);
    return owner_;
  }

 private:
  const Partition& partition_;
  BlockKey key_ = kBlockKeyEnd;
  int owner_ = -1;
};

// A packed record starts with the two fields every set has: "id", then "position".
ParticleId record_id(const unsigned char* record) {
  ParticleId id;
  std::memcpy(&id, record, sizeof(id));
  return id;
}

BlockKey record_key(const unsigned char* record, const BlockGeometry& geometry) {
  Real x[3];
  std::memcpy(x, record + sizeof(ParticleId), geometry.dimension * sizeof(Real));
  return geometry.key_of(x);
}

// Whether cells (per axis) lie in the block whose first cells are `first`.
bool in_block(const std::int64_t* cells, const std::int64_t* first, int block, int dimension) {
  for (int a = 0; a < dimension; ++a)
    if (cells[a] < first[a] || cells[a] >= first[a] + block) return false;
  return true;
}

}  // namespace

// Collective, before any particle moves: a position that no block holds (this rank's lowest such
// id is `stray`, or the largest id for none) stops every rank alike.
void ParticleMigration::require_addressable(const ParticleSet& particles, ParticleId stray) const {
  const int dim = particles.dimension();
  const Real* x = particles.positions();
  ParticleId first = 0;
  MPI_Allreduce(&stray, &first, 1, MPI_UINT64_T, MPI_MIN, exchange_.comm());
  if (first == std::numeric_limits<ParticleId>::max()) return;
  int finite = 1;  // of the lowest id's position, from its rank
  if (stray == first) {
    std::size_t p = 0;
    while (particles.ids()[p] != first) ++p;
    for (int a = 0; a < dim; ++a) finite = finite && std::isfinite(x[dim * p + a]);
  }
  int all_finite = 1;
  MPI_Allreduce(&finite, &all_finite, 1, MPI_INT, MPI_MIN, exchange_.comm());
  throw StrayParticleError(first, all_finite
                                      ? "position outside the addressable domain (±2^20 blocks per axis)"
                                      : "non-finite position");
}

const ParticleBlocks& ParticleMigration::migrate(ParticleSet& particles, const BlockGeometry& geometry,
                                                 const Partition& partition) {
  const bool by_block = particles.layout() == sorted_layout_ && blocks_.offsets.back() == particles.size();
  removed_.clear();
  leavers_.clear();
  insertions_.clear();
  const ParticleId stray = by_block ? classify_by_block(particles, geometry, partition)
                                    : classify_all(particles, geometry, partition);
  require_addressable(particles, stray);
  const std::vector<Message> arrived = exchange_.discover(pack_leavers(particles));
  std::size_t arrivals = 0;
  for (const Message& m : arrived) arrivals += m.bytes.size() / particles.bytes_per_particle();
  // A bulk redistribution (start, re-balance) is sorted afresh; a step inserts what changed block.
  if (by_block && 8 * (removed_.size() + arrivals) <= particles.size())
    insert(particles, geometry, arrived);
  else
    resort(particles, geometry, arrived, by_block);
  sorted_layout_ = particles.layout();
  return blocks_;
}

// With blocks_ describing the particles: a particle still inside its block on this rank stays where
// it is (comparing cells, no key computed); the others are removed from their place and either
// leave or become insertions. Returns the lowest id with no block (or the largest id).
ParticleId ParticleMigration::classify_by_block(const ParticleSet& particles, const BlockGeometry& geometry,
                                                const Partition& partition) {
  const int me = exchange_.rank();
  const int dim = particles.dimension();
  const Real* x = particles.positions();
  const ParticleId* id = particles.ids();
  OwnerOf owner_of(partition);
  ParticleId stray = std::numeric_limits<ParticleId>::max();
  removed_from_.assign(blocks_.count(), 0);
  for (std::size_t b = 0; b < blocks_.count(); ++b) {
    const BlockCoord coord = decode_block_key(blocks_.keys[b]);
    std::int64_t first[3];  // the block's first cell per axis
    for (int a = 0; a < 3; ++a) first[a] = std::int64_t{coord[a]} * geometry.block;
    const bool mine = partition.owner(blocks_.keys[b]) == me;
    for (std::size_t p = blocks_.begin(b); p < blocks_.end(b); ++p) {
      std::int64_t cells[3];
      if (!geometry.addressable_cells(x + dim * p, cells)) {
        stray = std::min(stray, id[p]);
        continue;
      }
      if (mine && in_block(cells, first, geometry.block, dim)) continue;
      ++removed_from_[b];
      removed_.push_back(p);
      const BlockKey key = geometry.key_of(x + dim * p);
      const int owner = owner_of(key);
      if (owner != me) {
        leavers_.push_back({owner, p});
        continue;
      }
      insertions_.push_back({key, id[p], 0, {0, p, nullptr}});
    }
  }
  return stray;
}

// With no sort to start from: every particle's key into key_ (kDropped for those that leave).
ParticleId ParticleMigration::classify_all(const ParticleSet& particles, const BlockGeometry& geometry,
                                           const Partition& partition) {
  const int me = exchange_.rank();
  const int dim = particles.dimension();
  const Real* x = particles.positions();
  OwnerOf owner_of(partition);
  ParticleId stray = std::numeric_limits<ParticleId>::max();
  key_.resize(particles.size());
  for (std::size_t p = 0; p < particles.size(); ++p) {
    if (!geometry.addressable(x + dim * p)) {
      stray = std::min(stray, particles.ids()[p]);
      continue;
    }
    key_[p] = geometry.key_of(x + dim * p);
    const int owner = owner_of(key_[p]);
    if (owner == me) continue;
    leavers_.push_back({owner, p});
    key_[p] = kDropped;
  }
  return stray;
}

std::map<int, Bytes> ParticleMigration::pack_leavers(const ParticleSet& particles) {
  std::sort(leavers_.begin(), leavers_.end(), [](const Leaver& a, const Leaver& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.index < b.index;
  });
  std::map<int, Bytes> outgoing;
  for (std::size_t i = 0; i < leavers_.size();) {
    const int rank = leavers_[i].rank;
    indices_.clear();
    for (; i < leavers_.size() && leavers_[i].rank == rank; ++i) indices_.push_back(leavers_[i].index);
    particles.pack(indices_.data(), indices_.size(), outgoing[rank]);
    particles_sent_ += indices_.size();
  }
  return outgoing;
}

// Drops the leavers, appends the arrivals and sorts everything by (key, id). The leavers go first,
// so the arrays do not grow past their capacity in a bulk exchange.
void ParticleMigration::resort(ParticleSet& particles, const BlockGeometry& geometry,
                               const std::vector<Message>& arrived, bool by_block) {
  const std::size_t n = particles.size();
  if (by_block) {
    key_.resize(n);
    for (std::size_t b = 0; b < blocks_.count(); ++b)
      std::fill(key_.begin() + blocks_.begin(b), key_.begin() + blocks_.end(b), blocks_.keys[b]);
    for (const Insertion& in : insertions_) key_[in.place.from] = in.key;  // all from this rank
  }
  for (const Leaver& l : leavers_) key_[l.index] = kDropped;
  if (!leavers_.empty()) {
    keep_.resize(n);
    for (std::size_t p = 0; p < n; ++p) keep_[p] = key_[p] != kDropped;
    particles.compact(keep_);
    key_.erase(std::remove(key_.begin(), key_.end(), kDropped), key_.end());
  }
  const std::size_t stride = particles.bytes_per_particle();
  std::size_t arrivals = 0;
  for (const Message& m : arrived) arrivals += m.bytes.size() / stride;
  // Exactly the room needed: appending message by message would grow each field up to twice its
  // size (a vector's growth), for the whole run.
  particles.reserve(particles.size() + arrivals);
  key_.reserve(particles.size() + arrivals);
  for (const Message& m : arrived) {
    const std::size_t count = m.bytes.size() / stride;
    particles.unpack_append(m.bytes.data(), count);
    for (std::size_t k = 0; k < count; ++k) key_.push_back(record_key(m.bytes.data() + k * stride, geometry));
  }
  blocks_ = sort_(particles, key_);
}

// The particles that stayed in their block keep their order; the insertions (sorted by key and
// id) go between them, so only the stretches between two changes move, each by one memmove per
// field, and the insertions are written into the gaps.
void ParticleMigration::insert(ParticleSet& particles, const BlockGeometry& geometry,
                               const std::vector<Message>& arrived) {
  const std::size_t stride = particles.bytes_per_particle();
  for (const Message& m : arrived)
    for (const unsigned char* r = m.bytes.data(); r < m.bytes.data() + m.bytes.size(); r += stride)
      insertions_.push_back({record_key(r, geometry), record_id(r), 0, {0, 0, r}});
  if (removed_.empty() && insertions_.empty()) return;  // no particle changed block

  std::sort(insertions_.begin(), insertions_.end(), [](const Insertion& a, const Insertion& b) {
    return a.key != b.key ? a.key < b.key : a.id < b.id;
  });
  const ParticleId* id = particles.ids();
  for (Insertion& in : insertions_) {
    const auto at = std::lower_bound(blocks_.keys.begin(), blocks_.keys.end(), in.key);
    const std::size_t b = at - blocks_.keys.begin();
    in.before = at != blocks_.keys.end() && *at == in.key
                    ? std::lower_bound(id + blocks_.begin(b), id + blocks_.end(b), in.id) - id
                    : blocks_.offsets[b];
  }
  plan_moves(particles.size());
  placements_.clear();
  for (const Insertion& in : insertions_) placements_.push_back(in.place);
  particles.rearrange(moves_, placements_, particles.size() - removed_.size() + insertions_.size());
  build_blocks();
}

// The stretches of particles between two changes (a removal or an insertion point), each with its
// new place, and each insertion's new index.
void ParticleMigration::plan_moves(std::size_t old_size) {
  moves_.clear();
  std::size_t from = 0, to = 0, r = 0, i = 0;
  for (;;) {
    const std::size_t next_removed = r < removed_.size() ? removed_[r] : old_size;
    const std::size_t next_inserted = i < insertions_.size() ? insertions_[i].before : old_size;
    const std::size_t stop = std::min(next_removed, next_inserted);
    if (stop > from) {
      if (to != from) moves_.push_back({from, to, stop - from});
      to += stop - from;
      from = stop;
    }
    if (i < insertions_.size() && insertions_[i].before == from)
      insertions_[i++].place.to = to++;
    else if (r < removed_.size() && removed_[r] == from)
      ++r, ++from;
    else
      break;
  }
}

// The new blocks: the old ones less their removals, merged with the insertions' keys.
void ParticleMigration::build_blocks() {
  built_.keys.clear();
  built_.offsets.assign(1, 0);
  std::size_t b = 0, i = 0;
  while (b < blocks_.count() || i < insertions_.size()) {
    BlockKey key = b < blocks_.count() ? blocks_.keys[b] : kBlockKeyEnd;
    if (i < insertions_.size()) key = std::min(key, insertions_[i].key);
    std::size_t count = 0;
    if (b < blocks_.count() && blocks_.keys[b] == key) {
      count += blocks_.particles(b) - removed_from_[b];
      ++b;
    }
    for (; i < insertions_.size() && insertions_[i].key == key; ++i) ++count;
    if (count == 0) continue;
    built_.keys.push_back(key);
    built_.offsets.push_back(built_.offsets.back() + count);
  }
  std::swap(blocks_, built_);
}

}  // namespace nendo
