// The checkpoint benchmark of issue 4 (docs/performance.md records the figures): writes and reads
// a checkpoint of N particles with the MPM benchmark scene's particle layout, on the ranks of the
// job, and prints the times, the bandwidth and the bytes per particle.
//
//   mpirun -np 2 build/jobs/bench/nendo_checkpoint_bench --particles 10000000 --dir /var/tmp/ckbench
//          [--repeat 3] [--scene jobs/bench/mpm/collision.yaml]
//
// A write is the whole of write_checkpoint: checksums, the collective HDF5 write, fsync of the file,
// rename, fsync of the directory. A read is read_checkpoint_meta plus read_checkpoint_particles
// with every checksum verified. Figures are the median over repeats. jobs/bench/checkpoint/run.sh
// runs the sweep and measures the disk itself with dd for comparison.
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/Error.hpp"
#include "core/Mpi.hpp"
#include "io/Checkpoint.hpp"
#include "materials/Materials.hpp"
#include "methods/Method.hpp"
#include "scene/SceneLoader.hpp"

namespace nendo::bench {
namespace {

struct Options {
  std::uint64_t particles = 1000000;
  int repeat = 3;
  std::string directory = "ckbench";
  std::string scene = "jobs/bench/mpm/collision.yaml";
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--particles")
      o.particles = std::stoull(value());
    else if (arg == "--repeat")
      o.repeat = std::stoi(value());
    else if (arg == "--dir")
      o.directory = value();
    else if (arg == "--scene")
      o.scene = value();
    else
      throw Error("unknown option " + arg + " (usage: --particles N --repeat N --dir DIR --scene FILE)");
  }
  return o;
}

// This rank's share of N particles in the method's layout, every value different (nothing a file
// system could compress away).
ParticleSet make_share(const Method& method, std::uint64_t total, MPI_Comm comm) {
  const int rank = mpi::rank(comm), ranks = mpi::size(comm);
  const std::uint64_t begin = total * rank / ranks, end = total * (rank + 1) / ranks;
  ParticleSet ps = make_particles(method, 3);
  ps.resize(end - begin);
  for (ParticleField& field : ps.fields()) {
    auto* bytes = static_cast<unsigned char*>(field.raw());
    std::uint64_t x = 0x9e3779b97f4a7c15ULL * (begin + 1) + field.name().size();
    for (std::size_t b = 0; b < field.bytes_per_particle() * ps.size(); ++b) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      bytes[b] = static_cast<unsigned char>(x);
    }
  }
  for (std::size_t p = 0; p < ps.size(); ++p) ps.ids()[p] = begin + p;
  return ps;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

int run(int argc, char** argv) {
  const MPI_Comm comm = MPI_COMM_WORLD;
  const Options o = parse(argc, argv);
  const Scene scene = load_scene(o.scene);
  const std::unique_ptr<Method> method = make_method(scene);
  const ParticleSet particles = make_share(*method, o.particles, comm);
  CheckpointMeta meta;
  meta.ranks = mpi::size(comm);
  meta.method = scene.method;
  meta.scene_text = scene.source_text;
  meta.splitters = {0, ~0ULL};
  if (mpi::rank(comm) == 0) std::filesystem::create_directories(o.directory);
  const std::string path = o.directory + "/" + checkpoint_file_name(0);

  std::vector<double> writes, reads;
  std::uint64_t file_bytes = 0;
  for (int r = 0; r < o.repeat; ++r) {
    MPI_Barrier(comm);
    double start = MPI_Wtime();
    write_checkpoint(comm, path, particles, meta);
    MPI_Barrier(comm);
    writes.push_back(MPI_Wtime() - start);
    file_bytes = std::filesystem::file_size(path);
    start = MPI_Wtime();
    read_checkpoint_meta(comm, path);
    const ParticleSet back = read_checkpoint_particles(comm, path);
    MPI_Barrier(comm);
    reads.push_back(MPI_Wtime() - start);
    if (back.size() == 0 && o.particles >= static_cast<std::uint64_t>(mpi::size(comm)))
      throw Error("read back nothing");
  }
  if (mpi::rank(comm) == 0) {
    std::filesystem::remove(path);
    const double w = median(writes), rd = median(reads), gb = static_cast<double>(file_bytes) / 1e9;
    fmt::print("checkpoint bench: {} particles on {} ranks, {:.1f} bytes/particle in the file ({:.3f} GB)\n",
               o.particles, mpi::size(comm),
               static_cast<double>(file_bytes) / static_cast<double>(o.particles), gb);
    fmt::print(
        "  write {:.3f} s ({:.3f} GB/s, {:.3e} particles/s)   read+verify {:.3f} s ({:.3f} GB/s)   "
        "median of {}\n",
        w, gb / w, static_cast<double>(o.particles) / w, rd, gb / rd, o.repeat);
    std::string each;
    for (int r = 0; r < o.repeat; ++r) each += fmt::format(" {:.3f}/{:.3f}", writes[r], reads[r]);
    fmt::print("  each repeat, write/read s:{}\n", each);
    fmt::print("  an hourly checkpoint costs {:.3f} % of the run time\n", 100 * w / 3600);
    fmt::print("csv,{},{},{},{:.4f},{:.4f},{:.4f},{:.4f}\n", o.particles, mpi::size(comm), file_bytes, w,
               gb / w, rd, gb / rd);
  }
  return 0;
}

}  // namespace
}  // namespace nendo::bench

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int code = 0;
  try {
    code = nendo::bench::run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "nendo_checkpoint_bench: {}\n", e.what());
    code = 2;
  }
  MPI_Finalize();
  return code;
}
