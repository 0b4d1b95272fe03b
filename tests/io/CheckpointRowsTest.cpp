// A restart reads its share: a checkpoint written on P ranks (1-4; rank 1 writes nothing, and each
// rank's rows are in no particular block order, as a run whose particles moved since their last
// migration writes them) is read back on 1..P ranks. Rank 0 alone opens the file for the meta data;
// every reader gets exactly the particles of its key range under the partition the run would reach
// (Space::distribute from equal slices: same splitters, same particles in the same order), so no
// particle moves after reading; readers whose range holds nothing read nothing. A checkpoint
// without the row index, or one keyed by another grid, is not used to plan; an index that does
// not add up to the file's rows is damage, reported on every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/CollectiveError.hpp"
#include "core/Mpi.hpp"
#include "decomposition/Space.hpp"
#include "io/Checkpoint.hpp"
#include "io/Hdf5File.hpp"
#include "support/FreshDirectory.hpp"

namespace nendo {
namespace {

int world_rank() { return mpi::rank(MPI_COMM_WORLD); }
int world_ranks() { return mpi::size(MPI_COMM_WORLD); }

BlockGeometry grid() {
  BlockGeometry geometry;
  geometry.dimension = 3;
  geometry.dx = 0.1;
  geometry.block = 4;  // blocks of 0.4 m
  return geometry;
}

// Rank r writes 40 + 13 r particles (rank 1 none) in a shuffled order; spread: over a 2 m cube
// (many blocks), else in two blocks only (so that some readers own nothing).
ParticleSet written_by(int r, bool spread) {
  ParticleSet ps(3);
  ps.add_field("velocity", FieldType::Real, 3);
  ps.add_field("material", FieldType::Int32, 1);
  ps.resize(r == 1 ? 0 : 40 + 13 * r);
  std::mt19937_64 random(99 + r);
  std::uniform_real_distribution<double> uniform(0, 1);
  for (std::size_t p = 0; p < ps.size(); ++p) {
    ps.ids()[p] = 1000 * r + p;
    for (int a = 0; a < 3; ++a)
      ps.positions()[3 * p + a] =
          spread ? 2 * uniform(random) - 1 : 0.05 + 0.3 * uniform(random) + (p % 2) * 0.4 * (a == 0);
    for (int a = 0; a < 3; ++a) ps.real("velocity")[3 * p + a] = uniform(random);
    ps.int32("material")[p] = static_cast<std::int32_t>(p % 3);
  }
  return ps;
}

std::string write(const std::string& test, bool spread, bool indexed) {
  const std::string path = fresh_directory("io/checkpoint_rows", test) + "/" + checkpoint_file_name(7);
  const ParticleSet particles = written_by(world_rank(), spread);
  CheckpointMeta meta;
  meta.ranks = world_ranks();
  meta.method = "mpm";
  meta.splitters = {0, kBlockKeyEnd};
  if (indexed) meta.rows = checkpoint_rows(MPI_COMM_WORLD, particles, grid());
  write_checkpoint(MPI_COMM_WORLD, path, particles, meta);
  return path;
}

// Every field of a and b holds the same bytes.
void expect_same_particles(const ParticleSet& a, const ParticleSet& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const ParticleField& field : a.fields()) {
    const auto* x = static_cast<const unsigned char*>(field.raw());
    const auto* y = static_cast<const unsigned char*>(b.field(field.name()).raw());
    EXPECT_TRUE(std::equal(x, x + field.bytes_per_particle() * a.size(), y)) << field.name();
  }
}

// On readers ranks of the world: the planned read against the run's own way to its partition.
void expect_reads_its_share(const std::string& path, int readers, bool spread) {
  MPI_Comm comm;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank() < readers ? 0 : MPI_UNDEFINED, world_rank(), &comm);
  if (comm == MPI_COMM_NULL) return;
  const int rank = mpi::rank(comm);

  const std::uint64_t opened = Hdf5File::opened_for_reading();
  const CheckpointMeta meta = read_checkpoint_meta(comm, path);
  EXPECT_EQ(Hdf5File::opened_for_reading() - opened, rank == 0 ? 1u : 0u) << "opened the file for its meta";
  if (rank != 0) {
    EXPECT_TRUE(meta.rows.runs.empty()) << "the index stays on rank 0";
  }
  const std::optional<RestartReads> reads = plan_restart_reads(comm, meta.rows, grid(), meta.splitters);
  ASSERT_TRUE(reads.has_value());
  const Partition& partition = reads->partition;
  ParticleSet share = read_checkpoint_particles(comm, path, reads->rows);

  for (std::size_t p = 0; p < share.size(); ++p)
    EXPECT_EQ(partition.owner(grid().key_of(share.positions() + 3 * p)), rank)
        << "particle " << share.ids()[p];
  std::uint64_t read = share.size(), total = 0, fewest = 0;
  MPI_Allreduce(&read, &total, 1, MPI_UINT64_T, MPI_SUM, comm);
  MPI_Allreduce(&read, &fewest, 1, MPI_UINT64_T, MPI_MIN, comm);
  std::uint64_t written = 0;
  for (int r = 0; r < world_ranks(); ++r) written += written_by(r, spread).size();
  EXPECT_EQ(total, written);
  if (!spread && readers > 2) {
    EXPECT_EQ(fewest, 0u) << "some reader's range holds nothing";
  }

  Space planned(comm, grid(), std::move(share));
  planned.distribute(partition);
  std::uint64_t moved = planned.migration().particles_sent();
  MPI_Allreduce(MPI_IN_PLACE, &moved, 1, MPI_UINT64_T, MPI_SUM, comm);
  EXPECT_EQ(moved, 0u) << "particles moved after the planned read";

  Space reference(comm, grid(), read_checkpoint_particles(comm, path));
  reference.distribute();
  EXPECT_TRUE(reference.partition() == partition);
  expect_same_particles(planned.particles(), reference.particles());
  MPI_Comm_free(&comm);
}

TEST(CheckpointRows, EachReaderGetsExactlyItsKeyRange) {
  const std::string path = write("spread", true, true);
  for (int readers = 1; readers <= world_ranks(); ++readers) expect_reads_its_share(path, readers, true);
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(CheckpointRows, ReadersWhoseRangeHoldsNothingReadNothing) {
  const std::string path = write("two_blocks", false, true);
  for (int readers = 1; readers <= world_ranks(); ++readers) expect_reads_its_share(path, readers, false);
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(CheckpointRows, OnlyAnIndexOfTheSameGridPlans) {
  const CheckpointMeta unindexed = read_checkpoint_meta(MPI_COMM_WORLD, write("unindexed", true, false));
  EXPECT_FALSE(unindexed.rows.indexed);
  EXPECT_FALSE(plans_restart(unindexed.rows, grid()));
  const CheckpointMeta indexed = read_checkpoint_meta(MPI_COMM_WORLD, write("indexed", true, true));
  EXPECT_TRUE(plans_restart(indexed.rows, grid()));
  BlockGeometry finer = grid();
  finer.dx = 0.05;
  EXPECT_FALSE(plans_restart(indexed.rows, finer));
  BlockGeometry larger_blocks = grid();
  larger_blocks.block = 8;
  EXPECT_FALSE(plans_restart(indexed.rows, larger_blocks));
}

TEST(CheckpointRows, AnIndexThatDisagreesWithTheParticlesIsReportedOnEveryRank) {
  const std::string path = write("disagrees", true, true);
  if (world_rank() == 0) {  // one more row in the first run than the file has
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    const hid_t dataset = H5Dopen2(file, "/meta/rows", H5P_DEFAULT);
    std::uint64_t first[2];
    const hsize_t start[2] = {0, 0}, count[2] = {1, 2};
    const hid_t space = H5Dget_space(dataset), memory = H5Screate_simple(2, count, nullptr);
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, nullptr, count, nullptr);
    EXPECT_GE(H5Dread(dataset, H5T_NATIVE_UINT64, memory, space, H5P_DEFAULT, first), 0);
    ++first[1];
    EXPECT_GE(H5Dwrite(dataset, H5T_NATIVE_UINT64, memory, space, H5P_DEFAULT, first), 0);
    H5Sclose(memory), H5Sclose(space), H5Dclose(dataset), H5Fclose(file);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  try {
    read_checkpoint_meta(MPI_COMM_WORLD, path);
    ADD_FAILURE() << "the index was accepted";
  } catch (const CollectiveError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": /meta/rows indexes"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nendo
