// Latency and bandwidth between ranks 0 and 1 (issue 11): the α and β of the scaling model in
// docs/scaling.md, measured on the network path a run uses (shared memory by default,
// `--mca btl tcp,self` for TCP over loopback, the interconnect on a cluster).
//
//   mpirun -np 2 build/jobs/bench/nendo_pingpong_bench [--repeat 1000]
//   mpirun -np 2 --mca btl tcp,self build/jobs/bench/nendo_pingpong_bench
//
// Prints, per message size, the one-way time (half the median round trip of `repeat` round trips)
// and the bandwidth it implies; then α (one-way time of 8 bytes) and β (bytes/s of the largest message, 2
// MiB).
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace {

double one_way_seconds(int bytes, int repeat, int rank) {
  std::vector<char> buffer(std::max(bytes, 1));
  std::vector<double> trips;
  for (int r = 0; r < repeat + 10; ++r) {  // 10 warm-up round trips
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    if (rank == 0) {
      MPI_Send(buffer.data(), bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buffer.data(), bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(buffer.data(), bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buffer.data(), bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
    if (r >= 10) trips.push_back(MPI_Wtime() - start);
  }
  std::nth_element(trips.begin(), trips.begin() + trips.size() / 2, trips.end());
  return trips[trips.size() / 2] / 2;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int repeat = 1000;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--repeat") repeat = std::stoi(argv[i + 1]);
  if (size < 2) {
    if (rank == 0) std::fprintf(stderr, "nendo_pingpong_bench: needs 2 ranks\n");
    MPI_Finalize();
    return 1;
  }
  double alpha = 0, beta = 0;
  if (rank == 0) std::printf("%12s %14s %14s\n", "bytes", "one-way us", "MB/s");
  for (int bytes = 8; bytes <= (4 << 20); bytes *= 4) {
    const double t = one_way_seconds(bytes, bytes > (1 << 20) ? std::max(repeat / 20, 10) : repeat, rank);
    if (bytes == 8) alpha = t;
    beta = bytes / t;
    if (rank == 0) std::printf("%12d %14.2f %14.1f\n", bytes, 1e6 * t, 1e-6 * bytes / t);
  }
  if (rank == 0) std::printf("alpha %.3e s, beta %.3e B/s\n", alpha, beta);
  MPI_Finalize();
  return 0;
}
