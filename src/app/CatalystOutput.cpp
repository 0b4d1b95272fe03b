#include "app/CatalystOutput.hpp"

#include <fmt/format.h>

#include "core/Mpi.hpp"

namespace nendo {
namespace {

// Unset catalyst.fields: everything a script may want to colour by, as far as the method has it.
const std::vector<std::string> kDefaultFields = {"id",     "velocity", "mass", "volume", "material",
                                                 "stress", "J",        "Jp",   "rank"};

}  // namespace

CatalystOutput::CatalystOutput(MPI_Comm comm, const Scene& scene, const Method& method,
                               const std::vector<std::string>& extra_scripts, const std::string& directory)
    : scene_(scene), labels_(output_labels(scene)) {
  std::vector<std::string> scripts = scene.catalyst.scripts;
  scripts.insert(scripts.end(), extra_scripts.begin(), extra_scripts.end());
  if (scripts.empty()) return;
  adaptor_ = std::make_unique<CatalystAdaptor>(comm, scripts, directory, method.has_mesh());
  if (mpi::rank(comm) == 0)
    fmt::print("nendo: Catalyst (ParaView {}) runs {} script(s) every {} step(s); their files go to {}/\n",
               CatalystAdaptor::paraview_version(), scripts.size(), scene.catalyst.every_steps, directory);
}

CatalystOutput::~CatalystOutput() = default;

void CatalystOutput::process(const Space& space, const Method& method, long step, Real t, bool last) {
  if (!adaptor_ || (step % scene_.catalyst.every_steps != 0 && !last)) return;
  const double start = MPI_Wtime();
  const InSituRequest request = adaptor_->request(step, t);
  if (request.any()) {
    if (!fields_)
      fields_ = select_output_fields(scene_.catalyst.fields.value_or(kDefaultFields), scene_, method,
                                     space.particles(), space.rank(), "Catalyst fields",
                                     !scene_.catalyst.fields.has_value());
    std::optional<ParticleSet> particles;
    if (request.particles) particles.emplace(output_view(space, method, *fields_));
    InSituData data;
    data.particles = particles ? &*particles : nullptr;
    data.blocks = &space.blocks();
    data.geometry = &space.geometry();
    data.rank = space.rank();
    data.labels = &labels_;
    if (request.mesh) data.mesh = method.mesh_view(space);
    adaptor_->execute(data);
    ++executions_;
  }
  seconds_ += MPI_Wtime() - start;
}

}  // namespace nendo
