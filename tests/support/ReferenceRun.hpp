#pragma once
// The one-rank reference of a rank-count comparison, run once: by world rank 0 on MPI_COMM_SELF,
// while the other ranks wait asleep. Each rank of the world used to run its own copy, so a 4-rank
// test did the reference's work four times on CI's two cores, and a rank waiting in MPI for its
// partner spins on the core the partner needs (docs/testing.md).
//
//   ReferenceRun<FemRun> alone(MPI_COMM_WORLD, scene);
//   everyone.step(), alone.run([](FemRun& r) { r.step(); });
//   if (alone) expect_same(everyone_nodes, alone->gather());  // rank 0 compares
#include <mpi.h>
#include <unistd.h>

#include <optional>
#include <utility>

namespace nendo::testing {

// Collective: every rank returns once rank 0 has; the others sleep rather than spin meanwhile.
inline void sleeping_barrier(MPI_Comm comm) {
  MPI_Request request;
  MPI_Ibarrier(comm, &request);
  for (int done = 0; MPI_Test(&request, &done, MPI_STATUS_IGNORE), !done;) ::usleep(200);
}

// Collective: rank 0 runs `work` (a one-rank reference on MPI_COMM_SELF) while the others sleep.
template <class Work>
void on_rank0(MPI_Comm world, Work&& work) {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  if (rank == 0) work();
  sleeping_barrier(world);
}

template <class Run>
class ReferenceRun {
 public:
  template <class... Args>
  ReferenceRun(MPI_Comm world, Args&&... args) : world_(world) {
    on_rank0(world, [&] { run_.emplace(MPI_COMM_SELF, std::forward<Args>(args)...); });
  }
  // Collective over the world: rank 0 applies `work` to the reference.
  template <class Work>
  void run(Work&& work) {
    on_rank0(world_, [&] { work(*run_); });
  }
  explicit operator bool() const { return run_.has_value(); }  // this rank holds the reference
  Run* operator->() { return &*run_; }
  const Run* operator->() const { return &*run_; }
  Run& operator*() { return *run_; }

 private:
  MPI_Comm world_;
  std::optional<Run> run_;
};

}  // namespace nendo::testing
