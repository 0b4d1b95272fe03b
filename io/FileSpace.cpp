#include "io/FileSpace.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>

#include "core/Error.hpp"

namespace nendo {

std::uint64_t free_bytes(const std::string& directory) {
  struct statvfs status {};
  if (::statvfs(directory.empty() ? "." : directory.c_str(), &status) != 0)
    return std::numeric_limits<std::uint64_t>::max();  // unknown: nothing is refused for it
  return static_cast<std::uint64_t>(status.f_bavail) * status.f_frsize;
}

std::string not_enough_space(const std::string& name, std::uint64_t needed, std::uint64_t free) {
  return "not enough space for " + name + ": it needs " + std::to_string((needed + 1023) >> 10) + " KiB, " +
         std::to_string(free >> 10) + " KiB are free (No space left on device)";
}

std::string reserve_file_space(const std::string& path, std::uint64_t bytes, const std::string& name) {
  const int fd = ::open(path.c_str(), O_WRONLY);
  if (fd < 0) return "opening " + path + " to reserve its space failed: " + std::strerror(errno);
  const int status = ::fallocate(fd, 0, 0, static_cast<off_t>(bytes));
  const int error = status == 0 ? 0 : errno;
  ::close(fd);
  if (status == 0 || error == EOPNOTSUPP || error == ENOSYS) return "";
  if (error == ENOSPC || error == EDQUOT)
    return not_enough_space(name, bytes, free_bytes(std::filesystem::path(path).parent_path().string()));
  return "reserving " + std::to_string(bytes) + " bytes for " + name + " failed: " + std::strerror(error);
}

std::string create_with_space(const std::string& path, std::uint64_t bytes, const std::string& name,
                              const std::function<void()>& create) {
  try {
    create();
  } catch (const Error& e) {
    const std::uint64_t free = free_bytes(std::filesystem::path(path).parent_path().string());
    return free < bytes ? not_enough_space(name, bytes, free) : e.what();
  }
  return reserve_file_space(path, bytes, name);
}

}  // namespace nendo
