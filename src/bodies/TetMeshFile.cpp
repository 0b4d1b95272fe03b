#include "bodies/TetMeshFile.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <utility>

#include "core/CollectiveError.hpp"
#include "core/Mpi.hpp"
#include "io/MshReader.hpp"

namespace nendo {
namespace {

constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();

bool contains(const std::vector<std::int64_t>& sorted, std::int64_t value) {
  return std::binary_search(sorted.begin(), sorted.end(), value);
}

void sort_unique(std::vector<std::int64_t>& values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
}

// Rank 0 runs `read` (which fills `chunk` and says whether it did) until it is done, broadcasting
// each chunk to `use` on every rank. An Error in `read` stops every rank with its message.
template <class T, class Read, class Use>
void broadcast_chunks(MPI_Comm comm, std::vector<T>& chunk, Read read, Use use) {
  const bool root = mpi::rank(comm) == 0;
  for (;;) {
    int more = 0;
    std::string error;
    if (root) try {
        more = read() ? 1 : 0;
      } catch (const Error& e) {
        error = e.what();
        more = -1;
      }
    MPI_Bcast(&more, 1, MPI_INT, 0, comm);
    if (more < 0) {
      mpi::broadcast(error, 0, comm);
      throw CollectiveError(error);
    }
    if (more == 0) return;
    mpi::broadcast(chunk, 0, comm);
    use(chunk);
  }
}

// The rank of `starts` (rank r: [starts[r], starts[r + 1])) that `value` falls in.
int owner_in(const std::vector<std::int64_t>& starts, std::int64_t value) {
  return static_cast<int>(std::upper_bound(starts.begin(), starts.end(), value) - starts.begin()) - 1;
}

// Each value to the rank of `starts` it falls in, which turns it into answer(value); the answers,
// in the order of `values`. Only the ranks asked hear from a rank (SparseExchange's NBX).
template <class Answer>
std::vector<std::int64_t> ask_owners(const SparseExchange& exchange, const std::vector<std::int64_t>& starts,
                                     const std::vector<std::int64_t>& values, Answer answer) {
  std::map<int, Bytes> asked;
  for (std::int64_t value : values) put(asked[owner_in(starts, value)], value);
  std::map<int, Bytes> replies;
  for (const Message& question : exchange.discover(asked)) {
    ByteReader in(question.bytes);
    Bytes& reply = replies[question.rank];
    while (!in.done()) put(reply, answer(in.get<std::int64_t>()));
  }
  std::vector<int> owners;
  for (const auto& [owner, bytes] : asked) owners.push_back(owner);
  const std::vector<Message> answers = exchange.exchange(replies, owners);
  std::map<int, ByteReader> from;
  for (const Message& m : answers) from.emplace(m.rank, ByteReader(m.bytes));
  std::vector<std::int64_t> answered;
  answered.reserve(values.size());
  for (std::int64_t value : values) answered.push_back(from.at(owner_in(starts, value)).get<std::int64_t>());
  return answered;
}

}  // namespace

bool TetMeshFile::streams(MPI_Comm comm, const std::string& path) {
  int yes = mpi::rank(comm) == 0 && MshReader::streams(path);
  MPI_Bcast(&yes, 1, MPI_INT, 0, comm);
  return yes != 0;
}

TetMeshFile::TetMeshFile(MPI_Comm comm, const std::string& path, std::size_t chunk)
    : comm_(comm), exchange_(comm), path_(path), chunk_(chunk) {
  const int rank = mpi::rank(comm), ranks = mpi::size(comm);
  std::string error;
  std::int64_t max_tag = 0;
  if (rank == 0) try {
      reader_ = std::make_unique<MshReader>(path);
      max_tag = reader_->max_node_tag();
    } catch (const Error& e) {
      error = e.what();
    }
  raise_collectively(comm, error);
  MPI_Bcast(&max_tag, 1, MPI_INT64_T, 0, comm);
  tag_start_.resize(ranks + 1);
  for (int r = 0; r <= ranks; ++r) tag_start_[r] = 1 + max_tag * r / ranks;
  const std::int64_t first_tag = tag_start_[rank], tags = tag_start_[rank + 1] - first_tag;
  used_.assign(static_cast<std::size_t>((tags + 63) / 64), 0);
  for_each_tet_chunk([&](std::int64_t, const std::vector<std::int64_t>& corners) {
    for (std::int64_t tag : corners) {
      if (tag < 1 || tag > max_tag) {
        if (error.empty()) error = path + ": a tet's corner " + std::to_string(tag) + " is not a node";
        continue;
      }
      const std::int64_t bit = tag - first_tag;
      if (bit >= 0 && bit < tags) used_[bit / 64] |= std::uint64_t{1} << (bit % 64);
    }
    tet_count_ += static_cast<std::int64_t>(corners.size() / 4);
  });
  raise_collectively(comm, error);
  used_before_.resize(used_.size() + 1, 0);
  for (std::size_t w = 0; w < used_.size(); ++w)
    used_before_[w + 1] = used_before_[w] + __builtin_popcountll(used_[w]);
  const std::vector<std::int64_t> counts =
      mpi::all_gather(std::vector<std::int64_t>{used_before_.back()}, comm);
  id_start_.assign(ranks + 1, 0);
  for (int r = 0; r < ranks; ++r) id_start_[r + 1] = id_start_[r] + counts[r];
  vertex_count_ = id_start_[ranks];
  if (tet_count_ == 0)
    throw CollectiveError("cannot read the mesh file " + path + ": the mesh has no tetrahedra");
}

TetMeshFile::~TetMeshFile() = default;

template <class Use>
void TetMeshFile::for_each_tet_chunk(Use use) {
  std::vector<std::int64_t> corners;
  std::int64_t first = 0;
  bool started = false;
  broadcast_chunks(
      comm_, corners,
      [&] {
        if (!std::exchange(started, true)) reader_->rewind_tets();
        return reader_->next_tets(chunk_, corners);
      },
      [&](const std::vector<std::int64_t>& chunk) {
        use(first, chunk);
        first += static_cast<std::int64_t>(chunk.size() / 4);
      });
}

// A tag's id: the used tags before it.
std::vector<std::int64_t> TetMeshFile::ids_of(const std::vector<std::int64_t>& tags) {
  const int rank = mpi::rank(comm_);
  return ask_owners(exchange_, tag_start_, tags, [&](std::int64_t tag) {
    const std::int64_t bit = tag - tag_start_[rank];
    const std::uint64_t below = (std::uint64_t{1} << (bit % 64)) - 1;
    return id_start_[rank] + used_before_[bit / 64] + __builtin_popcountll(used_[bit / 64] & below);
  });
}

// An id's tag: the k-th used tag of the rank whose ids it is in.
std::vector<std::int64_t> TetMeshFile::tags_of(const std::vector<std::int64_t>& ids) {
  const int rank = mpi::rank(comm_);
  return ask_owners(exchange_, id_start_, ids, [&](std::int64_t id) {
    const std::int64_t k = id - id_start_[rank];
    const std::size_t w =
        std::upper_bound(used_before_.begin(), used_before_.end(), k) - used_before_.begin() - 1;
    std::uint64_t word = used_[w];
    for (std::int64_t skip = k - used_before_[w]; skip > 0; --skip) word &= word - 1;
    return tag_start_[rank] + 64 * static_cast<std::int64_t>(w) + __builtin_ctzll(word);
  });
}

// The coordinates of the nodes `tags` (ascending), from one pass over the nodes.
std::vector<Real> TetMeshFile::coordinates(const std::vector<std::int64_t>& tags) {
  std::vector<Real> xyz(3 * tags.size());
  std::vector<bool> found(tags.size(), false);
  std::vector<std::int64_t> chunk_tags;
  std::vector<Real> chunk_xyz;
  // Rank 0 sends tags and coordinates as one array: n tags, then 3n coordinates' bits.
  std::vector<std::int64_t> chunk;
  bool started = false;
  broadcast_chunks(
      comm_, chunk,
      [&] {
        if (!std::exchange(started, true)) reader_->rewind_nodes();
        if (!reader_->next_nodes(chunk_, chunk_tags, chunk_xyz)) return false;
        chunk = chunk_tags;
        chunk.resize(4 * chunk_tags.size());
        std::memcpy(&chunk[chunk_tags.size()], chunk_xyz.data(), chunk_xyz.size() * sizeof(Real));
        return true;
      },
      [&](const std::vector<std::int64_t>& nodes) {
        const std::size_t n = nodes.size() / 4;
        for (std::size_t k = 0; k < n; ++k) {
          const auto it = std::lower_bound(tags.begin(), tags.end(), nodes[k]);
          if (it == tags.end() || *it != nodes[k]) continue;
          const std::size_t at = it - tags.begin();
          std::memcpy(&xyz[3 * at], &nodes[n + 3 * k], 3 * sizeof(Real));
          found[at] = true;
        }
      });
  std::string error;
  for (std::size_t k = 0; k < tags.size() && error.empty(); ++k)
    if (!found[k])
      error = "cannot read the mesh file " + path_ + ": node " + std::to_string(tags[k]) +
              " of a tet has no coordinates";
  raise_collectively(comm_, error);
  return xyz;
}

TetMeshPart TetMeshFile::part_near(std::int64_t first, std::int64_t last, int rings) {
  // Vertices [first, last) are the used tags [from, to).
  std::vector<std::int64_t> bounds;
  if (first < last) {
    bounds.push_back(first);
    if (last < vertex_count_) bounds.push_back(last);
  }
  const std::vector<std::int64_t> bound_tags = tags_of(bounds);
  const std::int64_t from = bound_tags.empty() ? kNone : bound_tags[0],
                     to = bound_tags.size() > 1 ? bound_tags[1] : kNone;
  std::vector<std::int64_t> reached;                 // corners of the tets of the earlier steps
  std::vector<std::int64_t> kept_ids, kept_corners;  // of the last step's tets
  for (int step = 1; step <= rings; ++step) {
    std::vector<std::int64_t> corners;
    kept_ids.clear();
    for_each_tet_chunk([&](std::int64_t at, const std::vector<std::int64_t>& chunk) {
      for (std::size_t t = 0; 4 * t < chunk.size(); ++t) {
        const std::int64_t* c = &chunk[4 * t];
        if (!std::any_of(c, c + 4,
                         [&](std::int64_t v) { return (v >= from && v < to) || contains(reached, v); }))
          continue;
        corners.insert(corners.end(), c, c + 4);
        if (step == rings) kept_ids.push_back(at + static_cast<std::int64_t>(t));
      }
    });
    if (step == rings) kept_corners = corners;
    reached = std::move(corners);
    sort_unique(reached);
  }
  // `reached` holds the corners of the kept tets, which hold every vertex in [from, to).
  TetMeshPart part;
  part.vertex_ids = ids_of(reached);
  part.mesh.vertices = coordinates(reached);
  part.tet_ids = std::move(kept_ids);
  part.mesh.tets.reserve(kept_corners.size());
  for (std::int64_t tag : kept_corners)
    part.mesh.tets.push_back(
        static_cast<std::int32_t>(std::lower_bound(reached.begin(), reached.end(), tag) - reached.begin()));
  part.mesh.orient_positively();
  return part;
}

std::vector<Real> TetMeshFile::positions(const std::vector<std::int64_t>& ids) {
  return coordinates(tags_of(ids));
}

std::vector<std::int64_t> TetMeshFile::tet_corners(const std::vector<std::int64_t>& ids) {
  std::vector<std::int64_t> corners;
  corners.reserve(4 * ids.size());
  std::size_t next = 0;
  for_each_tet_chunk([&](std::int64_t at, const std::vector<std::int64_t>& chunk) {
    const auto end = at + static_cast<std::int64_t>(chunk.size() / 4);
    for (; next < ids.size() && ids[next] < end; ++next)
      corners.insert(corners.end(), &chunk[4 * (ids[next] - at)], &chunk[4 * (ids[next] - at)] + 4);
  });
  std::vector<std::int64_t> tags = corners;
  sort_unique(tags);
  const std::vector<std::int64_t> tag_ids = ids_of(tags);
  for (std::int64_t& c : corners) c = tag_ids[std::lower_bound(tags.begin(), tags.end(), c) - tags.begin()];
  return corners;
}

}  // namespace nendo
