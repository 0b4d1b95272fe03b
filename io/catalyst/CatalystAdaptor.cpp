// The Catalyst plugin (see InSituBackend.hpp) on ParaView 5.11's legacy C++ API (vtkCPProcessor),
// which runs both current `paraview.catalyst` scripts and legacy ones.
//
// ParaView cannot be initialised again in a process once finalised, so there is one
// vtkCPProcessor per process, made by the first adaptor and finalised when MPI is (from an
// MPI_COMM_SELF attribute, the first thing MPI_Finalize deletes, while MPI still works). Each
// adaptor adds its scripts and removes them when it goes.
#include <vtkCPDataDescription.h>
#include <vtkCPInputDataDescription.h>
#include <vtkCPProcessor.h>
#include <vtkCPPythonPipeline.h>
#include <vtkLogger.h>
#include <vtkMPI.h>
#include <vtkPVVersion.h>
#include <vtkPolyData.h>
#include <vtkPythonInterpreter.h>
#include <vtkUnstructuredGrid.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/Error.hpp"
#include "io/catalyst/InSituBackend.hpp"
#include "io/catalyst/VtkPieces.hpp"

namespace nendo {
namespace {

const char* const kChannels[] = {"particles", "blocks", "mesh"};

struct ProcessCatalyst {
  MPI_Comm comm = MPI_COMM_NULL;  // vtkMPICommunicatorOpaqueComm keeps a pointer to it
  vtkSmartPointer<vtkCPProcessor> processor;
};
ProcessCatalyst* process_catalyst = nullptr;

int finalize_catalyst(MPI_Comm, int, void*, void*) {
  if (process_catalyst) {
    process_catalyst->processor->Finalize();  // the pipelines' too: catalyst_finalize() runs
    process_catalyst->processor->RemoveAllPipelines();
    process_catalyst->processor = nullptr;
    MPI_Comm_free(&process_catalyst->comm);
    delete process_catalyst;
    process_catalyst = nullptr;
  }
  return MPI_SUCCESS;
}

vtkCPProcessor& processor_for(MPI_Comm comm) {
  if (process_catalyst) {
    int same = MPI_UNEQUAL;
    MPI_Comm_compare(comm, process_catalyst->comm, &same);
    if (same != MPI_IDENT && same != MPI_CONGRUENT)
      throw InputError(
          "ParaView Catalyst runs on one communicator per process; this one differs from the first");
    return *process_catalyst->processor;
  }
  auto catalyst = std::make_unique<ProcessCatalyst>();
  MPI_Comm_dup(comm, &catalyst->comm);
  catalyst->processor = vtkSmartPointer<vtkCPProcessor>::New();
  vtkMPICommunicatorOpaqueComm opaque(&catalyst->comm);
  if (!catalyst->processor->Initialize(opaque)) throw InputError("ParaView Catalyst failed to initialise");
  // ParaView 5.11's producers warn at every call that the time did not advance or is not the one a
  // view asked for (they hand over the data they have, which is this step's); errors still show.
  vtkLogger::SetStderrVerbosity(vtkLogger::VERBOSITY_ERROR);
  int key = MPI_KEYVAL_INVALID;
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_catalyst, &key, nullptr);
  MPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr);
  process_catalyst = catalyst.release();
  return *process_catalyst->processor;
}

// Local checks of one script: readable, valid Python.
// Paths are made absolute because the scripts run from the working directory; the syntax is
// checked here since ParaView imports a script only when it is first given data.
void check_script(const std::string& given, const std::string& path) {
  if (!std::ifstream(path).good()) throw Error("Catalyst script " + given + ": cannot be read");
  if (path.find("'''") != std::string::npos ||
      vtkPythonInterpreter::RunSimpleString(
          ("compile(open(r'''" + path + "''', 'rb').read(), r'''" + path + "''', 'exec')").c_str()) != 0)
    throw Error("Catalyst script " + given + ": not valid Python (the error is above)");
}

// The channels a script names in quotes (TrivialProducer(registrationName="particles")): scripts
// of the paraview.catalyst kind ask for every channel when they run, so the others are skipped.
// A script that names none (it builds its names) is given every channel.
std::vector<bool> channels_named_in(const std::string& path) {
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<bool> named;
  for (const std::string channel : kChannels)
    named.push_back(text.find('"' + channel + '"') != std::string::npos ||
                    text.find('\'' + channel + '\'') != std::string::npos);
  if (std::find(named.begin(), named.end(), true) == named.end()) named.assign(named.size(), true);
  return named;
}

// Runs f in directory (Catalyst writes files relative to the current one), then returns. A
// directory that does not exist (yet: an adaptor given up before the run made it) leaves the
// current one; nothing here throws, since adaptors finalise their scripts in a destructor.
template <class F>
auto in_directory(const std::string& directory, F f) {
  std::error_code error;
  const std::filesystem::path before = std::filesystem::current_path(error);
  if (directory.empty() || error) return f();
  std::filesystem::current_path(directory, error);
  if (error) return f();
  struct Back {
    std::filesystem::path path;
    ~Back() {
      std::error_code ignored;
      std::filesystem::current_path(path, ignored);
    }
  } back{before};
  return f();
}

}  // namespace

class ParaViewCatalyst final : public InSituBackend {
 public:
  ParaViewCatalyst(MPI_Comm comm, const std::vector<std::string>& scripts,
                   const std::string& working_directory, bool with_mesh);
  ~ParaViewCatalyst() override;
  InSituRequest request(std::int64_t step, double time) override;
  void execute(const InSituData& data) override;

 private:
  void add_scripts(MPI_Comm comm, const std::vector<std::string>& scripts);
  void release();

  vtkCPProcessor* processor_ = nullptr;
  std::vector<vtkSmartPointer<vtkCPPythonPipeline>> pipelines_;
  std::string directory_;
  bool with_mesh_ = false;
  std::vector<bool> used_{false, false, false};  // by channel, as kChannels
  vtkSmartPointer<vtkCPDataDescription> description_;
  InSituRequest requested_;
  std::int64_t step_ = 0;
};

ParaViewCatalyst::~ParaViewCatalyst() { release(); }

void ParaViewCatalyst::release() {
  description_ = nullptr;
  if (processor_)
    for (const auto& pipeline : pipelines_) {
      in_directory(directory_, [&] { return pipeline->Finalize(); });  // the script's catalyst_finalize()
      processor_->RemovePipeline(pipeline);
    }
}

ParaViewCatalyst::ParaViewCatalyst(MPI_Comm comm, const std::vector<std::string>& scripts,
                                   const std::string& working_directory, bool with_mesh_channel) {
  directory_ = working_directory;
  with_mesh_ = with_mesh_channel;
  processor_ = &processor_for(comm);
  try {
    add_scripts(comm, scripts);
  } catch (...) {
    release();  // the scripts loaded so far are finalised, as when the run ends
    throw;
  }
}

void ParaViewCatalyst::add_scripts(MPI_Comm comm, const std::vector<std::string>& scripts) {
  for (const std::string& script : scripts) {
    const std::string path = std::filesystem::absolute(script).lexically_normal().string();
    std::string problem;
    try {
      check_script(script, path);
    } catch (const Error& e) {
      problem = e.what();
    }
    // Every rank checks the script; all stop if any could not read it (a file system a node
    // does not see) before ParaView's loading, which is collective.
    int ok = problem.empty() ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
    if (!ok)
      throw InputError(problem.empty() ? "Catalyst script " + script + ": failed to load on another rank"
                                       : problem);
    // ParaView reads the script on rank 0 and broadcasts it: these calls are collective.
    const int version = vtkCPPythonPipeline::DetectScriptVersion(path.c_str());
    if (version == 0)
      throw InputError("Catalyst script " + script +
                       ": not a ParaView Catalyst script (no '# script-version: 2' comment before its first "
                       "line of code)");
    vtkSmartPointer<vtkCPPythonPipeline> pipeline =
        vtkCPPythonPipeline::CreateAndInitializePipeline(path.c_str(), version);
    if (!pipeline)
      throw InputError("Catalyst script " + script + ": failed to load (the Python error is above)");
    pipelines_.push_back(pipeline);
    const std::vector<bool> named = channels_named_in(path);
    for (std::size_t c = 0; c < named.size(); ++c) used_[c] = used_[c] || named[c];
  }
  for (const auto& pipeline : pipelines_) processor_->AddPipeline(pipeline);
}

InSituRequest ParaViewCatalyst::request(std::int64_t step, double time) {
  auto description = vtkSmartPointer<vtkCPDataDescription>::New();
  for (const char* channel : kChannels)
    if (with_mesh_ || std::string(channel) != "mesh") description->AddInput(channel);
  description->SetTimeData(time, static_cast<vtkIdType>(step));
  InSituRequest request;
  if (in_directory(directory_, [&] { return processor_->RequestDataDescription(description); })) {
    // A paraview.catalyst script that wants data marks every channel: only those named are built.
    const auto needs = [&](int c) {
      vtkCPInputDataDescription* input = description->GetInputDescriptionByName(kChannels[c]);
      return input && input->GetIfGridIsNecessary() && used_[c];
    };
    request.particles = needs(0), request.blocks = needs(1), request.mesh = needs(2);
  }
  description_ = request.any() ? description : nullptr;
  step_ = step;
  requested_ = request;
  return request;
}

void ParaViewCatalyst::execute(const InSituData& data) {
  if (!description_) return;
  const InSituRequest& r = requested_;
  vtkCPDataDescription& description = *description_;
  if (r.particles) {
    if (!data.particles) throw Error("Catalyst: the particles were requested but not given");
    description.GetInputDescriptionByName("particles")
        ->SetGrid(particles_piece(*data.particles, data.labels));
  }
  if (r.blocks) {
    if (!data.blocks || !data.geometry) throw Error("Catalyst: the blocks were requested but not given");
    description.GetInputDescriptionByName("blocks")->SetGrid(
        blocks_piece(*data.blocks, *data.geometry, data.rank));
  }
  if (r.mesh) description.GetInputDescriptionByName("mesh")->SetGrid(mesh_piece(data.mesh, data.labels));
  // A script that raises (at its import or in catalyst_execute) stops the run: images and
  // extracts silently missing for the rest of a long run would cost more.
  int ok = in_directory(directory_, [&] { return processor_->CoProcess(description_); });
  description_ = nullptr;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, process_catalyst->comm);
  if (!ok)
    throw CollectiveError("a Catalyst script failed at step " + std::to_string(step_) +
                          " (its Python error is above)");
}

}  // namespace nendo

nendo::InSituBackend* nendo_catalyst_create(MPI_Comm comm, const std::vector<std::string>& scripts,
                                            const std::string& working_directory, bool with_mesh) {
  return new nendo::ParaViewCatalyst(comm, scripts, working_directory, with_mesh);
}

const char* nendo_catalyst_paraview_version() { return PARAVIEW_VERSION_FULL; }
