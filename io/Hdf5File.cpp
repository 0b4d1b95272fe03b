#include "io/Hdf5File.hpp"

#include <algorithm>
#include <functional>
#include <utility>

#include "core/Error.hpp"

namespace nendo {

Hdf5Id::Hdf5Id(Hdf5Id&& other) noexcept
    : id_(std::exchange(other.id_, H5I_INVALID_HID)), close_(std::exchange(other.close_, nullptr)) {}

Hdf5Id& Hdf5Id::operator=(Hdf5Id&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = std::exchange(other.id_, H5I_INVALID_HID);
    close_ = std::exchange(other.close_, nullptr);
  }
  return *this;
}

herr_t Hdf5Id::reset() {
  herr_t status = 0;
  if (id_ >= 0 && close_) status = close_(id_);
  id_ = H5I_INVALID_HID;
  close_ = nullptr;
  return status;
}

namespace {

herr_t keep_innermost(unsigned, const H5E_error2_t* error, void* data) {
  auto* message = static_cast<std::string*>(data);
  // Walking downward, the last entry is where the failure started; its description is the
  // specific one ("unable to open file: name = ..., errno = 2, ...").
  if (error && error->desc && *error->desc) {
    *message = error->desc;
    if (error->func_name) *message += std::string(" (") + error->func_name + ")";
  }
  return 0;
}

}  // namespace

std::string hdf5_error_detail() {
  std::string message;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, keep_innermost, &message);
  H5Eclear2(H5E_DEFAULT);
  return message;
}

void silence_hdf5_errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

Hdf5File Hdf5File::create(const std::string& path, MPI_Comm comm) {
  return open_parallel_for_writing(path, comm, H5F_ACC_TRUNC);
}

Hdf5File Hdf5File::open_write(const std::string& path, MPI_Comm comm) {
  return open_parallel_for_writing(path, comm, H5F_ACC_RDWR);
}

Hdf5File Hdf5File::open_parallel_for_writing(const std::string& path, MPI_Comm comm, unsigned flags) {
  silence_hdf5_errors();
  Hdf5File file(path, true);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  file.writes_small_data_ = rank == 0;
  Hdf5Id access(file.check(H5Pcreate(H5P_FILE_ACCESS), "create file access property list"), H5Pclose);
  file.check_status(H5Pset_fapl_mpio(access.get(), comm, MPI_INFO_NULL), "set MPI-IO file access");
  // Metadata is written collectively, as one MPI-IO operation instead of one per rank.
  file.check_status(H5Pset_coll_metadata_write(access.get(), true), "set collective metadata writes");
  const hid_t id = flags == H5F_ACC_TRUNC ? H5Fcreate(path.c_str(), flags, H5P_DEFAULT, access.get())
                                          : H5Fopen(path.c_str(), flags, access.get());
  file.file_ =
      Hdf5Id(file.check(id, flags == H5F_ACC_TRUNC ? "create file" : "open file for writing"), H5Fclose);
  file.transfer_ = Hdf5Id(file.check(H5Pcreate(H5P_DATASET_XFER), "create transfer property list"), H5Pclose);
  file.check_status(H5Pset_dxpl_mpio(file.transfer_.get(), H5FD_MPIO_COLLECTIVE), "set collective transfer");
  return file;
}

Hdf5File Hdf5File::open_read(const std::string& path, MPI_Comm comm) {
  silence_hdf5_errors();
  Hdf5File file(path, true);
  Hdf5Id access(file.check(H5Pcreate(H5P_FILE_ACCESS), "create file access property list"), H5Pclose);
  file.check_status(H5Pset_fapl_mpio(access.get(), comm, MPI_INFO_NULL), "set MPI-IO file access");
  file.file_ = Hdf5Id(
      file.check(H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.get()), "open file for reading"), H5Fclose);
  ++opened_for_reading_;
  file.transfer_ = Hdf5Id(file.check(H5Pcreate(H5P_DATASET_XFER), "create transfer property list"), H5Pclose);
  file.check_status(H5Pset_dxpl_mpio(file.transfer_.get(), H5FD_MPIO_COLLECTIVE), "set collective transfer");
  return file;
}

Hdf5File Hdf5File::open_read_serial(const std::string& path) {
  silence_hdf5_errors();
  Hdf5File file(path, false);
  file.file_ = Hdf5Id(file.check(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open file for reading"),
                      H5Fclose);
  ++opened_for_reading_;
  return file;
}

Hdf5File Hdf5File::create_serial(const std::string& path) {
  silence_hdf5_errors();
  Hdf5File file(path, false);
  Hdf5Id access(file.check(H5Pcreate(H5P_FILE_ACCESS), "create file access property list"), H5Pclose);
  // No lock, like the MPI-IO files: parallel file systems without flock() must not refuse it.
  file.check_status(H5Pset_file_locking(access.get(), false, true), "switch file locking off");
  file.file_ = Hdf5Id(
      file.check(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get()), "create file"), H5Fclose);
  return file;
}

void Hdf5File::close() {
  if (!file_.valid()) return;
  const herr_t status = file_.reset();
  transfer_.reset();
  check_status(status, "close file");
}

void Hdf5File::flush() const { check_status(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), "flush file"); }

hid_t Hdf5File::check(hid_t id, const std::string& operation) const {
  if (id < 0) fail(operation);
  return id;
}

void Hdf5File::check_status(herr_t status, const std::string& operation) const {
  if (status < 0) fail(operation);
}

void Hdf5File::fail(const std::string& operation) const {
  const std::string detail = hdf5_error_detail();
  throw Error("HDF5: " + operation + " failed for " + path_ + (detail.empty() ? "" : ": " + detail));
}

Hdf5Id Hdf5File::create_group(const std::string& name) const {
  return Hdf5Id(
      check(H5Gcreate2(id(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "create group " + name),
      H5Gclose);
}

Hdf5Id Hdf5File::open_group(const std::string& name) const {
  return Hdf5Id(check(H5Gopen2(id(), name.c_str(), H5P_DEFAULT), "open group " + name), H5Gclose);
}

Hdf5Id Hdf5File::open_dataset(const std::string& name) const {
  return Hdf5Id(check(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), "open dataset " + name), H5Dclose);
}

namespace {
herr_t collect_link_name(hid_t, const char* name, const H5L_info_t*, void* names) {
  static_cast<std::vector<std::string>*>(names)->push_back(name);
  return 0;
}
}  // namespace

std::vector<std::string> Hdf5File::list(const std::string& group) const {
  Hdf5Id opened = open_group(group);
  std::vector<std::string> names;
  hsize_t position = 0;
  check_status(H5Literate(opened.get(), H5_INDEX_NAME, H5_ITER_INC, &position, collect_link_name, &names),
               "list " + group);
  return names;
}

bool Hdf5File::exists(const std::string& name) const {
  // H5Lexists needs every intermediate link to exist: check the path one component at a time.
  if (name.empty() || name == "/") return true;
  std::string prefix;
  std::size_t start = name.front() == '/' ? 1 : 0;
  if (start == 1) prefix = "/";
  while (start <= name.size()) {
    std::size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    prefix += name.substr(start, end - start);
    const htri_t found = H5Lexists(id(), prefix.c_str(), H5P_DEFAULT);
    if (found < 0) fail("look up " + prefix);
    if (found == 0) return false;
    prefix += '/';
    start = end + 1;
  }
  return true;
}

void Hdf5File::write_scalar_attribute(hid_t object, const std::string& name, hid_t file_type,
                                      hid_t memory_type, const void* value) const {
  const std::string what = "write attribute '" + name + "'";
  Hdf5Id space(check(H5Screate(H5S_SCALAR), what), H5Sclose);
  Hdf5Id attribute(
      check(H5Acreate2(object, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT), what),
      H5Aclose);
  check_status(H5Awrite(attribute.get(), memory_type, value), what);
}

void Hdf5File::write_attribute(hid_t object, const std::string& name, double value) const {
  write_scalar_attribute(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}
void Hdf5File::write_attribute(hid_t object, const std::string& name, std::int64_t value) const {
  write_scalar_attribute(object, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}
void Hdf5File::write_attribute(hid_t object, const std::string& name, std::uint64_t value) const {
  write_scalar_attribute(object, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &value);
}
void Hdf5File::write_attribute(hid_t object, const std::string& name, std::int32_t value) const {
  write_scalar_attribute(object, name, H5T_STD_I32LE, H5T_NATIVE_INT32, &value);
}

namespace {

template <class T>
struct Hdf5TypeOf;
template <>
struct Hdf5TypeOf<double> {
  static hid_t file() { return H5T_IEEE_F64LE; }
  static hid_t memory() { return H5T_NATIVE_DOUBLE; }
};
template <>
struct Hdf5TypeOf<std::int64_t> {
  static hid_t file() { return H5T_STD_I64LE; }
  static hid_t memory() { return H5T_NATIVE_INT64; }
};
template <>
struct Hdf5TypeOf<std::uint64_t> {
  static hid_t file() { return H5T_STD_U64LE; }
  static hid_t memory() { return H5T_NATIVE_UINT64; }
};

}  // namespace

void Hdf5File::write_small_dataset(const std::string& name, hid_t file_type, hid_t memory_type, hid_t space,
                                   const void* data) const {
  const std::string what = "write dataset " + name;
  Hdf5Id dataset(
      check(H5Dcreate2(id(), name.c_str(), file_type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), what),
      H5Dclose);
  if (H5Sget_simple_extent_npoints(space) == 0) return;  // no storage, nothing to write
  // One writer: the other ranks join the collective transfer with an empty selection.
  Hdf5Id selection(check(H5Scopy(space), what), H5Sclose);
  if (parallel_ && !writes_small_data_) check_status(H5Sselect_none(selection.get()), what);
  check_status(H5Dwrite(dataset.get(), memory_type, selection.get(), selection.get(), transfer(), data),
               what);
}

template <class T>
void Hdf5File::write_vector(const std::string& name, const std::vector<T>& values) const {
  const hsize_t size = values.size();
  Hdf5Id space(check(H5Screate_simple(1, &size, nullptr), "write dataset " + name), H5Sclose);
  write_small_dataset(name, Hdf5TypeOf<T>::file(), Hdf5TypeOf<T>::memory(), space.get(), values.data());
}

template <class T>
std::vector<T> Hdf5File::read_vector(const std::string& name) const {
  const std::string what = "read dataset " + name;
  Hdf5Id dataset = open_dataset(name);
  Hdf5Id space(check(H5Dget_space(dataset.get()), what), H5Sclose);
  if (H5Sget_simple_extent_ndims(space.get()) != 1)
    throw Error("HDF5: " + name + " in " + path_ + " is not 1D");
  std::vector<T> values(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space.get())));
  if (!values.empty())
    check_status(
        H5Dread(dataset.get(), Hdf5TypeOf<T>::memory(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), what);
  return values;
}

template void Hdf5File::write_vector(const std::string&, const std::vector<double>&) const;
template void Hdf5File::write_vector(const std::string&, const std::vector<std::int64_t>&) const;
template void Hdf5File::write_vector(const std::string&, const std::vector<std::uint64_t>&) const;
template std::vector<double> Hdf5File::read_vector(const std::string&) const;
template std::vector<std::int64_t> Hdf5File::read_vector(const std::string&) const;
template std::vector<std::uint64_t> Hdf5File::read_vector(const std::string&) const;

// Strings are fixed-length, null-padded UTF-8 (h5py returns bytes: .decode()); an empty string is
// stored as one '\0', since HDF5 has no zero-length fixed strings.
Hdf5Id Hdf5File::string_type(std::size_t length, const std::string& what) const {
  Hdf5Id type(check(H5Tcopy(H5T_C_S1), what), H5Tclose);
  check_status(H5Tset_size(type.get(), std::max<std::size_t>(length, 1)), what);
  check_status(H5Tset_cset(type.get(), H5T_CSET_UTF8), what);
  check_status(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), what);
  return type;
}

// The text of a stored fixed-length string whose type is `type`, read by `read` into a buffer.
std::string Hdf5File::read_string(hid_t type, const std::string& what,
                                  const std::function<herr_t(void*)>& read) const {
  if (H5Tget_class(type) != H5T_STRING || H5Tis_variable_str(type) > 0)
    throw Error("HDF5: " + what + " in " + path_ + ": not a fixed-length string");
  std::string text(H5Tget_size(type), '\0');
  check_status(read(text.data()), what);
  text.resize(text.find('\0') == std::string::npos ? text.size() : text.find('\0'));
  return text;
}

void Hdf5File::write_text(const std::string& name, const std::string& text) const {
  const std::string what = "write dataset " + name;
  Hdf5Id type = string_type(text.size(), what);
  Hdf5Id space(check(H5Screate(H5S_SCALAR), what), H5Sclose);
  write_small_dataset(name, type.get(), type.get(), space.get(), text.empty() ? "" : text.data());
}

std::string Hdf5File::read_text(const std::string& name) const {
  const std::string what = "read dataset " + name;
  Hdf5Id dataset = open_dataset(name);
  Hdf5Id type(check(H5Dget_type(dataset.get()), what), H5Tclose);
  return read_string(type.get(), what, [&](void* buffer) {
    return H5Dread(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer);
  });
}

void Hdf5File::write_attribute(hid_t object, const std::string& name, const std::string& value) const {
  const std::string what = "write attribute '" + name + "'";
  Hdf5Id type = string_type(value.size(), what);
  write_scalar_attribute(object, name, type.get(), type.get(), value.empty() ? "" : value.data());
}

namespace {
// A variable-length UTF-8 string type.
Hdf5Id variable_string_type(const Hdf5File& file, const std::string& what) {
  Hdf5Id type(file.check(H5Tcopy(H5T_C_S1), what), H5Tclose);
  file.check_status(H5Tset_size(type.get(), H5T_VARIABLE), what);
  file.check_status(H5Tset_cset(type.get(), H5T_CSET_UTF8), what);
  return type;
}
}  // namespace

void Hdf5File::write_label(hid_t object, const std::string& name, const std::string& value) const {
  const std::string what = "write attribute '" + name + "'";
  Hdf5Id type = variable_string_type(*this, what);
  const char* text = value.c_str();
  write_scalar_attribute(object, name, type.get(), type.get(), &text);
}

void Hdf5File::write_attribute(hid_t object, const std::string& name,
                               const std::vector<std::string>& values) const {
  const std::string what = "write attribute '" + name + "'";
  Hdf5Id type = variable_string_type(*this, what);
  const hsize_t count = values.size();
  Hdf5Id space(check(H5Screate_simple(1, &count, nullptr), what), H5Sclose);
  Hdf5Id attribute(
      check(H5Acreate2(object, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), what),
      H5Aclose);
  std::vector<const char*> pointers;
  for (const std::string& value : values) pointers.push_back(value.c_str());
  if (!values.empty()) check_status(H5Awrite(attribute.get(), type.get(), pointers.data()), what);
}

std::vector<std::string> Hdf5File::read_strings_attribute(hid_t object, const std::string& name) const {
  const std::string what = "read attribute '" + name + "'";
  Hdf5Id attribute(check(H5Aopen(object, name.c_str(), H5P_DEFAULT), what), H5Aclose);
  Hdf5Id space(check(H5Aget_space(attribute.get()), what), H5Sclose);
  Hdf5Id stored(check(H5Aget_type(attribute.get()), what), H5Tclose);
  if (H5Tget_class(stored.get()) != H5T_STRING || H5Tis_variable_str(stored.get()) <= 0 ||
      H5Sget_simple_extent_ndims(space.get()) != 1)
    throw Error("HDF5: attribute '" + name + "' in " + path_ + " is not a list of variable-length strings");
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  std::vector<char*> pointers(static_cast<std::size_t>(count), nullptr);
  Hdf5Id type = variable_string_type(*this, what);
  if (count > 0) check_status(H5Aread(attribute.get(), type.get(), pointers.data()), what);
  std::vector<std::string> values;
  for (char* pointer : pointers) values.emplace_back(pointer ? pointer : "");
  if (count > 0) H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, pointers.data());
  return values;
}

std::string Hdf5File::read_string_attribute(hid_t object, const std::string& name) const {
  const std::string what = "read attribute '" + name + "'";
  Hdf5Id attribute(check(H5Aopen(object, name.c_str(), H5P_DEFAULT), what), H5Aclose);
  Hdf5Id type(check(H5Aget_type(attribute.get()), what), H5Tclose);
  if (H5Tget_class(type.get()) == H5T_STRING && H5Tis_variable_str(type.get()) > 0) {
    char* value = nullptr;
    Hdf5Id memory = variable_string_type(*this, what);
    check_status(H5Aread(attribute.get(), memory.get(), &value), what);
    std::string text = value ? value : "";
    H5free_memory(value);
    return text;
  }
  return read_string(type.get(), what,
                     [&](void* buffer) { return H5Aread(attribute.get(), type.get(), buffer); });
}

void Hdf5File::read_scalar_attribute(hid_t object, const std::string& name, hid_t memory_type,
                                     void* value) const {
  const std::string what = "read attribute '" + name + "'";
  Hdf5Id attribute(check(H5Aopen(object, name.c_str(), H5P_DEFAULT), what), H5Aclose);
  Hdf5Id space(check(H5Aget_space(attribute.get()), what), H5Sclose);
  if (H5Sget_simple_extent_npoints(space.get()) != 1)
    throw Error("HDF5: attribute '" + name + "' in " + path_ + " is not a scalar");
  check_status(H5Aread(attribute.get(), memory_type, value), what);
}

double Hdf5File::read_double_attribute(hid_t object, const std::string& name) const {
  double value = 0;
  read_scalar_attribute(object, name, H5T_NATIVE_DOUBLE, &value);
  return value;
}
std::int64_t Hdf5File::read_int64_attribute(hid_t object, const std::string& name) const {
  std::int64_t value = 0;
  read_scalar_attribute(object, name, H5T_NATIVE_INT64, &value);
  return value;
}
std::uint64_t Hdf5File::read_uint64_attribute(hid_t object, const std::string& name) const {
  std::uint64_t value = 0;
  read_scalar_attribute(object, name, H5T_NATIVE_UINT64, &value);
  return value;
}

bool Hdf5File::has_attribute(hid_t object, const std::string& name) const {
  const htri_t found = H5Aexists(object, name.c_str());
  if (found < 0) fail("look up attribute '" + name + "'");
  return found > 0;
}

}  // namespace nendo
