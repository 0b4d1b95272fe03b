#include "io/ParticleFile.hpp"

#include <cctype>
#include <cstdio>

#include "core/Error.hpp"

namespace nendo {

std::string particle_file_name(int index) {
  if (index < 0 || index > 999999)
    throw Error("particle output index " + std::to_string(index) + " is outside [0, 999999]");
  char name[32];
  std::snprintf(name, sizeof name, "particles_%06d.h5", index);
  return name;
}

int particle_file_index(const std::string& file_name) {
  const std::size_t slash = file_name.find_last_of('/');
  const std::string name = slash == std::string::npos ? file_name : file_name.substr(slash + 1);
  const std::string prefix = "particles_", suffix = ".h5";
  if (name.size() != prefix.size() + 6 + suffix.size()) return -1;
  if (name.compare(0, prefix.size(), prefix) != 0) return -1;
  if (name.compare(prefix.size() + 6, suffix.size(), suffix) != 0) return -1;
  int index = 0;
  for (std::size_t i = prefix.size(); i < prefix.size() + 6; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return -1;
    index = index * 10 + (name[i] - '0');
  }
  return index;
}

}  // namespace nendo
