#include "io/Checkpoint.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <type_traits>

#include "core/CollectiveError.hpp"
#include "core/Error.hpp"
#include "core/Mpi.hpp"
#include "io/Hdf5File.hpp"
#include "io/ParticleFile.hpp"
#include "io/ParticleReader.hpp"
#include "io/ParticleWriter.hpp"

namespace nendo {
namespace {

std::string join_lines(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// An upper bound of the bytes write_meta adds to the file (ParticleFileOptions::finish_bytes).
std::uint64_t meta_bytes(const CheckpointMeta& meta) {
  std::uint64_t data = meta.scene_text.size() + join_lines(meta.overrides).size() +
                       meta.splitters.size() * sizeof(std::uint64_t) + meta.run_id.size() +
                       meta.method.size();
  std::uint64_t objects = 6;  // /meta and its attributes, scene, overrides, splitters, the method groups
  for (const auto& [name, values] : meta.method_state.reals) data += values.size() * sizeof(double);
  for (const auto& [name, values] : meta.method_state.integers) data += values.size() * sizeof(std::int64_t);
  objects += meta.method_state.reals.size() + meta.method_state.integers.size();
  data += meta.rows.total_runs * sizeof(BlockRun), ++objects;  // /meta/rows
  return data + objects * kHdf5ObjectBytes;
}

void write_meta(const Hdf5File& file, const CheckpointMeta& meta) {
  Hdf5Id group = file.create_group("/meta");
  const hid_t g = group.get();
  file.write_attribute(g, "format", static_cast<std::int32_t>(kCheckpointFormat));
  file.write_attribute(g, "step", meta.step);
  file.write_attribute(g, "time", meta.time);
  file.write_attribute(g, "dt", meta.dt);
  file.write_attribute(g, "ranks", static_cast<std::int32_t>(meta.ranks));
  file.write_attribute(g, "method", meta.method);
  file.write_attribute(g, "run_id", meta.run_id);
  file.write_attribute(g, "finished", static_cast<std::int32_t>(meta.finished));
  file.write_attribute(g, "next_id", meta.next_id);
  file.write_attribute(g, "output_index", meta.output_index);
  file.write_attribute(g, "next_output", meta.next_output);
  file.write_attribute(g, "scheduled_through", meta.scheduled_through);
  file.write_text("/meta/scene", meta.scene_text);
  file.write_text("/meta/overrides", join_lines(meta.overrides));
  file.write_vector("/meta/splitters", meta.splitters);
  Hdf5Id method = file.create_group("/meta/method");
  Hdf5Id reals = file.create_group("/meta/method/real");
  Hdf5Id integers = file.create_group("/meta/method/integer");
  for (const auto& [name, values] : meta.method_state.reals)
    file.write_vector("/meta/method/real/" + name, values);
  for (const auto& [name, values] : meta.method_state.integers)
    file.write_vector("/meta/method/integer/" + name, values);
  write_checkpoint_rows(file, meta.rows);
  file.write_attribute(g, "complete", static_cast<std::int32_t>(1));  // last: the file is whole
}

CheckpointMeta read_meta(const Hdf5File& file) {
  const std::string& path = file.path();
  if (!file.exists("/meta")) throw Error("checkpoint " + path + ": not a checkpoint (no /meta group)");
  Hdf5Id group = file.open_group("/meta");
  const hid_t g = group.get();
  if (!file.has_attribute(g, "complete"))
    throw Error("checkpoint " + path + ": incomplete (no completeness marker; the write was interrupted)");
  CheckpointMeta meta;
  meta.format = static_cast<int>(file.read_int64_attribute(g, "format"));
  if (meta.format != kCheckpointFormat)
    throw Error("checkpoint " + path + ": format " + std::to_string(meta.format) +
                ", this build reads format " + std::to_string(kCheckpointFormat));
  meta.step = file.read_int64_attribute(g, "step");
  meta.time = file.read_double_attribute(g, "time");
  meta.dt = file.read_double_attribute(g, "dt");
  meta.ranks = static_cast<int>(file.read_int64_attribute(g, "ranks"));
  meta.method = file.read_string_attribute(g, "method");
  if (file.has_attribute(g, "run_id")) meta.run_id = file.read_string_attribute(g, "run_id");
  meta.finished = file.read_int64_attribute(g, "finished") != 0;
  meta.next_id = file.read_uint64_attribute(g, "next_id");
  meta.output_index = file.read_int64_attribute(g, "output_index");
  meta.next_output = file.read_double_attribute(g, "next_output");
  meta.scheduled_through = file.read_int64_attribute(g, "scheduled_through");
  meta.scene_text = file.read_text("/meta/scene");
  meta.overrides = split_lines(file.read_text("/meta/overrides"));
  meta.splitters = file.read_vector<std::uint64_t>("/meta/splitters");
  for (const std::string& name : file.list("/meta/method/real"))
    meta.method_state.reals[name] = file.read_vector<double>("/meta/method/real/" + name);
  for (const std::string& name : file.list("/meta/method/integer"))
    meta.method_state.integers[name] = file.read_vector<std::int64_t>("/meta/method/integer/" + name);
  meta.rows = read_checkpoint_rows(file);
  return meta;
}

template <class T>
void broadcast_value(T& value, MPI_Comm comm) {
  static_assert(std::is_trivially_copyable_v<T>);
  MPI_Bcast(&value, static_cast<int>(sizeof(T)), MPI_BYTE, 0, comm);
}

template <class T>
void broadcast_record(std::map<std::string, std::vector<T>>& record, MPI_Comm comm) {
  std::uint64_t count = record.size();
  broadcast_value(count, comm);
  auto entry = record.begin();
  for (std::uint64_t i = 0; i < count; ++i) {
    std::string name = mpi::rank(comm) == 0 ? entry->first : std::string();
    mpi::broadcast(name, 0, comm);
    std::vector<T>& values = record[name];
    mpi::broadcast(values, 0, comm);
    if (mpi::rank(comm) == 0) ++entry;
  }
}

// Collective: rank 0's meta on every rank.
void broadcast(CheckpointMeta& meta, MPI_Comm comm) {
  for (auto* value : {&meta.step, &meta.output_index, &meta.scheduled_through}) broadcast_value(*value, comm);
  for (auto* value : {&meta.time, &meta.dt, &meta.next_output}) broadcast_value(*value, comm);
  for (auto* value : {&meta.format, &meta.ranks}) broadcast_value(*value, comm);
  broadcast_value(meta.finished, comm);
  broadcast_value(meta.next_id, comm);
  for (auto* text : {&meta.method, &meta.run_id, &meta.scene_text}) mpi::broadcast(*text, 0, comm);
  std::string overrides = join_lines(meta.overrides);
  mpi::broadcast(overrides, 0, comm);
  meta.overrides = split_lines(overrides);
  mpi::broadcast(meta.splitters, 0, comm);
  broadcast_record(meta.method_state.reals, comm);
  broadcast_record(meta.method_state.integers, comm);
  broadcast_header(meta.rows, 0, comm);  // the index itself stays on rank 0 (plan_restart_reads)
}

}  // namespace

std::string checkpoint_file_name(std::int64_t step) {
  return numbered_file_name("checkpoint_", step, 9, ".h5", "checkpoint step");
}

std::int64_t checkpoint_file_step(const std::string& file_name) {
  return numbered_file_number(file_name, "checkpoint_", 9, ".h5");
}

std::vector<std::string> list_checkpoints(const std::string& directory) {
  std::vector<std::pair<std::int64_t, std::string>> found;
  std::error_code code;
  for (const auto& entry : std::filesystem::directory_iterator(directory, code)) {
    const std::int64_t step = checkpoint_file_step(entry.path().string());
    if (step >= 0) found.emplace_back(step, entry.path().string());
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> paths;
  for (auto& [step, path] : found) paths.push_back(std::move(path));
  return paths;
}

void write_checkpoint(MPI_Comm comm, const std::string& path, const ParticleSet& particles,
                      const CheckpointMeta& meta) {
  std::vector<std::string> fields;
  for (const ParticleField& field : particles.fields()) fields.push_back(field.name());
  ParticleFileOptions options;
  options.polyvertex = false;
  options.checksums = true;
  options.sync = true;
  options.finish = [&](const Hdf5File& file) { write_meta(file, meta); };
  options.finish_bytes = meta_bytes(meta);
  try {
    ParticleWriter::write_file(comm, path, particles, fields, meta.time, meta.step, -1, options);
  } catch (const Error& e) {
    throw CollectiveError("checkpoint " + path + " could not be written: " + e.what());
  }
}

CheckpointMeta read_checkpoint_meta(MPI_Comm comm, const std::string& path) {
  std::string error;
  CheckpointMeta meta;
  if (mpi::rank(comm) == 0) {
    try {
      meta = read_checkpoint_meta(path);
    } catch (const Error& e) {
      error = e.what();
    }
  }
  raise_collectively(comm, error);
  broadcast(meta, comm);
  return meta;
}

CheckpointMeta read_checkpoint_meta(const std::string& path) {
  Hdf5File file = Hdf5File::open_read_serial(path);
  CheckpointMeta meta = read_meta(file);
  file.close();
  return meta;
}

ParticleSet read_checkpoint_particles(MPI_Comm comm, const std::string& path) {
  return ParticleReader::read(comm, path, nullptr, true);
}

ParticleSet read_checkpoint_particles(MPI_Comm comm, const std::string& path,
                                      const std::vector<RowRange>& rows) {
  return ParticleReader::read_rows(comm, path, rows, nullptr, true);
}

}  // namespace nendo
