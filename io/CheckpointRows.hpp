#pragma once
// A checkpoint's row index: which rows of /particles lie in which block, so that a restart on any
// rank count plans its partition and has each rank read just the rows of its key range, without
// reading any particle first (docs/checkpointing.md).
//
//   /meta/rows   uint64 (R, 2): runs of consecutive rows whose particles lie in one block, in row
//                order: the block key and the number of rows. Attributes dimension (int32),
//                dx (float64) and block (int32): the block geometry the keys are of.
// The rows of a rank are sorted by the block each particle sat in at its last migration; one that
// moved since (within the method's slack) starts a run of its own, so R is about the number of
// blocks (mesh methods, which migrate only when their particle count changes, can have more after
// large motions). Checkpoints written before issue 34 have no /meta/rows.
#include <mpi.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "decomposition/BlockGeometry.hpp"
#include "decomposition/ParticleSet.hpp"
#include "decomposition/Partition.hpp"
#include "io/ParticleReader.hpp"

namespace nendo {

class Hdf5File;

struct BlockRun {
  BlockKey key = 0;
  std::uint64_t rows = 0;
};

struct CheckpointRows {
  bool indexed = false;  // false: a checkpoint without the index (or meta that never had one)
  BlockGeometry geometry;
  // Written: this rank's runs, in its row order, runs [first_run, first_run + runs.size()) of
  // total_runs over all ranks. Read: the whole file's (first_run = 0); after a collective read of
  // the meta data, on rank 0 only.
  std::vector<BlockRun> runs;
  std::uint64_t first_run = 0;
  std::uint64_t total_runs = 0;
};

// Collective: the index of particles as a checkpoint writes them (each rank's in its order, in
// rank order). A particle no block holds gets the key kBlockKeyEnd (the restart's migration then
// reports it, as it would without the index).
CheckpointRows checkpoint_rows(MPI_Comm comm, const ParticleSet& particles, const BlockGeometry& geometry);
// Collective over the file's ranks: writes /meta/rows (nothing when rows are not indexed).
void write_checkpoint_rows(const Hdf5File& file, const CheckpointRows& rows);
// One process: /meta/rows of a checkpoint file, checked against its /particles count; not
// indexed when the file has none. Throws nendo::Error naming the file when it is malformed.
CheckpointRows read_checkpoint_rows(const Hdf5File& file);
// Collective: root's header (indexed, geometry, total_runs) on every rank; the runs stay on root.
void broadcast_header(CheckpointRows& rows, int root, MPI_Comm comm);

// Whether the index can plan a restart whose grid is `geometry` (a scene change may have changed
// the blocks).
bool plans_restart(const CheckpointRows& rows, const BlockGeometry& geometry);
// The balanced partition of the indexed blocks over `ranks` ranks: the one Space::distribute()
// reaches from these particles (Partition::balanced over the block weights of LoadBalance.hpp).
Partition balanced_partition(const CheckpointRows& rows, int ranks);
// Per rank, the rows of the blocks it owns under partition: ascending, adjacent runs merged.
std::vector<std::vector<RowRange>> rows_by_owner(const CheckpointRows& rows, const Partition& partition);

// What a restart reads: the partition it resumes on and this rank's rows under it.
struct RestartReads {
  Partition partition{1};
  std::vector<RowRange> rows;
};
// Collective. rows: the whole index on rank 0, its header on the others (read_checkpoint_meta);
// splitters: the checkpoint's partition, kept on the rank count that wrote it; on another count
// rank 0 computes the balanced one (balanced_partition) and broadcasts it. Rank 0 then sends each
// rank its rows, so no other rank holds the index. None on every rank when the index cannot plan
// (plans_restart).
std::optional<RestartReads> plan_restart_reads(MPI_Comm comm, const CheckpointRows& rows,
                                               const BlockGeometry& geometry,
                                               const std::vector<std::uint64_t>& splitters);

}  // namespace nendo
