#pragma once
// In-situ visualisation through ParaView Catalyst: the simulation's state handed to Catalyst
// Python scripts while it runs, without files in between. This header is free of VTK; nendo
// builds without ParaView (NENDO_WITH_CATALYST=OFF) and then refuses scripts with a clear error.
//
// Channels (the registrationName a script's TrivialProducer uses, DESIGN.md "Files"):
//   particles  vtkPolyData, one piece per rank: a vertex per particle, every field as point data
//              (2D: z = 0, vectors and tensors padded to 3 and 3x3); a d x d "stress" adds the
//              invariants "pressure" (-tr(sigma)/d) and "von_mises" (sqrt(3/2 s:s), s its deviator).
//              With labels, field data "method", "material_names" (index = "material") and
//              "units" ("name: unit" per point array), and each array's vtkDataArray::UNITS_LABEL
//   blocks     vtkUnstructuredGrid, one piece per rank: the rank's particle blocks as hexahedra
//              (2D: quads) with cell data "rank" and "particles"
//   mesh       vtkUnstructuredGrid of tetrahedra with vertex fields (the mesh methods), labelled
//              as the particles
// A channel is built only when a script asks for it at that step (RequestDataDescription), so
// a step no script wants costs one call into Catalyst.
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "decomposition/BlockGeometry.hpp"
#include "decomposition/ParticleBlocks.hpp"
#include "decomposition/ParticleSet.hpp"
#include "decomposition/TetMeshView.hpp"
#include "io/ParticleFile.hpp"

namespace nendo {

// The channels a co-processing call needs.
struct InSituRequest {
  bool particles = false;
  bool blocks = false;
  bool mesh = false;
  bool any() const { return particles || blocks || mesh; }
};

// This rank's part of the state at one step; pointers for channels not requested may be null.
struct InSituData {
  const ParticleSet* particles = nullptr;  // the fields to show (the driver picks and derives them)
  const ParticleBlocks* blocks = nullptr;
  const BlockGeometry* geometry = nullptr;
  int rank = 0;
  TetMeshView mesh;
  const ParticleLabels* labels = nullptr;  // method, units, material names; null: none
};

class CatalystAdaptor {
 public:
  // Whether this build has Catalyst, and which ParaView it was built with ("" when not).
  static bool available();
  static std::string paraview_version();

  // Collective. Loads the scripts: ParaView Catalyst Python scripts (`# script-version: 2`, or
  // the legacy ones that define DoCoProcessing). Throws nendo::Error naming the script when it
  // cannot be read, is not a Catalyst script or fails to load (the Python error goes to stderr),
  // and when this build has no Catalyst. Files the scripts write go to working_directory (which
  // must exist; "" is the current directory). with_mesh: the method offers the "mesh" channel.
  CatalystAdaptor(MPI_Comm comm, const std::vector<std::string>& scripts,
                  const std::string& working_directory, bool with_mesh = false);
  ~CatalystAdaptor();
  CatalystAdaptor(const CatalystAdaptor&) = delete;
  CatalystAdaptor& operator=(const CatalystAdaptor&) = delete;

  // What the scripts need at this step (the same answer on every rank); nothing: skip the step.
  InSituRequest request(std::int64_t step, double time);
  // Collective. Hands the channels of the last request() to the scripts. Throws
  // nendo::CollectiveError on every rank when a script failed (its Python error is printed).
  void execute(const InSituData& data);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nendo
