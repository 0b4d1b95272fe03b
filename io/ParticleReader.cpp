#include "io/ParticleReader.hpp"

#include <algorithm>

#include "core/CollectiveError.hpp"
#include "core/Error.hpp"
#include "core/Mpi.hpp"
#include "io/Checksum.hpp"
#include "io/Hdf5File.hpp"

namespace nendo {
namespace {

hid_t memory_type(FieldType type) {
  switch (type) {
    case FieldType::Real:
      return H5T_NATIVE_DOUBLE;
    case FieldType::Int32:
      return H5T_NATIVE_INT32;
    case FieldType::UInt64:
      return H5T_NATIVE_UINT64;
  }
  return H5T_NATIVE_DOUBLE;
}

// A dataset of group ("/particles", "/mesh/fields") with `count` rows, as the group's count says.
ParticleFileField describe_dataset(const Hdf5File& file, const std::string& group, const std::string& name,
                                   std::uint64_t count) {
  const std::string dataset_name = group + "/" + name;
  Hdf5Id dataset = file.open_dataset(dataset_name);
  Hdf5Id type(file.check(H5Dget_type(dataset.get()), "read the type of " + dataset_name), H5Tclose);
  Hdf5Id space(file.check(H5Dget_space(dataset.get()), "read the shape of " + dataset_name), H5Sclose);
  ParticleFileField field;
  field.name = name;
  const H5T_class_t type_class = H5Tget_class(type.get());
  const std::size_t size = H5Tget_size(type.get());
  const H5T_sign_t sign = type_class == H5T_INTEGER ? H5Tget_sign(type.get()) : H5T_SGN_ERROR;
  if (type_class == H5T_FLOAT && (size == 8 || size == 4)) {
    field.type = FieldType::Real;
    field.single_precision = size == 4;
  } else if (type_class == H5T_INTEGER && size == 4 && sign == H5T_SGN_2)
    field.type = FieldType::Int32;
  else if (type_class == H5T_INTEGER && size == 8 && sign == H5T_SGN_NONE)
    field.type = FieldType::UInt64;
  else
    throw Error("particle file " + file.path() + ": dataset " + dataset_name +
                " is not float64, float32, int32 or uint64");
  hsize_t dims[2] = {0, 0};
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 1 || rank > 2)
    throw Error("particle file " + file.path() + ": dataset " + dataset_name + " is not 1D or 2D");
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  field.components = rank == 1 ? 1 : static_cast<int>(dims[1]);
  if (dims[0] != count)
    throw Error("particle file " + file.path() + ": dataset " + dataset_name + " has " +
                std::to_string(dims[0]) + " rows, " + group + " count is " + std::to_string(count));
  if (file.has_attribute(dataset.get(), "unit"))
    field.unit = file.read_string_attribute(dataset.get(), "unit");
  return field;
}

// /mesh, when the file has one: the tet count, (T, 4) int64 tets and the int32 (T,) tet fields.
void read_mesh_header(const Hdf5File& file, ParticleFileInfo& info) {
  if (!file.exists("/mesh")) return;
  Hdf5Id group = file.open_group("/mesh");
  info.has_mesh = true;
  info.tets = file.read_uint64_attribute(group.get(), "count");
  Hdf5Id tets = file.open_dataset("/mesh/tets");
  Hdf5Id type(file.check(H5Dget_type(tets.get()), "read the type of /mesh/tets"), H5Tclose);
  Hdf5Id space(file.check(H5Dget_space(tets.get()), "read the shape of /mesh/tets"), H5Sclose);
  hsize_t dims[2] = {0, 0};
  if (H5Tget_class(type.get()) != H5T_INTEGER || H5Tget_size(type.get()) != 8 ||
      H5Sget_simple_extent_ndims(space.get()) != 2 ||
      H5Sget_simple_extent_dims(space.get(), dims, nullptr) < 0 || dims[0] != info.tets || dims[1] != 4)
    throw Error("particle file " + file.path() + ": /mesh/tets is not int64 (T, 4) with T = /mesh count " +
                std::to_string(info.tets));
  for (const std::string& name : file.list("/mesh/fields")) {
    info.tet_fields.push_back(describe_dataset(file, "/mesh/fields", name, info.tets));
    if (info.tet_fields.back().type != FieldType::Int32 || info.tet_fields.back().components != 1)
      throw Error("particle file " + file.path() + ": /mesh/fields/" + name + " is not int32 (T,)");
  }
}

ParticleFileInfo read_header(const Hdf5File& file) {
  ParticleFileInfo info;
  info.index = particle_file_index(file.path());
  info.time = file.read_double_attribute(file.id(), "time");
  info.step = file.read_int64_attribute(file.id(), "step");
  info.dimension = static_cast<int>(file.read_int64_attribute(file.id(), "dimension"));
  if (info.dimension != 2 && info.dimension != 3)
    throw Error("particle file " + file.path() + ": dimension " + std::to_string(info.dimension) +
                " is not 2 or 3");
  Hdf5Id group = file.open_group("/particles");
  info.count = file.read_uint64_attribute(group.get(), "count");
  std::vector<std::string> names = file.list("/particles");
  for (const char* required : {"id", "position"})
    if (std::find(names.begin(), names.end(), required) == names.end())
      throw Error("particle file " + file.path() + ": no dataset /particles/" + required);
  // id and position first, as a ParticleSet holds them (in name order "id" < "position").
  std::stable_partition(names.begin(), names.end(),
                        [](const std::string& n) { return n == "id" || n == "position"; });
  for (const std::string& name : names)
    info.fields.push_back(describe_dataset(file, "/particles", name, info.count));
  if (info.fields[0].type != FieldType::UInt64 || info.fields[0].components != 1)
    throw Error("particle file " + file.path() + ": /particles/id is not uint64 (N,)");
  if (info.fields[1].type != FieldType::Real || info.fields[1].components != info.dimension)
    throw Error("particle file " + file.path() + ": /particles/position is not floating (N, dimension)");
  if (file.has_attribute(file.id(), "method")) info.method = file.read_string_attribute(file.id(), "method");
  if (std::find(names.begin(), names.end(), "material") != names.end()) {
    Hdf5Id material = file.open_dataset("/particles/material");
    if (file.has_attribute(material.get(), "names"))
      info.material_names = file.read_strings_attribute(material.get(), "names");
  }
  read_mesh_header(file, info);
  return info;
}

// This rank's rows of the file: checked against its count, with their total.
std::uint64_t selected_rows(const std::string& path, const std::vector<RowRange>& rows, std::uint64_t count) {
  std::uint64_t total = 0, end = 0;
  for (const RowRange& range : rows) {
    if (range.first < end || range.first + range.count > count || range.first + range.count < range.first)
      throw Error("particle file " + path + ": rows [" + std::to_string(range.first) + ", " +
                  std::to_string(range.first + range.count) + ") are not ascending within its " +
                  std::to_string(count) + " rows");
    end = range.first + range.count;
    total += range.count;
  }
  return total;
}

// The rows into file_space's selection (none for no rows).
void select_rows(const Hdf5File& file, hid_t file_space, const std::vector<RowRange>& rows, int components,
                 const std::string& what) {
  file.check_status(H5Sselect_none(file_space), what);
  H5S_seloper_t operation = H5S_SELECT_SET;
  for (const RowRange& range : rows) {
    if (range.count == 0) continue;
    const hsize_t start[2] = {range.first, 0};
    const hsize_t block[2] = {range.count, static_cast<hsize_t>(components)};
    file.check_status(H5Sselect_hyperslab(file_space, operation, start, nullptr, block, nullptr), what);
    operation = H5S_SELECT_OR;
  }
}

}  // namespace

ParticleFileInfo ParticleReader::describe(const std::string& path) {
  Hdf5File file = Hdf5File::open_read_serial(path);
  ParticleFileInfo info = read_header(file);
  file.close();
  return info;
}

ParticleSet ParticleReader::read(MPI_Comm comm, const std::string& path, ParticleFileInfo* info,
                                 bool verify_checksums) {
  const std::uint64_t rank = mpi::rank(comm), ranks = mpi::size(comm);
  const RowsOf slice = [&](std::uint64_t count) {
    return std::vector<RowRange>{{count * rank / ranks, count * (rank + 1) / ranks - count * rank / ranks}};
  };
  return read_selected(comm, path, slice, info, verify_checksums);
}

ParticleSet ParticleReader::read_rows(MPI_Comm comm, const std::string& path,
                                      const std::vector<RowRange>& rows, ParticleFileInfo* info,
                                      bool verify_checksums) {
  return read_selected(
      comm, path, [&](std::uint64_t) { return rows; }, info, verify_checksums);
}

ParticleSet ParticleReader::read_selected(MPI_Comm comm, const std::string& path, const RowsOf& rows_of,
                                          ParticleFileInfo* info_out, bool verify_checksums) {
  std::string error;
  ParticleFileInfo info;
  ParticleSet particles(3);
  std::vector<std::uint64_t> stored, computed;  // per field, when verifying
  try {
    Hdf5File file = Hdf5File::open_read(path, comm);
    info = read_header(file);
    const std::vector<RowRange> rows = rows_of(info.count);
    const std::uint64_t count = selected_rows(path, rows, info.count);
    particles = ParticleSet(info.dimension);
    for (const ParticleFileField& field : info.fields)
      particles.add_field(field.name, field.type, field.components);
    particles.resize(count);
    // A file without particles has datasets without storage: nothing to read (all ranks agree).
    for (const ParticleFileField& field : info.count > 0 ? info.fields : std::vector<ParticleFileField>{}) {
      const std::string name = "/particles/" + field.name;
      const std::string what = "read dataset " + name;
      Hdf5Id dataset = file.open_dataset(name);
      if (verify_checksums) {
        if (!file.has_attribute(dataset.get(), "checksum"))
          throw Error("particle file " + path + ": dataset " + name + " has no checksum");
        stored.push_back(file.read_uint64_attribute(dataset.get(), "checksum"));
      }
      Hdf5Id file_space(file.check(H5Dget_space(dataset.get()), what), H5Sclose);
      const int dims = field.components == 1 ? 1 : 2;
      select_rows(file, file_space.get(), rows, field.components, what);
      const hsize_t block[2] = {std::max<hsize_t>(count, 1), static_cast<hsize_t>(field.components)};
      Hdf5Id memory_space(file.check(H5Screate_simple(dims, block, nullptr), what), H5Sclose);
      static char no_data = 0;
      void* data = &no_data;
      if (count > 0)
        data = particles.field(field.name).raw();
      else
        file.check_status(H5Sselect_none(memory_space.get()), what);
      file.check_status(H5Dread(dataset.get(), memory_type(field.type), memory_space.get(), file_space.get(),
                                file.transfer(), data),
                        what);
      if (verify_checksums) {
        const ParticleField& read = particles.field(field.name);
        const auto* bytes = static_cast<const unsigned char*>(read.raw());
        std::uint64_t sum = 0, at = 0;
        for (const RowRange& range : rows) {
          sum += rows_checksum(bytes + at * read.bytes_per_particle(), read.bytes_per_particle(), range.first,
                               range.count);
          at += range.count;
        }
        computed.push_back(sum);
      }
    }
    file.close();
  } catch (const Error& e) {
    error = e.what();
  }
  raise_collectively(comm, error);
  if (verify_checksums && !stored.empty()) {
    MPI_Allreduce(MPI_IN_PLACE, computed.data(), static_cast<int>(computed.size()), MPI_UINT64_T, MPI_SUM,
                  comm);
    for (std::size_t f = 0; f < computed.size(); ++f)
      if (computed[f] != stored[f])
        throw CollectiveError("particle file " + path + ": the data of /particles/" + info.fields[f].name +
                              " do not match its checksum (the file is damaged)");
  }
  if (info_out) *info_out = info;
  return particles;
}

}  // namespace nendo
