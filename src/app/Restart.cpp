#include "app/Restart.hpp"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>

#include "core/CollectiveError.hpp"
#include "core/Mpi.hpp"
#include "scene/SceneDiff.hpp"

namespace nendo {
namespace {

// Rank 0 lists the directory; every rank gets the same list.
std::vector<std::string> candidates(MPI_Comm comm, const std::string& which, const std::string& directory) {
  if (which != "latest") return {which};
  std::string joined;
  if (mpi::rank(comm) == 0)
    for (const std::string& path : list_checkpoints(directory)) joined += path + '\n';
  mpi::broadcast(joined, 0, comm);
  std::vector<std::string> paths;
  for (std::size_t start = 0, end; (end = joined.find('\n', start)) != std::string::npos; start = end + 1)
    paths.push_back(joined.substr(start, end - start));
  return paths;
}

void check_scene(const std::string& path, const CheckpointMeta& meta, const Scene& scene, bool allow_change) {
  if (meta.method != scene.method)
    throw RestartError(
        fmt::format("cannot restart from {}: it was written by method '{}', the scene runs '{}'", path,
                    meta.method, scene.method));
  const std::vector<std::string> keys =
      physics_differences(meta.scene_text, meta.overrides, scene.source_text, scene.overrides);
  if (keys.empty() || allow_change) return;
  std::string list;
  for (const std::string& key : keys) list += (list.empty() ? "" : ", ") + key;
  throw RestartError(
      fmt::format("cannot restart from {}: the scene differs from the checkpoint's in {} (only time.end, "
                  "output, checkpoint, "
                  "balance, catalyst and implicit.monitor may change; --allow-scene-change restarts anyway)",
                  path, list));
}

// The particles of this rank's key range under the partition the restarted run takes, when the
// checkpoint's row index can plan it (plan_restart_reads); else an equal slice of the rows.
ParticleSet read_share(MPI_Comm comm, const std::string& path, const Scene& scene, Resumed& resumed) {
  const CheckpointMeta& meta = resumed.checkpoint.meta;
  const std::optional<RestartReads> reads =
      plan_restart_reads(comm, meta.rows, geometry_of(scene), meta.splitters);
  std::vector<BlockRun>().swap(resumed.checkpoint.meta.rows.runs);  // rank 0's index: used up
  if (!reads) return read_checkpoint_particles(comm, path);
  resumed.partition = reads->partition;
  return read_checkpoint_particles(comm, path, reads->rows);
}

// The checkpoint's fields copied into the method's layout; a field the method needs and the file
// lacks (after a scene change) is an error.
ParticleSet in_method_layout(const std::string& path, ParticleSet read, const Method& method) {
  ParticleSet particles = make_particles(method, read.dimension());
  std::string error;
  for (const ParticleField& field : particles.fields()) {
    if (!read.has_field(field.name()))
      error = "cannot restart from " + path + ": it has no particle field '" + field.name() +
              "', which the scene needs";
    else if (read.field(field.name()).type() != field.type() ||
             read.field(field.name()).components() != field.components())
      error = "cannot restart from " + path + ": its particle field '" + field.name() +
              "' has a different type or size than the scene needs";
  }
  if (!error.empty()) throw RestartError(error);  // every rank read the same header: the same verdict
  particles.resize(read.size());
  for (ParticleField& field : particles.fields())
    if (read.size() > 0)  // an empty rank's fields have no storage
      std::memcpy(field.raw(), read.field(field.name()).raw(), field.bytes_per_particle() * read.size());
  return particles;
}

}  // namespace

Resumed load_restart(MPI_Comm comm, const std::string& which, const std::string& directory,
                     const Scene& scene, bool allow_scene_change, const Method& method) {
  const bool root = mpi::rank(comm) == 0;
  const std::vector<std::string> paths = candidates(comm, which, directory);
  if (paths.empty())
    throw RestartError("--restart latest: there is no checkpoint in '" + directory + "' (checkpoint.dir)");
  for (const std::string& path : paths) {
    Resumed resumed;
    resumed.checkpoint.path = path;
    try {
      resumed.checkpoint.meta = read_checkpoint_meta(comm, path);
      check_scene(path, resumed.checkpoint.meta, scene, allow_scene_change);
      resumed.particles = in_method_layout(path, read_share(comm, path, scene, resumed), method);
      return resumed;
    } catch (const RestartError&) {
      throw;
    } catch (const CollectiveError& e) {  // damaged: every rank is here alike
      if (which != "latest") throw RestartError(std::string("cannot restart: ") + e.what());
      if (root) {
        fmt::print(stderr, "nendo: warning: {}; renamed to {}.damaged, trying the previous checkpoint\n",
                   e.what(), path);
        std::error_code code;
        std::filesystem::rename(path, path + ".damaged", code);
      }
      MPI_Barrier(comm);
    }
  }
  throw RestartError("--restart latest: no checkpoint in '" + directory +
                     "' is usable (see the warnings above)");
}

}  // namespace nendo
