// MPI time through the profiling interface: the time a rank waits in a collective for a slower
// rank is counted, its own work is not, and calls made inside other libraries count too.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <thread>
#include <vector>

#include "core/MpiTime.hpp"

namespace nendo {
namespace {

constexpr double kNap = 0.2;  // seconds: well above the scheduling noise of oversubscribed ranks

void nap(double seconds) { std::this_thread::sleep_for(std::chrono::duration<double>(seconds)); }

int rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int ranks() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// Rank r works r naps, then all reduce: rank r waits (P − 1 − r) naps inside MPI_Allreduce.
TEST(MpiTime, CountsTheWaitInACollectiveAndNotTheWork) {
  MPI_Barrier(MPI_COMM_WORLD);
  const mpi_time::Stopwatch watch;
  nap(kNap * rank());
  int one = 1, sum = 0;
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  const double waited = watch.seconds(), expected = kNap * (ranks() - 1 - rank());
  EXPECT_EQ(sum, ranks());
  EXPECT_GT(waited, expected - 0.01) << "rank " << rank();
  EXPECT_LT(waited, expected + 0.1) << "rank " << rank() << ": its own naps were counted";
}

// Point to point: a receive posted before the message is sent waits for it (Irecv + Wait), and the
// non-blocking post itself costs nothing measurable.
TEST(MpiTime, CountsTheWaitForAMessage) {
  if (ranks() < 2) GTEST_SKIP() << "needs a second rank to send";
  MPI_Barrier(MPI_COMM_WORLD);
  const mpi_time::Stopwatch watch;
  double value = 0;
  if (rank() == 0) {
    MPI_Request request;
    MPI_Irecv(&value, 1, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    EXPECT_EQ(value, 42.0);
    EXPECT_GT(watch.seconds(), kNap - 0.01);
  } else if (rank() == 1) {
    nap(kNap);
    value = 42;
    MPI_Send(&value, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
    EXPECT_LT(watch.seconds(), 0.1) << "the sender's nap was counted";
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// A rank alone waits for nobody: a thousand reductions cost microseconds each, not naps.
TEST(MpiTime, AloneTheCallsCostLittle) {
  const mpi_time::Stopwatch watch;
  double x = 1;
  for (int k = 0; k < 1000; ++k) MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_SELF);
  EXPECT_EQ(x, 1.0);
  EXPECT_GT(watch.seconds(), 0.0) << "MPI_Allreduce was not intercepted";
  EXPECT_LT(watch.seconds(), 0.05);
}

// What a rank sends is counted: each rank sends 3 messages of 10 doubles to the next (a ring; to
// itself on 1 rank), then an allreduce and a non-blocking barrier are 2 collective calls.
TEST(MpiTime, CountsMessagesBytesAndCollectiveCalls) {
  MPI_Barrier(MPI_COMM_WORLD);
  const mpi_time::Traffic before = mpi_time::traffic();
  std::vector<double> out(30, rank()), in(30, -1);
  std::vector<MPI_Request> requests(6);
  const int next = (rank() + 1) % ranks(), previous = (rank() + ranks() - 1) % ranks();
  for (int m = 0; m < 3; ++m) {
    MPI_Irecv(&in[10 * m], 10, MPI_DOUBLE, previous, m, MPI_COMM_WORLD, &requests[m]);
    MPI_Isend(&out[10 * m], 10, MPI_DOUBLE, next, m, MPI_COMM_WORLD, &requests[3 + m]);
  }
  MPI_Waitall(6, requests.data(), MPI_STATUSES_IGNORE);
  int one = 1, sum = 0;
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Request barrier;
  MPI_Ibarrier(MPI_COMM_WORLD, &barrier);
  MPI_Wait(&barrier, MPI_STATUS_IGNORE);
  const mpi_time::Traffic sent = mpi_time::traffic() - before;
  EXPECT_EQ(in[29], previous);
  EXPECT_EQ(sent.messages, 3u);
  EXPECT_EQ(sent.bytes, 3u * 10u * sizeof(double));
  EXPECT_EQ(sent.collectives, 2u);
}

}  // namespace
}  // namespace nendo
