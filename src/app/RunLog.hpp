#pragma once
// run.log: a copy of what this process prints (stdout and stderr) while the object lives, written
// beside the outputs. Rank 0 keeps one; the others print nothing worth keeping. With `quiet`, the
// standard output goes to the log only (warnings and errors, on stderr, still reach the terminal).
#include <string>
#include <thread>

namespace nendo {

class RunLog {
 public:
  // Throws nendo::Error if the log cannot be opened. append: a restart continues its run's log.
  RunLog(const std::string& path, bool append, bool quiet);
  ~RunLog();  // flushes, gives the terminal its descriptors back
  RunLog(const RunLog&) = delete;
  RunLog& operator=(const RunLog&) = delete;

  // Into the log only (what the terminal gets another way, e.g. the error main prints later).
  void note(const std::string& line) const;

 private:
  struct Copy {          // one of stdout, stderr
    int stream = -1;     // 1 or 2
    int terminal = -1;   // where the stream went before (dup of it)
    std::thread reader;  // pipe -> terminal and log
  };
  void start(Copy& copy, int stream, bool to_terminal);
  void stop(Copy& copy);

  int log_ = -1;
  Copy out_, err_;
};

}  // namespace nendo
