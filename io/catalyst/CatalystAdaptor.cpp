// The Catalyst adaptor on ParaView 5.11's legacy C++ API (vtkCPProcessor), which runs both
// current `paraview.catalyst` scripts and legacy ones.
#include <vtkCPDataDescription.h>
#include <vtkCPInputDataDescription.h>
#include <vtkCPProcessor.h>
#include <vtkCPPythonPipeline.h>
#include <vtkLogger.h>
#include <vtkMPI.h>
#include <vtkNew.h>
#include <vtkPVVersion.h>
#include <vtkPolyData.h>
#include <vtkPythonInterpreter.h>
#include <vtkUnstructuredGrid.h>

#include <filesystem>
#include <fstream>

#include "core/Error.hpp"
#include "io/InSitu.hpp"
#include "io/catalyst/VtkPieces.hpp"

namespace nendo {

struct CatalystAdaptor::Impl {
  MPI_Comm comm = MPI_COMM_NULL;  // vtkMPICommunicatorOpaqueComm keeps a pointer to it
  vtkNew<vtkCPProcessor> processor;
  vtkSmartPointer<vtkCPDataDescription> description;
  bool with_mesh = false;
  InSituRequest requested;
};

bool CatalystAdaptor::available() { return true; }

std::string CatalystAdaptor::paraview_version() { return PARAVIEW_VERSION_FULL; }

namespace {

// Paths are made absolute because Catalyst runs the scripts from the working directory. The
// syntax is checked here since ParaView imports a script only when it is first asked for data.
void load_script(vtkCPProcessor& processor, const std::string& given) {
  const std::string path = std::filesystem::absolute(given).lexically_normal().string();
  if (!std::ifstream(path).good()) throw Error("Catalyst script " + given + ": cannot be read");
  if (path.find("'''") != std::string::npos ||
      vtkPythonInterpreter::RunSimpleString(
          ("compile(open(r'''" + path + "''', 'rb').read(), r'''" + path + "''', 'exec')").c_str()) != 0)
    throw Error("Catalyst script " + given + ": not valid Python (the error is above)");
  const int version = vtkCPPythonPipeline::DetectScriptVersion(path.c_str());
  if (version == 0)
    throw Error("Catalyst script " + given +
                ": not a ParaView Catalyst script (no '# script-version: 2' line, no DoCoProcessing)");
  const vtkSmartPointer<vtkCPPythonPipeline> pipeline =
      vtkCPPythonPipeline::CreateAndInitializePipeline(path.c_str(), version);
  if (!pipeline) throw Error("Catalyst script " + given + ": failed to load (the Python error is above)");
  processor.AddPipeline(pipeline);
}

}  // namespace

CatalystAdaptor::CatalystAdaptor(MPI_Comm comm, const std::vector<std::string>& scripts,
                                 const std::string& working_directory, bool with_mesh)
    : impl_(std::make_unique<Impl>()) {
  MPI_Comm_dup(comm, &impl_->comm);
  impl_->with_mesh = with_mesh;
  vtkMPICommunicatorOpaqueComm opaque(&impl_->comm);
  const char* directory = working_directory.empty() ? nullptr : working_directory.c_str();
  if (!impl_->processor->Initialize(opaque, directory)) throw Error("ParaView Catalyst failed to initialise");
  // ParaView 5.11's producers warn at every call that the time did not advance or is not the one a
  // view asked for (they hand over the data they have, which is this step's); errors still show.
  vtkLogger::SetStderrVerbosity(vtkLogger::VERBOSITY_ERROR);
  for (const std::string& script : scripts) load_script(*impl_->processor, script);
}

CatalystAdaptor::~CatalystAdaptor() {
  impl_->processor->Finalize();
  impl_->description = nullptr;
  impl_->processor->RemoveAllPipelines();
  MPI_Comm_free(&impl_->comm);
}

InSituRequest CatalystAdaptor::request(std::int64_t step, double time) {
  auto description = vtkSmartPointer<vtkCPDataDescription>::New();
  for (const char* channel : {"particles", "blocks"}) description->AddInput(channel);
  if (impl_->with_mesh) description->AddInput("mesh");
  description->SetTimeData(time, static_cast<vtkIdType>(step));
  InSituRequest request;
  if (impl_->processor->RequestDataDescription(description) != 0) {
    const auto needs = [&](const char* channel) {
      vtkCPInputDataDescription* input = description->GetInputDescriptionByName(channel);
      return input && input->GetIfGridIsNecessary();
    };
    request.particles = needs("particles");
    request.blocks = needs("blocks");
    request.mesh = needs("mesh");
  }
  impl_->description = request.any() ? description : nullptr;
  impl_->requested = request;
  return request;
}

void CatalystAdaptor::execute(const InSituData& data) {
  if (!impl_->description) return;
  const InSituRequest& r = impl_->requested;
  if (r.particles) {
    if (!data.particles) throw Error("Catalyst: the particles were requested but not given");
    impl_->description->GetInputDescriptionByName("particles")->SetGrid(particles_piece(*data.particles));
  }
  if (r.blocks) {
    if (!data.blocks || !data.geometry) throw Error("Catalyst: the blocks were requested but not given");
    impl_->description->GetInputDescriptionByName("blocks")->SetGrid(
        blocks_piece(*data.blocks, *data.geometry, data.rank));
  }
  if (r.mesh) impl_->description->GetInputDescriptionByName("mesh")->SetGrid(mesh_piece(data.mesh));
  impl_->processor->CoProcess(impl_->description);
  impl_->description = nullptr;
}

}  // namespace nendo
