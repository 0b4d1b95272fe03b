#pragma once
// A plugin of nendo's (a shared module loaded with dlopen the first time a run needs it, so that
// the others do not pay for its libraries at start-up): looked for at $<environment>, else beside
// an installed program (PREFIX/bin/nendo -> PREFIX/<relative>), else where the build put it, else
// where `cmake --install` was configured to put it. Loaded once per process, never unloaded.
#include <string>

namespace nendo {

struct PluginPaths {
  const char* environment;  // the variable that overrides the search
  const char* relative;     // to the installation prefix; "" if none
  const char* build;        // "" if this build has none
  const char* install;      // "" if this build has none
};

struct PluginLibrary {
  void* handle = nullptr;
  std::string path;   // the file loaded or tried; "" if none of the paths exists
  std::string error;  // dlerror() of a file that does not load
};

// dlopen of the first existing path; `flags` as dlopen's.
PluginLibrary open_plugin(const PluginPaths& paths, int flags);

}  // namespace nendo
