#pragma once
// Checkpoint files: everything a run needs to take its next step, on any rank count.
//
// DIR/checkpoint_NNNNNNNNN.h5 (NNNNNNNNN = step, 9 digits) is a particle file (ParticleFile.hpp)
// holding every particle field, each dataset with a "checksum" attribute (io/Checksum.hpp), no
// /xdmf group, plus
//   /meta                   attributes format (int32), step (int64), time, dt (float64),
//                           ranks (int32, the rank count that wrote it), method (string),
//                           finished (int32), next_id (uint64), output_index (int64),
//                           next_output (float64), scheduled_through (int64: the last step
//                           whose output follows the schedule), and complete (int32 = 1), last
//   /meta/scene             the scene text as read (string dataset)
//   /meta/overrides         the --set overrides applied to it, one per line (string dataset)
//   /meta/splitters         the load-balance partition (uint64, ranks + 1)
//   /meta/method/real/<name>, /meta/method/integer/<name>
//                           the method's StateRecord
//   /meta/rows              which rows lie in which block (io/CheckpointRows.hpp; since issue 34)
// It is written through checkpoint_....h5.tmp, synced and renamed; a checkpoint without the
// complete marker, with a checksum that does not match or that HDF5 cannot read is damaged.
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/StateRecord.hpp"
#include "decomposition/ParticleSet.hpp"
#include "io/CheckpointRows.hpp"

namespace nendo {

constexpr int kCheckpointFormat = 1;

struct CheckpointMeta {
  int format = kCheckpointFormat;
  std::int64_t step = 0;
  double time = 0;
  double dt = 0;  // the last step's
  int ranks = 0;
  std::string method;
  std::string run_id;     // of the run that wrote it (app/RunFolder); empty in checkpoints before issue 32
  bool finished = false;  // the run reached its end time
  std::uint64_t next_id = 0;           // the smallest particle id never used
  std::int64_t output_index = 0;       // the index the next output file gets
  double next_output = 0;              // the simulated time of the next output (output.every)
  std::int64_t scheduled_through = 0;  // diagnostics rows of steps up to this one are kept on restart
  std::string scene_text;
  std::vector<std::string> overrides;
  std::vector<std::uint64_t> splitters;
  StateRecord method_state;
  // Not indexed: the file has no /meta/rows (or the writer gave none). After the collective
  // read_checkpoint_meta, the runs are on rank 0 only (plan_restart_reads).
  CheckpointRows rows;
};

// A checkpoint file and what it holds besides the particles.
struct Checkpoint {
  std::string path;
  CheckpointMeta meta;
};

// "checkpoint_000001200.h5" for step 1200; the step of such a name (a directory part is ignored),
// or -1 for any other name.
std::string checkpoint_file_name(std::int64_t step);
std::int64_t checkpoint_file_step(const std::string& file_name);
// The checkpoints in directory (names only; not checked), newest (largest step) first.
std::vector<std::string> list_checkpoints(const std::string& directory);

// Collective. Writes path (the particles: every field of `particles`); throws
// nendo::CollectiveError on every rank when it cannot, leaving any earlier file intact.
void write_checkpoint(MPI_Comm comm, const std::string& path, const ParticleSet& particles,
                      const CheckpointMeta& meta);

// Collective. The meta data, after checking the completeness marker and the format; throws
// nendo::CollectiveError naming the path and the problem when the file is not a complete
// checkpoint of a format this build reads. Rank 0 alone opens the file; the others get its copy,
// less the row index's runs.
CheckpointMeta read_checkpoint_meta(MPI_Comm comm, const std::string& path);
// One process, no MPI: the same, for `nendo info`.
CheckpointMeta read_checkpoint_meta(const std::string& path);
// Collective. Rank r of P gets the particles [r N / P, (r + 1) N / P) in file order, with every
// checksum verified; throws nendo::CollectiveError when the file is damaged.
ParticleSet read_checkpoint_particles(MPI_Comm comm, const std::string& path);
// Collective. The same for the rows each rank lists (rows_owned of the meta's rows index), in row
// order; every checksum is still verified over the whole file.
ParticleSet read_checkpoint_particles(MPI_Comm comm, const std::string& path,
                                      const std::vector<RowRange>& rows);

}  // namespace nendo
