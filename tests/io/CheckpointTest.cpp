// Checkpoint files on 1-4 ranks (rank 1 owns nothing): every field and every piece of /meta
// round-trips bit for bit; the checksums do not depend on how the rows are split over ranks; a
// changed byte, a missing completeness marker and a truncated file are reported as damage on
// every rank; a failed write leaves the earlier checkpoint as it was.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/Error.hpp"
#include "core/Mpi.hpp"
#include "io/Checkpoint.hpp"
#include "io/Checksum.hpp"
#include "io/Hdf5File.hpp"
#include "support/FreshDirectory.hpp"

namespace nendo {
namespace {

namespace fs = std::filesystem;

int rank() { return mpi::rank(MPI_COMM_WORLD); }
int ranks() { return mpi::size(MPI_COMM_WORLD); }

std::string fresh_directory(const std::string& test) { return nendo::fresh_directory("io/checkpoint", test); }

// Rank r holds 7 + 5 r particles (rank 1 none) with values drawn from the id, including the bit
// patterns that a text format would lose (subnormals, -0, NaN payloads are not needed: the file
// is binary).
std::size_t count_on(int r) { return r == 1 ? 0 : 7 + 5 * r; }

ParticleSet particles_of(int r) {
  ParticleSet ps(3);
  ps.add_field("F", FieldType::Real, 9);
  ps.add_field("material", FieldType::Int32, 1);
  ps.resize(count_on(r));
  std::mt19937_64 random(1234 + r);
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (std::size_t p = 0; p < ps.size(); ++p) {
    ps.ids()[p] = 100 * (r + 1) + 3 * p;
    for (int a = 0; a < 3; ++a) ps.positions()[3 * p + a] = uniform(random);
    for (int k = 0; k < 9; ++k) ps.real("F")[9 * p + k] = k == 0 ? 4.9e-324 * p : uniform(random) * 1e-300;
    ps.int32("material")[p] = static_cast<std::int32_t>(p % 3) - 1;
  }
  return ps;
}

CheckpointMeta test_meta() {
  CheckpointMeta meta;
  meta.step = 1234;
  meta.time = 0.1 + 0.2;  // 0.30000000000000004
  meta.dt = 1.0 / 3.0;
  meta.ranks = ranks();
  meta.method = "mpm";
  meta.finished = true;
  meta.next_id = 1ULL << 40;
  meta.output_index = 17;
  meta.next_output = 0.35;
  meta.scheduled_through = 1233;
  meta.scene_text = "nendo: 1\nmethod: mpm\n# 粘土\n";
  meta.overrides = {"time.end=2", "grid.dx=0.01"};
  meta.splitters = {0, 12, 99, ~0ULL};
  meta.method_state.integers["step"] = {1234};
  meta.method_state.reals["phase"] = {0.5, -0.0, 1e-310};
  meta.method_state.reals["empty"] = {};
  return meta;
}

void expect_same_meta(const CheckpointMeta& a, const CheckpointMeta& b) {
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.time, b.time);
  EXPECT_EQ(a.dt, b.dt);
  EXPECT_EQ(a.ranks, b.ranks);
  EXPECT_EQ(a.method, b.method);
  EXPECT_EQ(a.finished, b.finished);
  EXPECT_EQ(a.next_id, b.next_id);
  EXPECT_EQ(a.output_index, b.output_index);
  EXPECT_EQ(a.next_output, b.next_output);
  EXPECT_EQ(a.scheduled_through, b.scheduled_through);
  EXPECT_EQ(a.scene_text, b.scene_text);
  EXPECT_EQ(a.overrides, b.overrides);
  EXPECT_EQ(a.splitters, b.splitters);
  EXPECT_TRUE(a.method_state == b.method_state);
}

// Every rank gets every particle of the file (gathered), sorted by id, as raw bytes per field.
std::vector<unsigned char> gathered_bytes(const ParticleSet& ps, const std::string& field) {
  const ParticleField& f = ps.field(field);
  const int n = static_cast<int>(f.bytes_per_particle() * ps.size());
  std::vector<int> counts(ranks()), offsets(ranks());
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < ranks(); ++r) offsets[r] = total, total += counts[r];
  std::vector<unsigned char> bytes(total);
  MPI_Allgatherv(f.raw(), n, MPI_BYTE, bytes.data(), counts.data(), offsets.data(), MPI_BYTE, MPI_COMM_WORLD);
  return bytes;
}

// Rank order of the writer is file order; the reader's chunks concatenate to it.
std::vector<unsigned char> expected_bytes(const std::string& field) {
  std::vector<unsigned char> bytes;
  for (int r = 0; r < ranks(); ++r) {
    const ParticleSet ps = particles_of(r);
    const auto* raw = static_cast<const unsigned char*>(ps.field(field).raw());
    bytes.insert(bytes.end(), raw, raw + ps.field(field).bytes_per_particle() * ps.size());
  }
  return bytes;
}

void expect_damage_reported(const std::string& path, const std::string& words) {
  bool thrown = false;
  try {
    read_checkpoint_meta(MPI_COMM_WORLD, path);
    read_checkpoint_particles(MPI_COMM_WORLD, path);
  } catch (const CollectiveError& e) {
    thrown = true;
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
  EXPECT_TRUE(thrown) << path << " was read without complaint";
  MPI_Barrier(MPI_COMM_WORLD);  // every rank came out of it
}

TEST(Checkpoint, EveryFieldAndTheMetaRoundTripBitForBit) {
  const std::string path = fresh_directory("roundtrip") + "/" + checkpoint_file_name(1234);
  write_checkpoint(MPI_COMM_WORLD, path, particles_of(rank()), test_meta());
  expect_same_meta(read_checkpoint_meta(MPI_COMM_WORLD, path), test_meta());
  if (rank() == 0) expect_same_meta(read_checkpoint_meta(path), test_meta());
  const ParticleSet back = read_checkpoint_particles(MPI_COMM_WORLD, path);
  for (const char* field : {"id", "position", "F", "material"})
    EXPECT_EQ(gathered_bytes(back, field), expected_bytes(field)) << field;
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST(Checkpoint, TheChecksumOfRowsDoesNotDependOnTheirSplit) {
  std::vector<double> rows(9 * 100);
  std::mt19937_64 random(7);
  for (double& x : rows) x = std::uniform_real_distribution<double>(-1, 1)(random);
  const std::uint64_t whole = rows_checksum(rows.data(), 72, 0, 100);
  EXPECT_EQ(rows_checksum(rows.data(), 72, 0, 37) + rows_checksum(rows.data() + 9 * 37, 72, 37, 63), whole);
  // A single changed bit, or two rows swapped, change it.
  std::vector<double> changed = rows;
  reinterpret_cast<unsigned char*>(changed.data())[8 * 400 + 3] ^= 1;
  EXPECT_NE(rows_checksum(changed.data(), 72, 0, 100), whole);
  changed = rows;
  std::swap_ranges(changed.begin(), changed.begin() + 9, changed.begin() + 9);
  EXPECT_NE(rows_checksum(changed.data(), 72, 0, 100), whole);
  const std::int32_t ints[5] = {1, 2, 3, 4, 5}, swapped[5] = {2, 1, 3, 4, 5};
  EXPECT_NE(rows_checksum(ints, 4, 0, 5), rows_checksum(swapped, 4, 0, 5));
  EXPECT_EQ(rows_checksum(ints, 4, 0, 2) + rows_checksum(ints + 2, 4, 2, 3), rows_checksum(ints, 4, 0, 5));
}

TEST(Checkpoint, AChangedByteIsReportedOnEveryRank) {
  const std::string path = fresh_directory("flipped") + "/" + checkpoint_file_name(5);
  write_checkpoint(MPI_COMM_WORLD, path, particles_of(rank()), test_meta());
  if (rank() == 0) {  // change one byte of F's data: find the bytes of one stored value
    const double value = particles_of(0).real("F")[9 * 3 + 4];
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(file)), {});
    const std::size_t at = bytes.find(std::string(reinterpret_cast<const char*>(&value), 8));
    ASSERT_NE(at, std::string::npos);
    file.seekp(static_cast<std::streamoff>(at + 2));
    file.put(static_cast<char>(bytes[at + 2] ^ 0x10));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  expect_damage_reported(path, "/particles/F do not match its checksum");
}

TEST(Checkpoint, AMissingCompletenessMarkerIsReported) {
  const std::string path = fresh_directory("unmarked") + "/" + checkpoint_file_name(5);
  write_checkpoint(MPI_COMM_WORLD, path, particles_of(rank()), test_meta());
  if (rank() == 0) {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    EXPECT_GE(H5Adelete_by_name(file, "/meta", "complete", H5P_DEFAULT), 0);
    H5Fclose(file);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  expect_damage_reported(path, "incomplete");
}

TEST(Checkpoint, ATruncatedFileIsReported) {
  const std::string path = fresh_directory("truncated") + "/" + checkpoint_file_name(5);
  write_checkpoint(MPI_COMM_WORLD, path, particles_of(rank()), test_meta());
  if (rank() == 0) fs::resize_file(path, fs::file_size(path) / 2);
  MPI_Barrier(MPI_COMM_WORLD);
  expect_damage_reported(path, path);
}

TEST(Checkpoint, AFailedWriteLeavesTheEarlierCheckpointIntact) {
  const std::string directory = fresh_directory("failed");
  const std::string good = directory + "/" + checkpoint_file_name(1);
  write_checkpoint(MPI_COMM_WORLD, good, particles_of(rank()), test_meta());
  // The next one cannot be created: its name is taken by a directory.
  const std::string blocked = directory + "/" + checkpoint_file_name(2);
  if (rank() == 0) fs::create_directories(blocked + ".tmp/x");
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_THROW(write_checkpoint(MPI_COMM_WORLD, blocked, particles_of(rank()), test_meta()), CollectiveError);
  expect_same_meta(read_checkpoint_meta(MPI_COMM_WORLD, good), test_meta());
  read_checkpoint_particles(MPI_COMM_WORLD, good);  // checksums still verify
  EXPECT_FALSE(fs::exists(blocked));
}

TEST(Checkpoint, NamesSortNewestFirstAndOtherFilesAreIgnored) {
  const std::string directory = fresh_directory("names");
  if (rank() == 0) {
    for (const std::string& name :
         {checkpoint_file_name(20), checkpoint_file_name(3), checkpoint_file_name(100),
          checkpoint_file_name(7) + ".tmp", checkpoint_file_name(9) + ".damaged",
          std::string("checkpoint_12.h5"), std::string("particles_000001.h5")})
      std::ofstream(directory + "/" + name) << "x";
    const std::vector<std::string> found = list_checkpoints(directory);
    ASSERT_EQ(found.size(), 3u);
    EXPECT_EQ(checkpoint_file_step(found[0]), 100);
    EXPECT_EQ(checkpoint_file_step(found[1]), 20);
    EXPECT_EQ(checkpoint_file_step(found[2]), 3);
    EXPECT_EQ(checkpoint_file_name(42), "checkpoint_000000042.h5");
    EXPECT_THROW(checkpoint_file_name(-1), Error);
  }
}

}  // namespace
}  // namespace nendo
