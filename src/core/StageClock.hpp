#pragma once
// Wall time per named stage of an algorithm, summed over calls: one MPI_Wtime pair per stage and
// step, cheap enough to stay on in production runs (the end-of-run profile, the benchmarks).
// A profiler can watch the stages through a StageObserver (solvers/PetscLog makes each stage a
// PETSc log event, so that -log_view shows them); core itself knows no profiler.
#include <mpi.h>

#include <ctime>
#include <initializer_list>
#include <string>
#include <vector>

namespace nendo {

// Wall time spent in one stage on this rank, summed over the steps so far.
struct StageTime {
  std::string name;
  double seconds = 0;      // wall time
  double cpu_seconds = 0;  // CPU time of the calling thread: meaningful on a shared machine too
};

// Told when a timed stage begins and ends: two virtual calls per stage and step, none per particle.
class StageObserver {
 public:
  virtual ~StageObserver() = default;
  // A clock with this stage was made (every rank makes the same clocks: a profiler that numbers
  // stages numbers them alike on every rank).
  virtual void declare(const char* stage) = 0;
  virtual void begin(const char* stage) = 0;
  virtual void end(const char* stage) = 0;
};

// The process's observer of every StageClock; null (the default) for none.
inline StageObserver*& stage_observer() {
  static StageObserver* observer = nullptr;
  return observer;
}

class StageClock {
 public:
  StageClock(std::initializer_list<const char*> names) {
    for (const char* name : names) stages_.push_back({name, 0.0});
    if (StageObserver* observer = stage_observer())
      for (const char* name : names) observer->declare(name);
  }
  // Runs work() and adds its wall time to stage `stage`.
  template <class Work>
  void time(int stage, Work&& work) {
    const Observed observed(stages_[stage].name.c_str());
    const double start = MPI_Wtime(), cpu_start = thread_cpu_seconds();
    work();
    stages_[stage].seconds += MPI_Wtime() - start;
    stages_[stage].cpu_seconds += thread_cpu_seconds() - cpu_start;
  }
  static double thread_cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
  }
  const std::vector<StageTime>& times() const { return stages_; }

 private:
  // The observer's begin and end around a stage, also when the stage throws.
  class Observed {
   public:
    explicit Observed(const char* stage) : observer_(stage_observer()), stage_(stage) {
      if (observer_) observer_->begin(stage_);
    }
    ~Observed() {
      if (observer_) observer_->end(stage_);
    }
    Observed(const Observed&) = delete;
    Observed& operator=(const Observed&) = delete;

   private:
    StageObserver* observer_;
    const char* stage_;
  };

  std::vector<StageTime> stages_;
};

}  // namespace nendo
