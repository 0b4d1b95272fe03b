// CatalystAdaptor: loads the Catalyst plugin (InSituBackend.hpp) the first time a run needs it
// (PluginLibrary.hpp: $NENDO_CATALYST_PLUGIN overrides where); a build without ParaView has none,
// and says how to get one.
#include <dlfcn.h>

#include "core/Error.hpp"
#include "io/PluginLibrary.hpp"
#include "io/catalyst/InSituBackend.hpp"

namespace nendo {
namespace {

struct Plugin {
  decltype(&nendo_catalyst_create) create = nullptr;
  decltype(&nendo_catalyst_paraview_version) version = nullptr;
  std::string problem;  // why there is none
};

// Loaded once per process and never unloaded: ParaView cannot be initialised twice.
Plugin load_plugin() {
  Plugin plugin;
  // RTLD_GLOBAL: the Python extension modules ParaView imports find libpython's symbols there.
  const PluginLibrary library = open_plugin({"NENDO_CATALYST_PLUGIN", NENDO_CATALYST_PLUGIN_RELATIVE,
                                             NENDO_CATALYST_PLUGIN_BUILD, NENDO_CATALYST_PLUGIN_INSTALL},
                                            RTLD_NOW | RTLD_GLOBAL);
  if (!library.handle) {
    plugin.problem =
        library.path.empty()
            ? "this nendo was built without ParaView Catalyst; install paraview-dev and python3-paraview "
              "(Debian) and rebuild with -DNENDO_WITH_CATALYST=ON"
            : "the ParaView Catalyst plugin " + library.path + " does not load: " + library.error;
    return plugin;
  }
  plugin.create = reinterpret_cast<decltype(plugin.create)>(dlsym(library.handle, "nendo_catalyst_create"));
  plugin.version =
      reinterpret_cast<decltype(plugin.version)>(dlsym(library.handle, "nendo_catalyst_paraview_version"));
  if (!plugin.create || !plugin.version) plugin.problem = library.path + " is not a nendo Catalyst plugin";
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
