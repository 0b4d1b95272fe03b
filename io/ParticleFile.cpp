#include "io/ParticleFile.hpp"

#include <cctype>
#include <filesystem>

#include "core/Error.hpp"

namespace nendo {

std::string numbered_file_name(const std::string& prefix, std::int64_t number, int digits,
                               const std::string& suffix, const std::string& what) {
  std::int64_t limit = 1;
  for (int d = 0; d < digits; ++d) limit *= 10;
  if (number < 0 || number >= limit)
    throw Error(what + " " + std::to_string(number) + " is outside [0, " + std::to_string(limit - 1) + "]");
  std::string digits_text = std::to_string(number);
  return prefix + std::string(static_cast<std::size_t>(digits) - digits_text.size(), '0') + digits_text +
         suffix;
}

std::int64_t numbered_file_number(const std::string& path, const std::string& prefix, int digits,
                                  const std::string& suffix) {
  const std::string name = std::filesystem::path(path).filename().string();
  const std::size_t width = static_cast<std::size_t>(digits);
  if (name.size() != prefix.size() + width + suffix.size()) return -1;
  if (name.compare(0, prefix.size(), prefix) != 0) return -1;
  if (name.compare(prefix.size() + width, suffix.size(), suffix) != 0) return -1;
  std::int64_t number = 0;
  for (std::size_t i = prefix.size(); i < prefix.size() + width; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return -1;
    number = number * 10 + (name[i] - '0');
  }
  return number;
}

std::string particle_file_name(int index) {
  return numbered_file_name("particles_", index, 6, ".h5", "particle output index");
}

int particle_file_index(const std::string& file_name) {
  return static_cast<int>(numbered_file_number(file_name, "particles_", 6, ".h5"));
}

}  // namespace nendo
