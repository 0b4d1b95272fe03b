#include "app/RunLog.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/Error.hpp"

namespace nendo {
namespace {

// Writes all of it; a full disk or a closed terminal must not stop the run, so failures are ignored.
void write_all(int fd, const char* data, ssize_t size) {
  while (fd >= 0 && size > 0) {
    const ssize_t written = ::write(fd, data, static_cast<std::size_t>(size));
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return;
    data += written, size -= written;
  }
}

}  // namespace

RunLog::RunLog(const std::string& path, bool append, bool quiet) {
  log_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
  if (log_ < 0) throw Error("cannot open " + path + ": " + std::strerror(errno));
  std::fflush(stdout), std::fflush(stderr);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a pipe is fully buffered by default: keep lines live
  start(out_, STDOUT_FILENO, !quiet);
  start(err_, STDERR_FILENO, true);
}

RunLog::~RunLog() {
  std::fflush(stdout), std::fflush(stderr);
  stop(out_);
  stop(err_);
  ::close(log_);
}

void RunLog::note(const std::string& line) const {
  std::fflush(stdout), std::fflush(stderr);
  write_all(log_, line.data(), static_cast<ssize_t>(line.size()));
}

void RunLog::start(Copy& copy, int stream, bool to_terminal) {
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) return;  // no copy, but the run goes on
  copy.stream = stream;
  copy.terminal = ::dup(stream);
  ::dup2(ends[1], stream);
  ::close(ends[1]);
  const int terminal = to_terminal ? copy.terminal : -1, log = log_, from = ends[0];
  copy.reader = std::thread([from, terminal, log] {
    char buffer[4096];
    for (;;) {
      const ssize_t n = ::read(from, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      write_all(terminal, buffer, n);
      write_all(log, buffer, n);
    }
    ::close(from);
  });
}

void RunLog::stop(Copy& copy) {
  if (copy.stream < 0) return;
  ::dup2(copy.terminal, copy.stream);  // closes the pipe's last write end: the reader sees its end
  copy.reader.join();
  ::close(copy.terminal);
}

}  // namespace nendo
