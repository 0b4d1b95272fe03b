#pragma once
// The interface between nendo and its ParaView Catalyst plugin, libnendo_catalyst.so, which
// CatalystAdaptor loads (dlopen) only when a run asks for Catalyst: the ~200 ParaView and VTK
// libraries then cost nothing (about 0.7 s of start-up per process) to every run that does not.
#include <mpi.h>

#include <string>
#include <vector>

#include "io/InSitu.hpp"

namespace nendo {

class InSituBackend {
 public:
  virtual ~InSituBackend() = default;
  virtual InSituRequest request(std::int64_t step, double time) = 0;
  virtual void execute(const InSituData& data) = 0;
};

}  // namespace nendo

// The plugin's entry points (C names, so dlsym finds them); they behave as CatalystAdaptor's
// constructor and paraview_version() document.
extern "C" {
nendo::InSituBackend* nendo_catalyst_create(MPI_Comm comm, const std::vector<std::string>& scripts,
                                            const std::string& working_directory, bool with_mesh);
const char* nendo_catalyst_paraview_version();
}
