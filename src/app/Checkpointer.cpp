#include "app/Checkpointer.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "core/CollectiveError.hpp"
#include "core/Error.hpp"
#include "core/Mpi.hpp"

namespace nendo {

namespace fs = std::filesystem;

Checkpointer::Checkpointer(MPI_Comm comm, const CheckpointSettings& settings, double walltime)
    : comm_(comm), settings_(settings), walltime_(walltime) {}

bool Checkpointer::due(long step, double before, double after) const {
  if (settings_.every_steps > 0 && step % settings_.every_steps == 0) return true;
  if (settings_.every <= 0) return false;
  // The same round-off allowance as outputs: a step landing a hair short of k * every counts.
  const auto period = [&](double t) { return std::floor(t / settings_.every + 1e-9); };
  return period(after) > period(before);
}

std::string Checkpointer::write(const ParticleSet& particles, const CheckpointMeta& meta) {
  const std::string path = (fs::path(settings_.dir) / checkpoint_file_name(meta.step)).string();
  if (meta.step == last_step_) return path;
  const double start = MPI_Wtime();
  std::string error;
  if (mpi::rank(comm_) == 0) {
    std::error_code code;
    fs::create_directories(settings_.dir, code);
    if (code) error = "checkpoint directory '" + settings_.dir + "' cannot be created: " + code.message();
  }
  raise_collectively(comm_, error);
  write_checkpoint(comm_, path, particles, meta);
  last_step_ = meta.step;
  if (mpi::rank(comm_) == 0) {
    const std::vector<std::string> all = list_checkpoints(settings_.dir);
    for (std::size_t i = static_cast<std::size_t>(settings_.keep); i < all.size(); ++i) {
      std::error_code code;
      fs::remove(all[i], code);
    }
  }
  last_seconds_ = MPI_Wtime() - start;
  return path;
}

void Checkpointer::prepare(long restart_step) {
  resumed_ = restart_step >= 0;
  if (mpi::rank(comm_) != 0) return;
  std::error_code code;
  if (!fs::is_directory(settings_.dir, code)) return;
  for (const auto& entry : fs::directory_iterator(settings_.dir, code)) {
    const std::string name = entry.path().filename().string();
    const std::string base = name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0
                                 ? name.substr(0, name.size() - 4)
                                 : "";
    if (!base.empty() && checkpoint_file_step(base) >= 0) {
      fmt::print("nendo: removing {}, left by an interrupted checkpoint write\n", entry.path().string());
      fs::remove(entry.path(), code);
    }
  }
  if (restart_step < 0) return;
  for (const std::string& path : list_checkpoints(settings_.dir))
    if (checkpoint_file_step(path) > restart_step) {
      fmt::print("nendo: warning: {} is later than the restart step {}; renamed to {}.superseded\n", path,
                 restart_step, path);
      fs::rename(path, path + ".superseded", code);
    }
}

}  // namespace nendo
