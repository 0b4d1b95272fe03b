// Particle output on 1-4 ranks: every rank writes a different number of particles (rank 1 none)
// into one HDF5 file per output; reading it back, every id appears exactly once with the values it
// was written with, an independent h5py script agrees, and the XDMF series indexes the files.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "core/Error.hpp"
#include "core/Mpi.hpp"
#include "io/DiagnosticsCsv.hpp"
#include "io/Hdf5File.hpp"
#include "io/ParticleReader.hpp"
#include "io/ParticleWriter.hpp"
#include "io/XdmfSeries.hpp"
#include "support/FreshDirectory.hpp"

namespace nendo {
namespace {

namespace fs = std::filesystem;

int rank() { return mpi::rank(MPI_COMM_WORLD); }
int ranks() { return mpi::size(MPI_COMM_WORLD); }

std::string fresh_directory(const std::string& test) { return nendo::fresh_directory("io/output", test); }

// The values every test particle carries, as functions of its id (check_particles.py uses the same).
Real position_of(ParticleId id, int axis) { return axis == 0 ? id * 0.5 : axis == 1 ? id * 0.25 : -Real(id); }
Real velocity_of(ParticleId id, int axis) {
  return axis == 0 ? id + 0.5 : axis == 1 ? -2.0 * id : id * 0.125;
}
std::int32_t material_of(ParticleId id) { return static_cast<std::int32_t>(id % 5) - 2; }

// Rank r owns 5 + 3 r particles, except rank 1 which owns none; ids are 1000 (r + 1) + 7 i, unique
// across ranks and not in rank order of the file.
std::size_t count_on(int r) { return r == 1 ? 0 : 5 + 3 * r; }
std::vector<ParticleId> ids_on(int r) {
  std::vector<ParticleId> ids;
  for (std::size_t i = 0; i < count_on(r); ++i) ids.push_back(1000 * (r + 1) + 7 * i);
  return ids;
}
std::vector<ParticleId> all_ids() {
  std::vector<ParticleId> ids;
  for (int r = 0; r < ranks(); ++r)
    for (ParticleId id : ids_on(r)) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

ParticleSet test_particles(int dimension, const std::vector<ParticleId>& ids) {
  ParticleSet particles(dimension);
  particles.add_field("velocity", FieldType::Real, dimension);
  particles.add_field("material", FieldType::Int32, 1);
  particles.add_field("not_written", FieldType::Real, 1);
  particles.resize(ids.size());
  for (std::size_t p = 0; p < ids.size(); ++p) {
    particles.ids()[p] = ids[p];
    for (int a = 0; a < dimension; ++a) {
      particles.positions()[dimension * p + a] = position_of(ids[p], a);
      particles.real("velocity")[dimension * p + a] = velocity_of(ids[p], a);
    }
    particles.int32("material")[p] = material_of(ids[p]);
  }
  return particles;
}

// Runs check_particles.py on rank 0 and returns its exit status on every rank. The environment is
// cleared: Debian's h5py switches to its MPI build when it sees OpenMPI's variables, and the child
// would then try to join this job.
int run_check(const std::string& arguments) {
  int status = 0;
  if (rank() == 0) {
    const char* source = std::getenv("NENDO_SOURCE_DIR");
    const std::string script = std::string(source ? source : ".") + "/tests/io/check_particles.py";
    const std::string command =
        "/usr/bin/env -i PATH=/usr/bin:/bin /usr/bin/python3 " + script + " " + arguments;
    status = std::system(command.c_str());
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return status;
}

// Every rank's ids, gathered on every rank and sorted.
std::vector<ParticleId> gather_ids(const ParticleSet& particles) {
  const int n = static_cast<int>(particles.size());
  std::vector<int> counts(ranks()), offsets(ranks());
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < ranks(); ++r) offsets[r] = total, total += counts[r];
  std::vector<ParticleId> ids(total);
  MPI_Allgatherv(particles.ids(), n, MPI_UINT64_T, ids.data(), counts.data(), offsets.data(), MPI_UINT64_T,
                 MPI_COMM_WORLD);
  std::sort(ids.begin(), ids.end());
  return ids;
}

class ParticleWriterTest : public ::testing::TestWithParam<int> {};

TEST_P(ParticleWriterTest, EveryParticleIsWrittenOnceWithItsValues) {
  const int dimension = GetParam();
  const std::string directory = fresh_directory("dimension" + std::to_string(dimension));
  ParticleWriter writer(MPI_COMM_WORLD, directory, {"velocity", "material"});

  // Output 0: every particle. Output 1: the first half of each rank's particles, so the two
  // entries of the series have different sizes.
  const std::vector<ParticleId> mine = ids_on(rank());
  const ParticleFileInfo first = writer.write(test_particles(dimension, mine), 0.25, 10);
  const std::vector<ParticleId> half(mine.begin(), mine.begin() + mine.size() / 2);
  const ParticleFileInfo second = writer.write(test_particles(dimension, half), 0.5, 20);
  EXPECT_EQ(writer.next_index(), 2);

  const std::vector<ParticleId> expected = all_ids();
  EXPECT_EQ(first.count, expected.size());
  EXPECT_EQ(first.index, 0);
  EXPECT_EQ(second.index, 1);
  const std::string path = directory + "/particles_000000.h5";
  ASSERT_TRUE(fs::exists(path));
  ASSERT_TRUE(fs::exists(directory + "/particles_000001.h5"));
  for (const auto& item : fs::directory_iterator(directory))
    EXPECT_NE(item.path().extension(), ".tmp") << item.path() << " was left behind";

  // (a) Read back collectively: each rank gets a contiguous chunk; together they hold every id once.
  ParticleFileInfo info;
  const ParticleSet back = ParticleReader::read(MPI_COMM_WORLD, path, &info);
  EXPECT_EQ(info.time, 0.25);
  EXPECT_EQ(info.step, 10);
  EXPECT_EQ(info.dimension, dimension);
  EXPECT_EQ(info.count, expected.size());
  ASSERT_EQ(info.fields.size(), 4u);  // id, position, then material and velocity in name order
  EXPECT_EQ(info.fields[2].name, "material");
  EXPECT_EQ(info.fields[2].type, FieldType::Int32);
  EXPECT_EQ(info.fields[3].name, "velocity");
  EXPECT_EQ(info.fields[3].components, dimension);
  EXPECT_FALSE(back.has_field("not_written"));
  EXPECT_EQ(back.size(), expected.size() * (rank() + 1) / ranks() - expected.size() * rank() / ranks());
  for (std::size_t p = 0; p < back.size(); ++p) {
    const ParticleId id = back.ids()[p];
    for (int a = 0; a < dimension; ++a) {
      EXPECT_EQ(back.positions()[dimension * p + a], position_of(id, a)) << "id " << id << " axis " << a;
      EXPECT_EQ(back.real("velocity")[dimension * p + a], velocity_of(id, a)) << "id " << id << " axis " << a;
    }
    EXPECT_EQ(back.int32("material")[p], material_of(id)) << "id " << id;
  }
  EXPECT_EQ(gather_ids(back), expected);

  // The header alone, read by one process.
  if (rank() == 0) {
    const ParticleFileInfo header = ParticleReader::describe(directory + "/particles_000001.h5");
    EXPECT_EQ(header.index, 1);
    EXPECT_EQ(header.time, 0.5);
    EXPECT_EQ(header.count, second.count);
  }

  // (b) An independent reader: h5py for the file, xml.etree for the series.
  EXPECT_EQ(run_check(path + " " + std::to_string(expected.size()) + " --xdmf " + directory +
                      "/particles.xdmf --grids 2"),
            0);
}

INSTANTIATE_TEST_SUITE_P(Dimensions, ParticleWriterTest, ::testing::Values(2, 3),
                         [](const auto& info) { return std::to_string(info.param) + "D"; });

TEST(ParticleWriter, NoParticlesAnywhereIsAValidOutput) {
  const std::string directory = fresh_directory("empty");
  ParticleWriter writer(MPI_COMM_WORLD, directory, {"velocity", "material"});
  const ParticleFileInfo info = writer.write(test_particles(3, {}), 1.0, 0);
  EXPECT_EQ(info.count, 0u);
  const ParticleSet back = ParticleReader::read(MPI_COMM_WORLD, directory + "/particles_000000.h5");
  EXPECT_EQ(back.size(), 0u);
  EXPECT_TRUE(back.has_field("velocity"));
  EXPECT_EQ(run_check(directory + "/particles_000000.h5 0 --xdmf " + directory + "/particles.xdmf --grids 1"),
            0);
}

TEST(ParticleWriter, ARestartContinuesTheSeriesFromTheFilesOnDisk) {
  const std::string directory = fresh_directory("restart");
  const ParticleSet particles = test_particles(3, ids_on(rank()));
  {
    ParticleWriter writer(MPI_COMM_WORLD, directory, {"velocity"});
    for (int k = 0; k < 3; ++k) writer.write(particles, 0.1 * k, k);
  }
  // The run restarts from the checkpoint taken after output 1: output 2 is written again.
  ParticleWriter writer(MPI_COMM_WORLD, directory, {"velocity"}, 2);
  writer.write(particles, 0.2, 2);
  writer.write(particles, 0.3, 3);
  if (rank() == 0) {
    const std::vector<ParticleFileInfo> series = XdmfSeries::scan(directory, 100);
    ASSERT_EQ(series.size(), 4u);
    for (int k = 0; k < 4; ++k) EXPECT_EQ(series[k].index, k);
    EXPECT_EQ(series[1].time, 0.1);
    EXPECT_EQ(series[3].time, 0.3);
  }
  EXPECT_EQ(run_check(directory + "/particles_000003.h5 " + std::to_string(all_ids().size()) + " --xdmf " +
                      directory + "/particles.xdmf --grids 4"),
            0);
}

TEST(ParticleWriter, AMissingDirectoryThrowsOnEveryRankNamingThePath) {
  const std::string directory = fresh_directory("missing") + "/does/not/exist";
  ParticleWriter writer(MPI_COMM_WORLD, directory, {"velocity"});
  try {
    writer.write(test_particles(3, ids_on(rank())), 0.0, 0);
    ADD_FAILURE() << "writing into " << directory << " did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(directory), std::string::npos) << e.what();
  }
  // The ranks are still in step: a collective call completes.
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(ParticleWriter, AFieldMissingOnOneRankThrowsOnEveryRank) {
  const std::string directory = fresh_directory("missing_field");
  ParticleSet particles = test_particles(3, ids_on(rank()));
  if (rank() == ranks() - 1) particles = ParticleSet(3);  // the last rank lacks velocity
  ParticleWriter writer(MPI_COMM_WORLD, directory, {"velocity"});
  try {
    writer.write(particles, 0.0, 0);
    ADD_FAILURE() << "a missing field did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("velocity"), std::string::npos) << e.what();
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// The test mesh: rank r's particles start at row first_row(r) of the file. A rank with n >= 4
// particles lists the n - 3 tets of consecutive rows over them, and every rank r > 0 with particles
// one tet reaching into rank 0's rows; the tet field "level" is a function of the corners.
std::uint64_t first_row(int r) {
  std::uint64_t row = 0;
  for (int q = 0; q < r; ++q) row += count_on(q);
  return row;
}
std::vector<std::int64_t> tets_on(int r) {
  const auto o = static_cast<std::int64_t>(first_row(r)), n = static_cast<std::int64_t>(count_on(r));
  std::vector<std::int64_t> tets;
  for (std::int64_t i = 0; i + 3 < n; ++i)
    for (std::int64_t k = 0; k < 4; ++k) tets.push_back(o + i + k);
  if (r > 0 && n > 0) tets.insert(tets.end(), {0, 1, 2, o});
  return tets;
}
std::int32_t level_of(const std::int64_t* corners) {
  return static_cast<std::int32_t>((corners[0] + 2 * corners[1] + 3 * corners[3]) % 7);
}
FileMesh mesh_on(int r) {
  FileMesh mesh;
  mesh.tets = tets_on(r);
  TetField level{"level", {}};
  for (std::size_t t = 0; t < mesh.tets.size() / 4; ++t) level.values.push_back(level_of(&mesh.tets[4 * t]));
  mesh.tet_fields.push_back(level);
  return mesh;
}

// The whole of a dataset, read by one process.
template <class T>
std::vector<T> read_all(const Hdf5File& file, const std::string& name, hid_t memory_type, std::size_t size) {
  std::vector<T> values(size);
  Hdf5Id dataset = file.open_dataset(name);
  if (size > 0)
    file.check_status(H5Dread(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
                      name);
  return values;
}

TEST(ParticleWriter, AMeshIsWrittenAsRowsOfTheParticlesRankAfterRank) {
  const std::string directory = fresh_directory("mesh");
  ParticleWriter writer(MPI_COMM_WORLD, directory, {"velocity"});
  const FileMesh mesh = mesh_on(rank());
  const ParticleFileInfo first = writer.write(test_particles(3, ids_on(rank())), 0.0, 0, &mesh);
  writer.write(test_particles(3, ids_on(rank())), 0.1, 1);  // an output without a mesh

  std::vector<std::int64_t> expected;
  for (int r = 0; r < ranks(); ++r) {
    const std::vector<std::int64_t> tets = tets_on(r);
    expected.insert(expected.end(), tets.begin(), tets.end());
  }
  const std::size_t tets = expected.size() / 4;
  EXPECT_TRUE(first.has_mesh);
  EXPECT_EQ(first.tets, tets);
  if (rank() == 0) {
    const ParticleFileInfo info = ParticleReader::describe(directory + "/particles_000000.h5");
    EXPECT_TRUE(info.has_mesh);
    EXPECT_EQ(info.tets, tets);
    ASSERT_EQ(info.tet_fields.size(), 1u);
    EXPECT_EQ(info.tet_fields[0].name, "level");
    EXPECT_EQ(info.tet_fields[0].type, FieldType::Int32);
    EXPECT_FALSE(ParticleReader::describe(directory + "/particles_000001.h5").has_mesh);

    Hdf5File file = Hdf5File::open_read_serial(directory + "/particles_000000.h5");
    EXPECT_EQ(read_all<std::int64_t>(file, "/mesh/tets", H5T_NATIVE_INT64, 4 * tets), expected);
    const std::vector<std::int32_t> level =
        read_all<std::int32_t>(file, "/mesh/fields/level", H5T_NATIVE_INT32, tets);
    for (std::size_t t = 0; t < tets; ++t) EXPECT_EQ(level[t], level_of(&expected[4 * t])) << "tet " << t;
    file.close();

    // mesh.xdmf: the output with a mesh only, its tets over the particle file's geometry.
    const XdmfSeries series(directory, XdmfSeries::scan(directory, 100));
    const std::string xml = series.mesh_xml();
    EXPECT_NE(xml.find("<Topology TopologyType=\"Tetrahedron\" NumberOfElements=\"" + std::to_string(tets) +
                       "\" NodesPerElement=\"4\">"),
              std::string::npos)
        << xml;
    EXPECT_NE(xml.find("particles_000000.h5:/mesh/fields/level"), std::string::npos) << xml;
    EXPECT_EQ(xml.find("particles_000001.h5"), std::string::npos) << xml;
    std::ifstream on_disk(directory + "/mesh.xdmf");
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(on_disk), {}), xml);
  }
}

TEST(ParticleWriter, ATetCornerOutsideTheFileThrowsOnEveryRank) {
  const std::string directory = fresh_directory("mesh_outside");
  FileMesh mesh = mesh_on(rank());
  if (rank() == ranks() - 1)
    mesh.tets.insert(mesh.tets.end(), {0, 1, 2, static_cast<std::int64_t>(all_ids().size())});
  if (rank() == ranks() - 1) mesh.tet_fields[0].values.push_back(0);
  ParticleWriter writer(MPI_COMM_WORLD, directory, {"velocity"});
  try {
    writer.write(test_particles(3, ids_on(rank())), 0.0, 0, &mesh);
    ADD_FAILURE() << "a tet corner outside the file did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tet corner " + std::to_string(all_ids().size())), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(directory + "/particles_000000.h5"));
  MPI_Barrier(MPI_COMM_WORLD);
}

// The labels reach the file: the method, each field's unit (none for a field the labels do not
// know), the material names on /particles/material; describe() and h5py read them back.
TEST(ParticleWriter, LabelsNameTheMethodTheUnitsAndTheMaterials) {
  const std::string directory = fresh_directory("labels");
  ParticleLabels labels;
  labels.method = "mpm";
  labels.material_names = {"ball", "jelly", "soft jelly"};
  labels.units = {{"position", "m"}, {"velocity", "m/s"}, {"material", "1"}};
  ParticleWriter writer(MPI_COMM_WORLD, directory, {"velocity", "material"}, 0, {}, labels);
  writer.write(test_particles(3, ids_on(rank())), 0.5, 5);
  const std::string path = directory + "/particles_000000.h5";
  if (rank() == 0) {
    const ParticleFileInfo info = ParticleReader::describe(path);
    EXPECT_EQ(info.method, "mpm");
    EXPECT_EQ(info.material_names, labels.material_names);
    std::map<std::string, std::string> units;
    for (const ParticleFileField& field : info.fields) units[field.name] = field.unit;
    EXPECT_EQ(units, (std::map<std::string, std::string>{
                         {"id", ""}, {"position", "m"}, {"velocity", "m/s"}, {"material", "1"}}));
  }
  EXPECT_EQ(run_check(path + " " + std::to_string(all_ids().size()) + " --labels"), 0);
}

// Many particles on every rank but rank 1, so that the data outweighs HDF5's own structures.
std::vector<ParticleId> many_ids_on(int r) {
  std::vector<ParticleId> ids;
  for (std::size_t i = 0; r != 1 && i < 3000 + 500 * static_cast<std::size_t>(r); ++i)
    ids.push_back(100000 * (r + 1) + 7 * i);
  return ids;
}

std::uint64_t file_bytes(const std::string& path) {
  std::uint64_t bytes = rank() == 0 ? fs::file_size(path) : 0;
  MPI_Bcast(&bytes, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  return bytes;
}

// Writes the many particles, then none, into a fresh directory with storage; returns the path of
// the first file.
std::string write_with(const std::string& name, const ParticleStorage& storage) {
  const std::string directory = fresh_directory(name);
  ParticleWriter writer(MPI_COMM_WORLD, directory, {"velocity", "material"}, 0, storage);
  writer.write(test_particles(3, many_ids_on(rank())), 0.25, 1);
  writer.write(test_particles(3, {}), 0.5, 2);  // no particles anywhere: no chunks
  return directory + "/particles_000000.h5";
}

std::size_t many_total() {
  std::size_t total = 0;
  for (int r = 0; r < ranks(); ++r) total += many_ids_on(r).size();
  return total;
}

struct StorageCase {
  const char* name;
  ParticleStorage storage;
};

class ParticleStorageTest : public ::testing::TestWithParam<StorageCase> {};

// float32 outputs hold each value rounded to float, declared Precision 4 in the XDMF; compressed
// outputs read back bit for bit and are smaller; single precision halves the floating fields.
TEST_P(ParticleStorageTest, ReadsBackAsWrittenAndTakesLessSpace) {
  const StorageCase& c = GetParam();
  const std::uint64_t plain = file_bytes(write_with(std::string(c.name) + "_plain", {}));
  const std::string path = write_with(c.name, c.storage);
  const std::uint64_t bytes = file_bytes(path);
  const ParticleSet back = ParticleReader::read(MPI_COMM_WORLD, path);
  const bool single = c.storage.single_precision;
  const auto stored = [&](Real value) { return single ? Real(static_cast<float>(value)) : value; };
  for (std::size_t p = 0; p < back.size(); ++p) {
    const ParticleId id = back.ids()[p];
    for (int a = 0; a < 3; ++a) {
      EXPECT_EQ(back.positions()[3 * p + a], stored(position_of(id, a))) << "id " << id;
      EXPECT_EQ(back.real("velocity")[3 * p + a], stored(velocity_of(id, a))) << "id " << id;
    }
    EXPECT_EQ(back.int32("material")[p], material_of(id)) << "id " << id;
  }
  std::vector<ParticleId> expected;
  for (int r = 0; r < ranks(); ++r)
    for (ParticleId id : many_ids_on(r)) expected.push_back(id);
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(gather_ids(back), expected);
  const double floating_bytes = 2 * 3 * 8.0 * many_total();  // position and velocity as double
  const bool compressed = c.storage.compression != Compression::None;
  if (single && !compressed) {
    EXPECT_NEAR(double(plain - bytes), floating_bytes / 2, 4096);
  }
  if (compressed) {
    EXPECT_LT(bytes, 0.8 * plain) << "compressed " << bytes << " of " << plain;
  }
  EXPECT_EQ(run_check(path + " " + std::to_string(many_total()) + " --xdmf " +
                      fs::path(path).parent_path().string() + "/particles.xdmf --grids 2" +
                      (single ? " --single" : "")),
            0);
}

INSTANTIATE_TEST_SUITE_P(Storage, ParticleStorageTest,
                         ::testing::Values(StorageCase{"single", {true, Compression::None}},
                                           StorageCase{"deflate", {false, Compression::Deflate}},
                                           StorageCase{"single_deflate", {true, Compression::Deflate, 6}}),
                         [](const auto& info) { return std::string(info.param.name); });

// String attributes (scene texts in checkpoints): multi-line UTF-8, and the empty string, round
// trip through a collectively written file and a serial reader.
TEST(Hdf5File, StringAttributesRoundTrip) {
  const std::string path = fresh_directory("strings") + "/strings.h5";
  const std::string scene = "nendo: 1\nmethod: mpm   # 粘土\nmaterials:\n  jelly: {E: 1.0e5}\n";
  {
    Hdf5File file = Hdf5File::create(path, MPI_COMM_WORLD);
    file.write_attribute(file.id(), "scene", scene);
    file.write_attribute(file.id(), "empty", "");
    file.close();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  Hdf5File file = Hdf5File::open_read_serial(path);
  EXPECT_EQ(file.read_string_attribute(file.id(), "scene"), scene);
  EXPECT_EQ(file.read_string_attribute(file.id(), "empty"), "");
  try {  // a read-only file: an error naming the file, not a crash
    file.write_attribute(file.id(), "x", 1.0);
    FAIL() << "writing to a read-only file must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("strings.h5"), std::string::npos) << e.what();
  }
}

TEST(DiagnosticsCsv, WritesAHeaderAndFullPrecisionRowsThatCsvReads) {
  const std::string directory = fresh_directory("diagnostics");
  const std::vector<std::string> extra = {"newton_iterations", "max_velocity"};
  auto row = [&](int k) {
    DiagnosticsRow r;
    r.step = 10 * k;
    r.time = k / 3.0;
    r.dt = 1e-3 / 7.0;
    r.particles = 100 + k;
    r.kinetic_energy = 0.1 * k;
    r.elastic_energy = 1.0 / (k + 1);
    r.momentum = {1.0, -static_cast<double>(k) / 9.0, 0.0};
    r.mass = 2.5;
    r.extra = {k + 0 / 10.0, k + 1 / 10.0};
    return r;
  };
  {
    DiagnosticsCsv csv(MPI_COMM_WORLD, directory, extra);
    EXPECT_EQ(csv.header(),
              "step,time,dt,particles,kinetic_energy,elastic_energy,momentum_x,momentum_y,momentum_z,mass,"
              "newton_iterations,max_velocity");
    EXPECT_EQ(csv.format(row(1)).substr(0, 28), "10,0.33333333333333331,0.000");
    for (int k = 0; k < 4; ++k) csv.append(row(k));
    DiagnosticsRow wrong = row(0);
    wrong.extra.pop_back();
    EXPECT_THROW(csv.append(wrong), Error);
  }
  EXPECT_EQ(
      run_check("--csv " + directory + "/diagnostics.csv --rows 4 --extra newton_iterations max_velocity"),
      0);

  // A restart from step 20 keeps rows 0..2 and continues.
  {
    DiagnosticsCsv csv(MPI_COMM_WORLD, directory, extra, 20);
    for (int k = 3; k < 6; ++k) csv.append(row(k));
  }
  EXPECT_EQ(
      run_check("--csv " + directory + "/diagnostics.csv --rows 6 --extra newton_iterations max_velocity"),
      0);

  // A restart with other columns is refused on every rank.
  EXPECT_THROW(DiagnosticsCsv(MPI_COMM_WORLD, directory, {}, 20), Error);
}

}  // namespace
}  // namespace nendo
