// The adaptor of a build without ParaView: it exists so that nendo builds and runs without
// Catalyst, and refuses scripts with a message saying how to get a build that runs them.
#include "core/Error.hpp"
#include "io/InSitu.hpp"

namespace nendo {

struct CatalystAdaptor::Impl {};

bool CatalystAdaptor::available() { return false; }

std::string CatalystAdaptor::paraview_version() { return ""; }

CatalystAdaptor::CatalystAdaptor(MPI_Comm, const std::vector<std::string>& scripts, const std::string&,
                                 bool) {
  throw InputError("Catalyst script " + (scripts.empty() ? std::string("(none)") : scripts.front()) +
                   ": this nendo was built without ParaView Catalyst; install paraview-dev and "
                   "python3-paraview (Debian) and rebuild with -DNENDO_WITH_CATALYST=ON");
}

CatalystAdaptor::~CatalystAdaptor() = default;

InSituRequest CatalystAdaptor::request(std::int64_t, double) { return {}; }

void CatalystAdaptor::execute(const InSituData&) {}

}  // namespace nendo
