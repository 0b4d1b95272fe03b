#pragma once
// RAII over the HDF5 C API. Every handle is closed by its owner's destructor; every failed call
// becomes a nendo::Error naming the file, the operation and HDF5's own reason. HDF5's automatic
// printing of its error stack is switched off: the message of the Error replaces it.
//
// Parallel files use the MPI-IO driver (H5Pset_fapl_mpio) and collective transfers
// (H5FD_MPIO_COLLECTIVE), so every call that touches the file's structure (create, open, close,
// dataset and attribute creation, attribute writes, dataset writes) is collective over the
// communicator: all ranks make the same calls in the same order, ranks without data included.
#include <hdf5.h>
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace nendo {

// One owned hid_t (dataset, dataspace, group, property list, ...), closed with the matching
// H5?close. Move only.
class Hdf5Id {
 public:
  using Closer = herr_t (*)(hid_t);

  Hdf5Id() = default;
  Hdf5Id(hid_t id, Closer close) : id_(id), close_(close) {}
  Hdf5Id(const Hdf5Id&) = delete;
  Hdf5Id& operator=(const Hdf5Id&) = delete;
  Hdf5Id(Hdf5Id&& other) noexcept;
  Hdf5Id& operator=(Hdf5Id&& other) noexcept;
  ~Hdf5Id() { reset(); }

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Closes now; returns HDF5's status (negative on failure).
  herr_t reset();

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer close_ = nullptr;
};

// The innermost message of the current HDF5 error stack ("" if the stack is empty), then clears it.
std::string hdf5_error_detail();

// Switches off HDF5's automatic error printing for the calling thread's default stack. Idempotent.
void silence_hdf5_errors();

class Hdf5File {
 public:
  // Collective over comm: creates (or truncates) path with the MPI-IO driver.
  static Hdf5File create(const std::string& path, MPI_Comm comm);
  // Collective over comm: opens path read-only with the MPI-IO driver.
  static Hdf5File open_read(const std::string& path, MPI_Comm comm);
  // One process: opens path read-only with the default driver (no MPI involved).
  static Hdf5File open_read_serial(const std::string& path);
  // How many files this process has opened for reading (open_read and open_read_serial), so a
  // test can tell which ranks read a file.
  static std::uint64_t opened_for_reading() { return opened_for_reading_; }
  // One process: creates (or truncates) path with the default driver. A file created so and
  // closed can be given its disk space (io/FileSpace.hpp) before open_write, which keeps it.
  static Hdf5File create_serial(const std::string& path);
  // Collective over comm: opens the existing file path for writing with the MPI-IO driver, as
  // create() would make it, without truncating it.
  static Hdf5File open_write(const std::string& path, MPI_Comm comm);

  Hdf5File(const Hdf5File&) = delete;
  Hdf5File& operator=(const Hdf5File&) = delete;
  Hdf5File(Hdf5File&&) noexcept = default;
  Hdf5File& operator=(Hdf5File&&) noexcept = default;
  // Closes the file if close() was not called; errors are swallowed here (use close()).
  ~Hdf5File() = default;

  const std::string& path() const { return path_; }
  hid_t id() const { return file_.get(); }
  bool parallel() const { return parallel_; }
  // Dataset transfer property list: collective MPI-IO for parallel files, H5P_DEFAULT otherwise.
  hid_t transfer() const { return parallel_ ? transfer_.get() : H5P_DEFAULT; }

  // Closes the file (collective for parallel files). Every object opened in it must be closed
  // first. Throws nendo::Error on failure.
  void close();
  // Writes everything buffered to the storage; for parallel files collective, and MPI-IO syncs
  // every rank's writes (MPI_File_sync). Throws nendo::Error on failure.
  void flush() const;

  // Throw a nendo::Error "HDF5: <operation> failed for <path>: <reason>" when the id/status is
  // negative; return the id otherwise.
  hid_t check(hid_t id, const std::string& operation) const;
  void check_status(herr_t status, const std::string& operation) const;
  [[noreturn]] void fail(const std::string& operation) const;

  // Object helpers; names are absolute ("/particles") or relative to the file root.
  Hdf5Id create_group(const std::string& name) const;
  Hdf5Id open_group(const std::string& name) const;
  Hdf5Id open_dataset(const std::string& name) const;
  bool exists(const std::string& name) const;
  // The names of the links in a group, in name order.
  std::vector<std::string> list(const std::string& group) const;

  // Scalar attributes on an object of this file (the file id itself for root attributes).
  // Writing is collective for parallel files: every rank passes the same value.
  void write_attribute(hid_t object, const std::string& name, double value) const;
  void write_attribute(hid_t object, const std::string& name, std::int64_t value) const;
  void write_attribute(hid_t object, const std::string& name, std::uint64_t value) const;
  void write_attribute(hid_t object, const std::string& name, std::int32_t value) const;
  void write_attribute(hid_t object, const std::string& name, const std::string& value) const;
  void write_attribute(hid_t object, const std::string& name, const char* value) const {
    write_attribute(object, name, std::string(value));
  }
  // A scalar variable-length UTF-8 string attribute (h5py reads it as str, not bytes).
  void write_label(hid_t object, const std::string& name, const std::string& value) const;
  // A 1D attribute of variable-length UTF-8 strings (h5py reads it as a list of str).
  void write_attribute(hid_t object, const std::string& name, const std::vector<std::string>& values) const;
  double read_double_attribute(hid_t object, const std::string& name) const;
  std::int64_t read_int64_attribute(hid_t object, const std::string& name) const;
  std::uint64_t read_uint64_attribute(hid_t object, const std::string& name) const;
  // A fixed- or variable-length string attribute.
  std::string read_string_attribute(hid_t object, const std::string& name) const;
  std::vector<std::string> read_strings_attribute(hid_t object, const std::string& name) const;
  bool has_attribute(hid_t object, const std::string& name) const;

  // Small datasets that every rank knows alike (a checkpoint's splitters, method state, scene
  // text): writing is collective, every rank passes the same values and rank 0 writes them.
  // T is double, std::int64_t or std::uint64_t; text is a fixed-length UTF-8 string dataset.
  template <class T>
  void write_vector(const std::string& name, const std::vector<T>& values) const;
  template <class T>
  std::vector<T> read_vector(const std::string& name) const;
  void write_text(const std::string& name, const std::string& text) const;
  std::string read_text(const std::string& name) const;

 private:
  Hdf5File(std::string path, bool parallel) : path_(std::move(path)), parallel_(parallel) {}
  // Collective: opens or creates (flags H5F_ACC_RDWR or H5F_ACC_TRUNC) path for parallel writing.
  static Hdf5File open_parallel_for_writing(const std::string& path, MPI_Comm comm, unsigned flags);
  void write_scalar_attribute(hid_t object, const std::string& name, hid_t file_type, hid_t memory_type,
                              const void* value) const;
  void read_scalar_attribute(hid_t object, const std::string& name, hid_t memory_type, void* value) const;
  Hdf5Id string_type(std::size_t length, const std::string& what) const;
  std::string read_string(hid_t type, const std::string& what,
                          const std::function<herr_t(void*)>& read) const;
  void write_small_dataset(const std::string& name, hid_t file_type, hid_t memory_type, hid_t space,
                           const void* data) const;

  static inline std::uint64_t opened_for_reading_ = 0;

  std::string path_;
  bool parallel_ = false;
  bool writes_small_data_ = true;  // rank 0 of a parallel file, and every serial file
  Hdf5Id transfer_;                // declared before file_: destroyed after it
  Hdf5Id file_;
};

}  // namespace nendo
