#include "io/PluginLibrary.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

namespace nendo {
namespace {

std::vector<std::string> candidates(const PluginPaths& paths) {
  if (const char* path = std::getenv(paths.environment)) return {path};
  std::vector<std::string> found;
  std::error_code error;
  const std::filesystem::path program = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error && *paths.relative)
    found.push_back((program.parent_path().parent_path() / paths.relative).string());
  for (const char* path : {paths.build, paths.install})
    if (*path) found.emplace_back(path);
  return found;
}

}  // namespace

PluginLibrary open_plugin(const PluginPaths& paths, int flags) {
  PluginLibrary plugin;
  for (const std::string& path : candidates(paths)) {
    if (!std::filesystem::exists(path)) continue;
    plugin.path = path;
    plugin.handle = dlopen(path.c_str(), flags);
    if (!plugin.handle) plugin.error = dlerror();
    return plugin;
  }
  return plugin;
}

}  // namespace nendo
