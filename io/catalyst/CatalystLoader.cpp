// CatalystAdaptor: loads the Catalyst plugin (InSituBackend.hpp) the first time a run needs it.
// The plugin is looked for at $NENDO_CATALYST_PLUGIN, else beside an installed program
// (PREFIX/bin/nendo → PREFIX/lib/nendo/), else where the build put it, else where `cmake --install`
// was configured to put it; a build without ParaView has none, and says how to get one.
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "core/Error.hpp"
#include "io/catalyst/InSituBackend.hpp"

namespace nendo {
namespace {

struct Plugin {
  decltype(&nendo_catalyst_create) create = nullptr;
  decltype(&nendo_catalyst_paraview_version) version = nullptr;
  std::string problem;  // why there is none
};

std::vector<std::string> plugin_candidates() {
  if (const char* path = std::getenv("NENDO_CATALYST_PLUGIN")) return {path};
  std::vector<std::string> paths;
  std::error_code error;
  const std::filesystem::path program = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error && *NENDO_CATALYST_PLUGIN_RELATIVE)
    paths.push_back((program.parent_path().parent_path() / NENDO_CATALYST_PLUGIN_RELATIVE).string());
  for (const char* path : {NENDO_CATALYST_PLUGIN_BUILD, NENDO_CATALYST_PLUGIN_INSTALL})
    if (*path) paths.emplace_back(path);
  return paths;
}

// Loaded once per process and never unloaded: ParaView cannot be initialised twice.
Plugin load_plugin() {
  Plugin plugin;
  plugin.problem =
      "this nendo was built without ParaView Catalyst; install paraview-dev and python3-paraview (Debian) "
      "and rebuild with -DNENDO_WITH_CATALYST=ON";
  for (const std::string& path : plugin_candidates()) {
    if (!std::filesystem::exists(path)) continue;
    // RTLD_GLOBAL: the Python extension modules ParaView imports find libpython's symbols there.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!handle) {
      plugin.problem = "the ParaView Catalyst plugin " + path + " does not load: " + dlerror();
      return plugin;
    }
    plugin.create = reinterpret_cast<decltype(plugin.create)>(dlsym(handle, "nendo_catalyst_create"));
    plugin.version =
        reinterpret_cast<decltype(plugin.version)>(dlsym(handle, "nendo_catalyst_paraview_version"));
    if (!plugin.create || !plugin.version) plugin.problem = path + " is not a nendo Catalyst plugin";
    return plugin;
  }
  return plugin;
}

const Plugin& plugin() {
  static const Plugin loaded = load_plugin();
  return loaded;
}

}  // namespace

struct CatalystAdaptor::Impl {
  std::unique_ptr<InSituBackend> backend;
};

bool CatalystAdaptor::available() { return plugin().create != nullptr; }

std::string CatalystAdaptor::paraview_version() { return available() ? plugin().version() : ""; }

CatalystAdaptor::CatalystAdaptor(MPI_Comm comm, const std::vector<std::string>& scripts,
                                 const std::string& working_directory, bool with_mesh)
    : impl_(std::make_unique<Impl>()) {
  if (!available())
    throw InputError("Catalyst script " + (scripts.empty() ? std::string("(none)") : scripts.front()) + ": " +
                     plugin().problem);
  impl_->backend.reset(plugin().create(comm, scripts, working_directory, with_mesh));
}

CatalystAdaptor::~CatalystAdaptor() = default;

InSituRequest CatalystAdaptor::request(std::int64_t step, double time) {
  return impl_->backend->request(step, time);
}

void CatalystAdaptor::execute(const InSituData& data) { impl_->backend->execute(data); }

}  // namespace nendo
