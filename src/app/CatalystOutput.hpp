#pragma once
// The run's in-situ visualisation: the scene's Catalyst scripts (and those of --catalyst) are
// offered the state every catalyst.every_steps steps; only the channels and fields they ask for
// are built (io/InSitu.hpp). Without scripts it does nothing and costs nothing.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/OutputView.hpp"
#include "io/InSitu.hpp"

namespace nendo {

class CatalystOutput {
 public:
  // Collective. Loads the scripts before any work; files they write go to directory (the output
  // directory, which must exist by the first process()). Throws nendo::InputError naming a
  // script that does not load.
  CatalystOutput(MPI_Comm comm, const Scene& scene, const Method& method,
                 const std::vector<std::string>& extra_scripts, const std::string& directory);
  ~CatalystOutput();

  bool enabled() const { return adaptor_ != nullptr; }
  // Collective. Offers the state after `step` to the scripts when the step is due or `last`
  // (the run's last step, so that the final state is seen).
  void process(const Space& space, const Method& method, long step, Real t, bool last = false);
  // Wall time spent in Catalyst on this rank, and the number of calls that ran scripts.
  double seconds() const { return seconds_; }
  long executions() const { return executions_; }

 private:
  const Scene& scene_;
  std::unique_ptr<CatalystAdaptor> adaptor_;
  std::optional<OutputFields> fields_;  // chosen at the first execution
  ParticleLabels labels_;
  double seconds_ = 0;
  long executions_ = 0;
};

}  // namespace nendo
