#include "io/CheckpointRows.hpp"

#include <algorithm>

#include "core/Error.hpp"
#include "core/Mpi.hpp"
#include "decomposition/LoadBalance.hpp"
#include "io/Hdf5File.hpp"

namespace nendo {
namespace {

static_assert(sizeof(BlockRun) == 2 * sizeof(std::uint64_t), "/meta/rows rows are (key, rows) pairs");

const char* const kRowsName = "/meta/rows";

}  // namespace

CheckpointRows checkpoint_rows(MPI_Comm comm, const ParticleSet& particles, const BlockGeometry& geometry) {
  CheckpointRows rows;
  rows.indexed = true;
  rows.geometry = geometry;
  const int dim = particles.dimension();
  const Real* x = particles.positions();
  for (std::size_t p = 0; p < particles.size(); ++p) {
    const BlockKey key = geometry.addressable(x + dim * p) ? geometry.key_of(x + dim * p) : kBlockKeyEnd;
    if (rows.runs.empty() || rows.runs.back().key != key) rows.runs.push_back({key, 0});
    ++rows.runs.back().rows;
  }
  const std::uint64_t count = rows.runs.size();
  MPI_Exscan(&count, &rows.first_run, 1, MPI_UINT64_T, MPI_SUM, comm);
  if (mpi::rank(comm) == 0) rows.first_run = 0;  // MPI_Exscan leaves rank 0's result undefined
  MPI_Allreduce(&count, &rows.total_runs, 1, MPI_UINT64_T, MPI_SUM, comm);
  return rows;
}

void write_checkpoint_rows(const Hdf5File& file, const CheckpointRows& rows) {
  if (!rows.indexed) return;
  const std::string what = std::string("write dataset ") + kRowsName;
  const hsize_t dims[2] = {rows.total_runs, 2};
  Hdf5Id file_space(file.check(H5Screate_simple(2, dims, nullptr), what), H5Sclose);
  Hdf5Id dataset(file.check(H5Dcreate2(file.id(), kRowsName, H5T_STD_U64LE, file_space.get(), H5P_DEFAULT,
                                       H5P_DEFAULT, H5P_DEFAULT),
                            what),
                 H5Dclose);
  const hsize_t start[2] = {rows.first_run, 0}, block[2] = {std::max<hsize_t>(rows.runs.size(), 1), 2};
  Hdf5Id memory_space(file.check(H5Screate_simple(2, block, nullptr), what), H5Sclose);
  static const BlockRun no_runs;  // H5Dwrite wants a buffer even for an empty selection
  const void* data = &no_runs;
  if (rows.runs.empty()) {  // a rank without particles joins the collective write, selecting nothing
    file.check_status(H5Sselect_none(file_space.get()), what);
    file.check_status(H5Sselect_none(memory_space.get()), what);
  } else {
    file.check_status(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, block, nullptr),
                      what);
    data = rows.runs.data();
  }
  if (rows.total_runs > 0)  // a dataset without elements has no storage to write
    file.check_status(H5Dwrite(dataset.get(), H5T_NATIVE_UINT64, memory_space.get(), file_space.get(),
                               file.transfer(), data),
                      what);
  file.write_attribute(dataset.get(), "dimension", static_cast<std::int32_t>(rows.geometry.dimension));
  file.write_attribute(dataset.get(), "dx", static_cast<double>(rows.geometry.dx));
  file.write_attribute(dataset.get(), "block", static_cast<std::int32_t>(rows.geometry.block));
}

CheckpointRows read_checkpoint_rows(const Hdf5File& file) {
  CheckpointRows rows;
  if (!file.exists(kRowsName)) return rows;
  const std::string what = std::string("read dataset ") + kRowsName;
  Hdf5Id dataset = file.open_dataset(kRowsName);
  Hdf5Id space(file.check(H5Dget_space(dataset.get()), what), H5Sclose);
  hsize_t dims[2] = {0, 0};
  if (H5Sget_simple_extent_ndims(space.get()) != 2 ||
      H5Sget_simple_extent_dims(space.get(), dims, nullptr) < 0 || dims[1] != 2)
    throw Error("checkpoint " + file.path() + ": " + kRowsName + " is not (R, 2)");
  rows.runs.resize(dims[0]);
  if (dims[0] > 0)
    file.check_status(
        H5Dread(dataset.get(), H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, file.transfer(), rows.runs.data()), what);
  rows.indexed = true;
  rows.total_runs = dims[0];
  rows.geometry.dimension = static_cast<int>(file.read_int64_attribute(dataset.get(), "dimension"));
  rows.geometry.dx = file.read_double_attribute(dataset.get(), "dx");
  rows.geometry.block = static_cast<int>(file.read_int64_attribute(dataset.get(), "block"));
  std::uint64_t indexed = 0;
  for (const BlockRun& run : rows.runs) indexed += run.rows;
  Hdf5Id particles = file.open_group("/particles");
  const std::uint64_t count = file.read_uint64_attribute(particles.get(), "count");
  if (indexed != count)
    throw Error("checkpoint " + file.path() + ": " + kRowsName + " indexes " + std::to_string(indexed) +
                " rows, /particles has " + std::to_string(count));
  return rows;
}

void broadcast_header(CheckpointRows& rows, int root, MPI_Comm comm) {
  int indexed = rows.indexed;
  MPI_Bcast(&indexed, 1, MPI_INT, root, comm);
  MPI_Bcast(&rows.geometry, static_cast<int>(sizeof(BlockGeometry)), MPI_BYTE, root, comm);
  MPI_Bcast(&rows.total_runs, 1, MPI_UINT64_T, root, comm);
  rows.indexed = indexed != 0;
}

bool plans_restart(const CheckpointRows& rows, const BlockGeometry& geometry) {
  return rows.indexed && rows.geometry.dimension == geometry.dimension && rows.geometry.dx == geometry.dx &&
         rows.geometry.block == geometry.block && rows.geometry.origin == geometry.origin;
}

Partition balanced_partition(const CheckpointRows& rows, int ranks) {
  std::vector<BlockRun> blocks = rows.runs;
  std::sort(blocks.begin(), blocks.end(), [](const BlockRun& a, const BlockRun& b) { return a.key < b.key; });
  std::vector<BlockKey> keys;
  std::vector<std::uint64_t> counts;
  for (const BlockRun& run : blocks) {
    if (run.key == kBlockKeyEnd) continue;  // no block: the migration reports it
    if (keys.empty() || keys.back() != run.key) keys.push_back(run.key), counts.push_back(0);
    counts.back() += run.rows;
  }
  std::vector<std::uint64_t> weights(keys.size());
  for (std::size_t b = 0; b < keys.size(); ++b) weights[b] = block_weight(counts[b], rows.geometry);
  return Partition::balanced(ranks, keys, weights);
}

std::vector<std::vector<RowRange>> rows_by_owner(const CheckpointRows& rows, const Partition& partition) {
  std::vector<std::vector<RowRange>> owned(partition.ranks());
  std::uint64_t row = 0;
  for (const BlockRun& run : rows.runs) {
    std::vector<RowRange>& mine = owned[partition.owner(run.key)];
    if (!mine.empty() && mine.back().first + mine.back().count == row)
      mine.back().count += run.rows;
    else
      mine.push_back({row, run.rows});
    row += run.rows;
  }
  return owned;
}

std::optional<RestartReads> plan_restart_reads(MPI_Comm comm, const CheckpointRows& rows,
                                               const BlockGeometry& geometry,
                                               const std::vector<std::uint64_t>& splitters) {
  if (!plans_restart(rows, geometry)) return std::nullopt;  // the header is alike on every rank
  const int ranks = mpi::size(comm);
  const bool root = mpi::rank(comm) == 0;
  RestartReads reads;
  if (static_cast<int>(splitters.size()) == ranks + 1) {
    reads.partition = Partition(std::vector<BlockKey>(splitters.begin(), splitters.end()));
  } else {
    std::vector<BlockKey> balanced;
    if (root) balanced = balanced_partition(rows, ranks).splitters();
    mpi::broadcast(balanced, 0, comm);
    reads.partition = Partition(std::move(balanced));
  }
  static_assert(sizeof(RowRange) == 2 * sizeof(std::uint64_t));
  std::vector<RowRange> all;  // rank 0: every rank's rows, in rank order
  std::vector<int> counts(ranks, 0), offsets(ranks, 0);
  if (root) {
    const std::vector<std::vector<RowRange>> owned = rows_by_owner(rows, reads.partition);
    for (int r = 0; r < ranks; ++r) {
      offsets[r] = static_cast<int>(2 * all.size());
      counts[r] = static_cast<int>(2 * owned[r].size());
      all.insert(all.end(), owned[r].begin(), owned[r].end());
    }
  }
  int mine = 0;
  MPI_Scatter(counts.data(), 1, MPI_INT, &mine, 1, MPI_INT, 0, comm);
  reads.rows.resize(static_cast<std::size_t>(mine / 2));
  MPI_Scatterv(all.data(), counts.data(), offsets.data(), MPI_UINT64_T, reads.rows.data(), mine, MPI_UINT64_T,
               0, comm);
  return reads;
}

}  // namespace nendo
