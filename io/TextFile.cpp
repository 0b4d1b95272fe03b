#include "io/TextFile.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/Error.hpp"

namespace nendo {

void replace_text_file(const std::string& path, const std::string& text) {
  const std::string name = std::filesystem::path(path).filename().string();
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    if (!out) throw Error(name + ": cannot create " + temporary + ": " + std::strerror(errno));
    out << text;
    out.flush();
    if (!out) {
      const std::string why = std::strerror(errno);
      std::remove(temporary.c_str());  // no interrupted file left behind
      throw Error(name + ": writing " + temporary + " failed: " + why);
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(temporary.c_str());
    throw Error(name + ": renaming " + temporary + " to " + path + " failed: " + why);
  }
}

}  // namespace nendo
