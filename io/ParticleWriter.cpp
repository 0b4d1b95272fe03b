#include "io/ParticleWriter.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <optional>

#include "core/CollectiveError.hpp"
#include "core/Error.hpp"
#include "core/Mpi.hpp"
#include "io/Checksum.hpp"
#include "io/FileSpace.hpp"
#include "io/Hdf5File.hpp"
#include "io/ParticleReader.hpp"

namespace nendo {
namespace {

struct Hdf5Types {
  hid_t file;
  hid_t memory;
};

Hdf5Types hdf5_types(FieldType type) {
  switch (type) {
    case FieldType::Real:
      return {H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE};
    case FieldType::Int32:
      return {H5T_STD_I32LE, H5T_NATIVE_INT32};
    case FieldType::UInt64:
      return {H5T_STD_U64LE, H5T_NATIVE_UINT64};
  }
  throw Error("unknown particle field type");
}

// A name that can be a dataset in its group.
bool valid_dataset_name(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name != "." && name != "..";
}

// "id", "position", then the requested fields in the caller's order, without repeats.
std::vector<std::string> output_field_names(const std::vector<std::string>& requested) {
  std::vector<std::string> names = {"id", "position"};
  for (const std::string& name : requested)
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  return names;
}

// Collective: every rank must hold every listed field with the same type and component count, else
// every rank throws the same error (a clash found on one rank only must not leave the others in
// H5Dcreate).
std::vector<const ParticleField*> resolve_fields(MPI_Comm comm, const std::string& path,
                                                 const ParticleSet& particles,
                                                 const std::vector<std::string>& names) {
  std::vector<const ParticleField*> fields;
  std::string error;
  // Signature per field: 0 when missing, else 1 + 16 * components + type.
  std::vector<long long> signature;
  signature.push_back(particles.dimension());
  for (const std::string& name : names) {
    if (!valid_dataset_name(name)) {
      error = "particle output " + path + ": '" + name + "' is not a valid field name";
      signature.push_back(0);
      continue;
    }
    if (!particles.has_field(name)) {
      if (error.empty())
        error = "particle output " + path + ": no particle field '" + name + "' on rank " +
                std::to_string(mpi::rank(comm));
      signature.push_back(0);
      continue;
    }
    const ParticleField& field = particles.field(name);
    fields.push_back(&field);
    signature.push_back(1 + 16LL * field.components() + static_cast<long long>(field.type()));
  }
  raise_collectively(comm, error);

  std::vector<long long> low(signature.size()), high(signature.size());
  MPI_Allreduce(signature.data(), low.data(), static_cast<int>(signature.size()), MPI_LONG_LONG, MPI_MIN,
                comm);
  MPI_Allreduce(signature.data(), high.data(), static_cast<int>(signature.size()), MPI_LONG_LONG, MPI_MAX,
                comm);
  if (low[0] != high[0])
    throw Error("particle output " + path +
                ": the particle sets have different dimensions on different ranks");
  for (std::size_t f = 0; f < names.size(); ++f)
    if (low[f + 1] != high[f + 1])
      throw Error("particle output " + path + ": field '" + names[f] +
                  "' has a different type or component count on different ranks");
  return fields;
}

// Collective: every rank gives a mesh or none, with the same tet fields, each a value per tet,
// and every tet corner is a row of the file; else every rank throws the same error.
void check_mesh(MPI_Comm comm, const std::string& path, const FileMesh* mesh, std::uint64_t particles) {
  int given[2] = {mesh != nullptr, -(mesh != nullptr)};  // the minimum and the maximum over ranks
  MPI_Allreduce(MPI_IN_PLACE, given, 2, MPI_INT, MPI_MIN, comm);
  if (given[0] != -given[1])
    throw Error("particle output " + path + ": some ranks have a mesh to write and others do not");
  if (!mesh) return;
  const std::string where = "particle output " + path + ": rank " + std::to_string(mpi::rank(comm)) + ": ";
  std::string error, names;
  const std::size_t tets = mesh->tets.size() / 4;
  if (mesh->tets.size() % 4 != 0)
    error = where + "the mesh has " + std::to_string(mesh->tets.size()) + " corners, not four per tet";
  for (const std::int64_t row : mesh->tets)
    if (error.empty() && (row < 0 || static_cast<std::uint64_t>(row) >= particles))
      error = where + "tet corner " + std::to_string(row) + " is not one of the " +
              std::to_string(particles) + " particles";
  for (const TetField& field : mesh->tet_fields) {
    if (error.empty() && !valid_dataset_name(field.name))
      error = where + "'" + field.name + "' is not a valid tet field name";
    if (error.empty() && field.values.size() != tets)
      error = where + "tet field '" + field.name + "' has " + std::to_string(field.values.size()) +
              " values for " + std::to_string(tets) + " tets";
    names += field.name + '\n';
  }
  raise_collectively(comm, error);
  std::string root_names = names;
  mpi::broadcast(root_names, 0, comm);
  raise_collectively(comm, root_names == names ? "" : where + "the mesh has other tet fields than on rank 0");
}

// Collective: rank 0 checks that the output directory exists and is writable.
void check_directory(MPI_Comm comm, const std::string& path) {
  std::string error;
  if (mpi::rank(comm) == 0) {
    std::filesystem::path directory = std::filesystem::path(path).parent_path();
    if (directory.empty()) directory = ".";
    std::error_code code;
    if (!std::filesystem::is_directory(directory, code))
      error = "particle output " + path + ": directory '" + directory.string() + "' does not exist";
    else if (access(directory.c_str(), W_OK | X_OK) != 0)
      error = "particle output " + path + ": directory '" + directory.string() +
              "' is not writable: " + std::strerror(errno);
  }
  raise_collectively(comm, error);
}

// This rank's rows of a dataset over all ranks: count rows from offset (the exclusive scan of the
// counts), of total.
struct GlobalRows {
  std::uint64_t count = 0, offset = 0, total = 0;
};

// Collective.
GlobalRows global_rows(MPI_Comm comm, std::uint64_t count) {
  GlobalRows rows;
  rows.count = count;
  MPI_Exscan(&count, &rows.offset, 1, MPI_UINT64_T, MPI_SUM, comm);
  if (mpi::rank(comm) == 0) rows.offset = 0;  // MPI_Exscan leaves rank 0's result undefined
  MPI_Allreduce(&count, &rows.total, 1, MPI_UINT64_T, MPI_SUM, comm);
  return rows;
}

// How a dataset of `dims` (rank 1 or 2) is laid out: contiguous, or compressed in chunks of whole
// rows, about 1 MiB each, through the shuffle (bytes of a number grouped: the exponents of
// neighbouring values compress well) and deflate filters. Parallel HDF5 writes filtered chunks
// collectively only, and only without a type conversion; every dataset write here is collective,
// and single precision is converted before HDF5 sees it. (SZIP is built into Debian's HDF5 too,
// but its parallel writes corrupt int32 chunks holding negative values: HDF5 1.10.8, seen with
// h5py's MPI build alone.)
Hdf5Id creation_properties(const Hdf5File& file, const std::string& what, int rank, const hsize_t dims[2],
                           hid_t file_type, const ParticleStorage& storage) {
  Hdf5Id properties(file.check(H5Pcreate(H5P_DATASET_CREATE), what), H5Pclose);
  if (storage.compression == Compression::None || dims[0] == 0) return properties;  // nothing to chunk
  const hsize_t row_bytes = H5Tget_size(file_type) * (rank == 2 ? dims[1] : 1);
  const hsize_t chunk[2] = {std::clamp<hsize_t>((hsize_t(1) << 20) / row_bytes, 1, dims[0]), dims[1]};
  file.check_status(H5Pset_chunk(properties.get(), rank, chunk), what);
  file.check_status(H5Pset_shuffle(properties.get()), what);
  file.check_status(H5Pset_deflate(properties.get(), static_cast<unsigned>(storage.deflate_level)), what);
  file.check_status(H5Pset_fill_time(properties.get(), H5D_FILL_TIME_NEVER), what);  // every row is written
  return properties;
}

// Collective: one (total,) or (total, components) dataset; this rank's count rows at offset.
Hdf5Id write_dataset(const Hdf5File& file, const std::string& name, Hdf5Types types, int components,
                     std::uint64_t count, std::uint64_t offset, std::uint64_t total, const void* data,
                     const ParticleStorage& storage = {}) {
  const std::string what = "write dataset " + name;
  const int rank = components == 1 ? 1 : 2;
  const hsize_t dims[2] = {total, static_cast<hsize_t>(components)};
  Hdf5Id file_space(file.check(H5Screate_simple(rank, dims, nullptr), what), H5Sclose);
  Hdf5Id properties = creation_properties(file, what, rank, dims, types.file, storage);
  Hdf5Id dataset(file.check(H5Dcreate2(file.id(), name.c_str(), types.file, file_space.get(), H5P_DEFAULT,
                                       properties.get(), H5P_DEFAULT),
                            "create dataset " + name),
                 H5Dclose);
  Hdf5Id memory_space;
  static const char no_data = 0;  // H5Dwrite wants a buffer even for an empty selection
  if (count > 0) {
    const hsize_t start[2] = {offset, 0};
    const hsize_t block[2] = {count, static_cast<hsize_t>(components)};
    file.check_status(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start, nullptr, block, nullptr),
                      what);
    memory_space = Hdf5Id(file.check(H5Screate_simple(rank, block, nullptr), what), H5Sclose);
  } else {
    // A rank without particles still joins the collective write, selecting nothing.
    const hsize_t one[2] = {1, static_cast<hsize_t>(components)};
    file.check_status(H5Sselect_none(file_space.get()), what);
    memory_space = Hdf5Id(file.check(H5Screate_simple(rank, one, nullptr), what), H5Sclose);
    file.check_status(H5Sselect_none(memory_space.get()), what);
    data = &no_data;
  }
  // A dataset with no elements has no storage (its address is undefined): there is nothing to
  // write, and every rank knows it from total.
  if (total == 0) return dataset;
  file.check_status(
      H5Dwrite(dataset.get(), types.memory, memory_space.get(), file_space.get(), file.transfer(), data),
      what);
  return dataset;
}

std::string unit_of(const ParticleLabels& labels, const std::string& field) {
  const auto unit = labels.units.find(field);
  return unit == labels.units.end() ? "" : unit->second;
}

// Collective: the unit of a dataset, when the labels know its field.
void write_unit(const Hdf5File& file, hid_t dataset, const std::string& field, const ParticleLabels& labels) {
  const std::string unit = unit_of(labels, field);
  if (!unit.empty()) file.write_label(dataset, "unit", unit);
}

// What the file will hold, for the XDMF series (everything but index, time and step).
ParticleFileInfo file_info(int dimension, const std::vector<const ParticleField*>& fields,
                           std::uint64_t count, const ParticleFileOptions& options, std::uint64_t tets) {
  ParticleFileInfo info;
  info.dimension = dimension;
  info.count = count;
  info.method = options.labels.method;
  for (const ParticleField* field : fields) {
    const bool single = options.storage.single_precision && field->type() == FieldType::Real;
    info.fields.push_back(
        {field->name(), field->type(), field->components(), single, unit_of(options.labels, field->name())});
    if (field->name() == "material") info.material_names = options.labels.material_names;
  }
  if (options.mesh) {
    info.has_mesh = true;
    info.tets = tets;
    for (const TetField& field : options.mesh->tet_fields)
      info.tet_fields.push_back(
          {field.name, FieldType::Int32, 1, false, unit_of(options.labels, field.name)});
  }
  return info;
}

// The bytes a dataset takes in the file (compressed, when it is).
std::uint64_t stored_bytes(hid_t dataset) { return H5Dget_storage_size(dataset); }

// Collective: /mesh, this rank's tets and tet field values at its rows of the global datasets.
// Returns the bytes its datasets take in the file.
std::uint64_t write_mesh(const Hdf5File& file, const FileMesh& mesh, const GlobalRows& tets,
                         const ParticleFileOptions& options) {
  const ParticleStorage& storage = options.storage;
  Hdf5Id group = file.create_group("/mesh");
  file.write_attribute(group.get(), "count", tets.total);
  std::uint64_t bytes =
      stored_bytes(write_dataset(file, "/mesh/tets", {H5T_STD_I64LE, H5T_NATIVE_INT64}, 4, tets.count,
                                 tets.offset, tets.total, mesh.tets.data(), storage)
                       .get());
  Hdf5Id fields = file.create_group("/mesh/fields");
  for (const TetField& field : mesh.tet_fields) {
    Hdf5Id dataset = write_dataset(file, "/mesh/fields/" + field.name, hdf5_types(FieldType::Int32), 1,
                                   tets.count, tets.offset, tets.total, field.values.data(), storage);
    write_unit(file, dataset.get(), field.name, options.labels);
    bytes += stored_bytes(dataset.get());
  }
  return bytes;
}

// Collective: one field's dataset with its unit, the material names, and the checksum when given.
// Returns the bytes it takes in the file.
std::uint64_t write_field(const Hdf5File& file, const ParticleField& field, const GlobalRows& rows,
                          const ParticleFileOptions& options, const std::uint64_t* checksum) {
  const ParticleStorage& storage = options.storage;
  Hdf5Types types = hdf5_types(field.type());
  const void* data = field.raw();
  std::vector<float> single;  // converted here: HDF5 writes filtered chunks only without a conversion
  if (storage.single_precision && field.type() == FieldType::Real) {
    single.assign(field.data<Real>(), field.data<Real>() + rows.count * field.components());
    types = {H5T_IEEE_F32LE, H5T_NATIVE_FLOAT};
    data = single.data();
  }
  Hdf5Id dataset = write_dataset(file, "/particles/" + field.name(), types, field.components(), rows.count,
                                 rows.offset, rows.total, data, storage);
  write_unit(file, dataset.get(), field.name(), options.labels);
  if (field.name() == "material" && !options.labels.material_names.empty())
    file.write_attribute(dataset.get(), "names", options.labels.material_names);
  if (checksum) file.write_attribute(dataset.get(), "checksum", *checksum);
  return stored_bytes(dataset.get());
}

// Collective: the checksum of a field over all ranks (each rank adds its rows at their global rows).
std::uint64_t global_checksum(MPI_Comm comm, const ParticleField& field, std::uint64_t offset,
                              std::uint64_t count) {
  std::uint64_t local = rows_checksum(field.raw(), field.bytes_per_particle(), offset, count), sum = 0;
  MPI_Allreduce(&local, &sum, 1, MPI_UINT64_T, MPI_SUM, comm);
  return sum;
}

// An upper bound of the bytes the file takes: its data as stored uncompressed in double precision
// (compression and float32 only shrink it), 1/64 of that for chunk indexes and deflate's worst case,
// room for each group's and dataset's header, attributes and the heap of its strings, and what
// `finish` adds.
std::uint64_t file_bytes_bound(const std::vector<const ParticleField*>& fields, std::uint64_t total,
                               std::uint64_t tets, const ParticleFileOptions& options) {
  std::uint64_t data = 0, objects = 16;  // 64 KiB: the superblock, the root group, /particles, string heaps
  for (const ParticleField* field : fields) {
    data += total * field->bytes_per_particle();
    ++objects;
  }
  if (options.polyvertex) {
    data += total * sizeof(std::int64_t);
    objects += 2;
  }
  if (options.mesh) {
    data += tets * 4 * sizeof(std::int64_t) + tets * sizeof(std::int32_t) * options.mesh->tet_fields.size();
    objects += 3 + options.mesh->tet_fields.size();
  }
  return data + data / 64 + objects * kHdf5ObjectBytes + options.finish_bytes;
}

// Collective: rank 0 refuses to start a file that cannot fit, before anything is written.
void check_space(MPI_Comm comm, const std::string& path, std::uint64_t needed) {
  std::string error;
  if (mpi::rank(comm) == 0) {
    const std::uint64_t free = free_bytes(std::filesystem::path(path).parent_path().string());
    if (free < needed) error = not_enough_space(path, needed, free);
  }
  raise_collectively(comm, error);
}

// Open MPI's OMPIO can lose a failed write (ENOSPC) on some ranks without reporting it, leaving
// holes in the file (seen on tmpfs with 3 and 4 ranks). Within the reserved space no write can
// fail so; a file larger than its reservation (file_bytes_bound fell short) could have met the full
// disk beyond it. Collective: whether the file system holds fewer bytes of the file than were
// written into it, or the file outgrew its reservation (rank 0 looks, every rank learns).
bool may_have_lost_writes(MPI_Comm comm, const std::string& path, std::uint64_t data_bytes,
                          std::uint64_t reserved) {
  int suspect = 0;
  struct stat status {};
  if (mpi::rank(comm) == 0)
    suspect = ::stat(path.c_str(), &status) != 0 ||
              static_cast<std::uint64_t>(status.st_blocks) * 512 < data_bytes ||
              static_cast<std::uint64_t>(status.st_size) > reserved;
  MPI_Bcast(&suspect, 1, MPI_INT, 0, comm);
  return suspect != 0;
}

// Data reaches the disk: the file's contents before its new name, the name before we return.
std::string sync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) return "opening " + path + " to sync it failed: " + std::strerror(errno);
  const int status = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  return status == 0 ? "" : "syncing " + path + " failed: " + std::strerror(error);
}

}  // namespace

ParticleWriter::ParticleWriter(MPI_Comm comm, std::string directory, std::vector<std::string> fields,
                               int first_index, ParticleStorage storage, ParticleLabels labels)
    : comm_(comm),
      directory_(std::move(directory)),
      fields_(std::move(fields)),
      next_index_(first_index),
      storage_(storage),
      labels_(std::move(labels)) {
  particle_file_name(first_index);  // range check, the same on every rank
  std::string error;
  if (mpi::rank(comm_) == 0) {
    try {
      series_.emplace(directory_, first_index > 0 ? XdmfSeries::scan(directory_, first_index)
                                                  : std::vector<ParticleFileInfo>{});
    } catch (const Error& e) {
      error = e.what();
    }
  }
  raise_collectively(comm_, error);
}

ParticleFileInfo ParticleWriter::write(const ParticleSet& particles, double time, std::int64_t step,
                                       const FileMesh* mesh) {
  const std::string path = (std::filesystem::path(directory_) / particle_file_name(next_index_)).string();
  ParticleFileOptions options;
  options.mesh = mesh;
  options.storage = storage_;
  options.labels = labels_;
  ParticleFileInfo info = write_file(comm_, path, particles, fields_, time, step, next_index_, options);
  ++next_index_;
  std::string error;
  if (series_) {
    try {
      series_->add(info);
    } catch (const Error& e) {
      error = e.what();
    }
  }
  raise_collectively(comm_, error);
  return info;
}

ParticleFileInfo ParticleWriter::write_file(MPI_Comm comm, const std::string& path,
                                            const ParticleSet& particles,
                                            const std::vector<std::string>& field_names, double time,
                                            std::int64_t step, int index,
                                            const ParticleFileOptions& options) {
  const std::vector<std::string> names = output_field_names(field_names);
  const std::vector<const ParticleField*> fields = resolve_fields(comm, path, particles, names);
  check_directory(comm, path);

  const GlobalRows rows = global_rows(comm, particles.size());
  const std::uint64_t count = rows.count, offset = rows.offset, total = rows.total;
  check_mesh(comm, path, options.mesh, total);
  const GlobalRows tets = global_rows(comm, options.mesh ? options.mesh->tets.size() / 4 : 0);

  ParticleFileInfo info = file_info(particles.dimension(), fields, total, options, tets.total);
  info.index = index;
  info.time = time;
  info.step = step;

  const std::string temporary = path + ".tmp";
  const bool root = mpi::rank(comm) == 0;
  const std::uint64_t reserved = file_bytes_bound(fields, total, tets.total, options);
  check_space(comm, path, reserved);
  std::uint64_t stored = 0;  // the data bytes HDF5 put into the file
  // Checksums first: they take collective sums, which must not interleave with a failure below.
  std::vector<std::uint64_t> checksums;
  if (options.checksums)
    for (const ParticleField* field : fields)
      checksums.push_back(global_checksum(comm, *field, offset, count));
  // A collective HDF5 call can fail on some ranks only (a full disk fails the rank whose write hits
  // it). After each part the ranks agree, so that all of them leave together and close the file in
  // the same collective call instead of waiting in different ones.
  const auto agreed = [&](const std::function<void()>& part) {
    std::string local;
    try {
      part();
    } catch (const Error& e) {
      local = e.what();
    }
    raise_collectively(comm, local);
  };
  std::string error;
  try {
    std::optional<Hdf5File> file;
    agreed([&] {
      // Rank 0 takes the file's whole space before the collective writes: they cannot meet a full
      // disk (which can hang them) even when something else fills the file system after check_space.
      if (!root) return;
      const std::string failure =
          create_with_space(temporary, reserved, path, [&] { Hdf5File::create_serial(temporary).close(); });
      if (!failure.empty()) throw Error(failure);
    });
    agreed([&] {
      file.emplace(Hdf5File::open_write(temporary, comm));
      file->write_attribute(file->id(), "time", time);
      file->write_attribute(file->id(), "step", step);
      file->write_attribute(file->id(), "dimension", static_cast<std::int32_t>(particles.dimension()));
      if (!options.labels.method.empty()) file->write_label(file->id(), "method", options.labels.method);
      Hdf5Id group = file->create_group("/particles");
      file->write_attribute(group.get(), "count", total);
    });
    for (std::size_t f = 0; f < fields.size(); ++f)
      agreed([&] {
        stored += write_field(*file, *fields[f], rows, options, options.checksums ? &checksums[f] : nullptr);
      });
    if (options.polyvertex)
      agreed([&] {
        Hdf5Id xdmf = file->create_group("/xdmf");
        std::vector<std::int64_t> vertices(count);
        std::iota(vertices.begin(), vertices.end(), static_cast<std::int64_t>(offset));
        stored += stored_bytes(write_dataset(*file, "/xdmf/polyvertex", {H5T_STD_I64LE, H5T_NATIVE_INT64}, 1,
                                             count, offset, total, vertices.data(), options.storage)
                                   .get());
      });
    if (options.mesh) agreed([&] { stored += write_mesh(*file, *options.mesh, tets, options); });
    if (options.finish) agreed([&] { options.finish(*file); });
    agreed([&] { file->close(); });
    // Each rank syncs the file itself (H5Fflush's MPI_File_sync would leave the others waiting in
    // its barrier when one rank's metadata write fails first).
    if (options.sync)
      agreed([&] {
        const std::string failure = sync_path(temporary, false);
        if (!failure.empty()) throw Error(failure);
      });
    // A file with holes is read back; unless the file system compresses, that is a lost write.
    if (may_have_lost_writes(comm, temporary, stored, reserved))
      agreed([&] {
        try {
          ParticleReader::read(comm, temporary, nullptr, options.checksums);
        } catch (const Error& e) {
          throw Error(std::string("the file does not read back whole (No space left on device?): ") +
                      e.what());
        }
      });
  } catch (const Error& e) {
    error = e.what();
  }
  // Every rank has closed the file (or failed to): only now may it take its final name.
  int failed = error.empty() ? 0 : 1;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, comm);
  if (root && !failed && std::rename(temporary.c_str(), path.c_str()) != 0)
    error = "particle output: renaming " + temporary + " to " + path + " failed: " + std::strerror(errno);
  if (root && !failed && error.empty() && options.sync) {  // the new name reaches the disk too
    const std::string parent = std::filesystem::path(path).parent_path().string();
    error = sync_path(parent.empty() ? "." : parent, true);
  }
  if (root && (failed || !error.empty())) std::remove(temporary.c_str());  // no half-written file left
  raise_collectively(comm, error);
  return info;
}

}  // namespace nendo
