// The Catalyst adaptor on 1 to 4 ranks (the last rank owns nothing): the channels a script
// asks for are the only ones built, and only at the steps its trigger fires; what reaches a
// script (read back from the extracts it writes) is every rank's piece with every field, 2D
// vectors and tensors padded to 3D; tetrahedral meshes arrive as tetrahedra; the stress
// invariants are those of known tensors; the labels (method, material names, units) arrive as
// field data and each array's UNITS_LABEL; bad scripts are refused on every rank before any work.
#include <gtest/gtest.h>
#include <mpi.h>
#include <vtkCellData.h>
#include <vtkCellType.h>
#include <vtkDataArray.h>
#include <vtkFieldData.h>
#include <vtkInformation.h>
#include <vtkInformationStringKey.h>
#include <vtkNew.h>
#include <vtkPointData.h>
#include <vtkPolyData.h>
#include <vtkStringArray.h>
#include <vtkUnstructuredGrid.h>
#include <vtkXMLPPolyDataReader.h>
#include <vtkXMLPUnstructuredGridReader.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "core/Error.hpp"
#include "core/Mpi.hpp"
#include "io/InSitu.hpp"
#include "io/catalyst/VtkPieces.hpp"
#include "support/FreshDirectory.hpp"

namespace nendo {
namespace {

int rank() { return mpi::rank(MPI_COMM_WORLD); }
int ranks() { return mpi::size(MPI_COMM_WORLD); }
bool owns_nothing(int r) { return ranks() > 1 && r == ranks() - 1; }

std::string write_script(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  if (rank() == 0) std::ofstream(path) << text;
  MPI_Barrier(MPI_COMM_WORLD);
  return path;
}

// Rank r's particles in 2D: 3 + r of them (none on the last rank), with a vector, a 2x2 tensor
// and an integer field whose values encode (id, component).
ParticleSet particles_2d(int r) {
  ParticleSet ps(2);
  ps.add_field("velocity", FieldType::Real, 2);
  ps.add_field("stress", FieldType::Real, 4);
  ps.add_field("material", FieldType::Int32, 1);
  ps.resize(owns_nothing(r) ? 0 : 3 + r);
  for (std::size_t p = 0; p < ps.size(); ++p) {
    const ParticleId id = 10 * r + p;
    ps.ids()[p] = id;
    ps.positions()[2 * p] = 0.1 * id, ps.positions()[2 * p + 1] = -0.2 * id;
    for (int a = 0; a < 2; ++a) ps.real("velocity")[2 * p + a] = id + 0.25 * a;
    for (int k = 0; k < 4; ++k) ps.real("stress")[4 * p + k] = 100.0 * id + k;
    ps.int32("material")[p] = static_cast<std::int32_t>(id % 3);
  }
  return ps;
}

// Labels for the 2D particles; "id" and "von_mises" have no unit here.
const ParticleLabels& labels() {
  static const ParticleLabels labels{
      "mpm",
      {"ball", "jelly", "soft jelly"},
      {{"velocity", "m/s"}, {"stress", "Pa"}, {"material", "1"}, {"pressure", "Pa"}}};
  return labels;
}

// The values of a string array of field data (empty when it is missing).
std::vector<std::string> strings(vtkFieldData* data, const char* name) {
  std::vector<std::string> values;
  auto* array = vtkStringArray::SafeDownCast(data->GetAbstractArray(name));
  for (vtkIdType i = 0; array && i < array->GetNumberOfValues(); ++i) values.push_back(array->GetValue(i));
  return values;
}

const char* kParticlesOnly = R"(# script-version: 2
from paraview.simple import *
from paraview import catalyst
particles = TrivialProducer(registrationName="particles")
writer = CreateExtractor("VTP", particles, registrationName="writer")
writer.Writer.FileName = "particles_{timestep:06d}.pvtp"
writer.Trigger = "TimeStep"
writer.Trigger.Frequency = 3
options = catalyst.Options()
options.ExtractsOutputDirectory = "extracts"
options.GlobalTrigger = "TimeStep"
options.GlobalTrigger.Frequency = 3
)";

TEST(CatalystAdaptor, BuildsOnlyTheChannelsAndStepsTheScriptsAskFor) {
  ASSERT_TRUE(CatalystAdaptor::available());
  const std::string dir = fresh_directory("io/catalyst", "request");
  const std::string script = write_script(dir, "particles_only.py", kParticlesOnly);
  CatalystAdaptor adaptor(MPI_COMM_WORLD, {script}, dir);
  const ParticleSet ps = particles_2d(rank());
  for (int step = 0; step <= 7; ++step) {
    const InSituRequest request = adaptor.request(step, 0.5 * step);
    EXPECT_EQ(request.particles, step % 3 == 0) << "step " << step;
    EXPECT_FALSE(request.blocks) << "step " << step;
    EXPECT_FALSE(request.mesh) << "step " << step;
    InSituData data;
    data.particles = &ps;  // no blocks given: building them would throw
    adaptor.execute(data);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (int step = 0; step <= 7; ++step) {
    const std::string path = dir + "/extracts/particles_" +
                             std::string(6 - std::to_string(step).size(), '0') + std::to_string(step) +
                             ".pvtp";
    EXPECT_EQ(std::filesystem::exists(path), step % 3 == 0) << path;
  }
}

TEST(CatalystAdaptor, EveryRanksPieceReachesTheScriptWithEveryField) {
  const std::string dir = fresh_directory("io/catalyst", "fields");
  const std::string script = write_script(dir, "particles_only.py", kParticlesOnly);
  {
    CatalystAdaptor adaptor(MPI_COMM_WORLD, {script}, dir);
    const ParticleSet ps = particles_2d(rank());
    ASSERT_TRUE(adaptor.request(3, 1.5).particles);
    InSituData data;
    data.particles = &ps;
    data.labels = &labels();
    adaptor.execute(data);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank() != 0) return;
  vtkNew<vtkXMLPPolyDataReader> reader;
  reader->SetFileName((dir + "/extracts/particles_000003.pvtp").c_str());
  reader->Update();
  vtkPolyData* out = reader->GetOutput();
  // ParaView's writer leaves out the pieces of ranks with no particles.
  ASSERT_EQ(reader->GetNumberOfPieces(), ranks() > 1 ? ranks() - 1 : 1);
  std::size_t expected = 0;
  for (int r = 0; r < ranks(); ++r) expected += particles_2d(r).size();
  ASSERT_EQ(static_cast<std::size_t>(out->GetNumberOfPoints()), expected);
  vtkDataArray* ids = out->GetPointData()->GetArray("id");
  vtkDataArray* velocity = out->GetPointData()->GetArray("velocity");
  vtkDataArray* stress = out->GetPointData()->GetArray("stress");
  vtkDataArray* material = out->GetPointData()->GetArray("material");
  ASSERT_TRUE(ids && velocity && stress && material && out->GetPointData()->GetArray("pressure"));
  EXPECT_EQ(velocity->GetNumberOfComponents(), 3);
  EXPECT_EQ(stress->GetNumberOfComponents(), 9);
  for (vtkIdType i = 0; i < out->GetNumberOfPoints(); ++i) {
    const double id = ids->GetTuple1(i);
    double x[3];
    out->GetPoint(i, x);
    EXPECT_EQ(x[0], 0.1 * id);
    EXPECT_EQ(x[1], -0.2 * id);
    EXPECT_EQ(x[2], 0.0);
    EXPECT_EQ(velocity->GetComponent(i, 0), id);
    EXPECT_EQ(velocity->GetComponent(i, 1), id + 0.25);
    EXPECT_EQ(velocity->GetComponent(i, 2), 0.0);
    // [s0 s1; s2 s3] becomes [s0 s1 0; s2 s3 0; 0 0 0].
    const double expected_stress[9] = {100 * id, 100 * id + 1, 0, 100 * id + 2, 100 * id + 3, 0, 0, 0, 0};
    for (int k = 0; k < 9; ++k)
      EXPECT_EQ(stress->GetComponent(i, k), expected_stress[k]) << "component " << k;
    EXPECT_EQ(material->GetTuple1(i), static_cast<int>(id) % 3);
  }
  // The labels, as field data that the extract keeps.
  EXPECT_EQ(strings(out->GetFieldData(), "method"), std::vector<std::string>{"mpm"});
  EXPECT_EQ(strings(out->GetFieldData(), "material_names"), labels().material_names);
  EXPECT_EQ(strings(out->GetFieldData(), "units"),
            (std::vector<std::string>{"velocity: m/s", "stress: Pa", "material: 1", "pressure: Pa"}));
}

TEST(CatalystAdaptor, EachArrayCarriesItsUnit) {
  const vtkSmartPointer<vtkPolyData> piece = particles_piece(particles_2d(0), &labels());
  vtkDataArray* velocity = piece->GetPointData()->GetArray("velocity");
  ASSERT_TRUE(velocity && velocity->GetInformation()->Has(vtkDataArray::UNITS_LABEL()));
  EXPECT_STREQ(velocity->GetInformation()->Get(vtkDataArray::UNITS_LABEL()), "m/s");
  EXPECT_FALSE(piece->GetPointData()->GetArray("id")->GetInformation()->Has(vtkDataArray::UNITS_LABEL()));
}

TEST(CatalystAdaptor, MeshesArriveAsTetrahedraAndBlocksAsHexahedra) {
  const std::string dir = fresh_directory("io/catalyst", "mesh");
  const std::string script = write_script(dir, "mesh_and_blocks.py", R"(# script-version: 2
from paraview.simple import *
from paraview import catalyst
mesh = TrivialProducer(registrationName="mesh")
blocks = TrivialProducer(registrationName="blocks")
CreateExtractor("VTU", mesh, registrationName="mesh_writer").Writer.FileName = "mesh_{timestep:06d}.pvtu"
CreateExtractor("VTU", blocks, registrationName="block_writer").Writer.FileName = "blocks_{timestep:06d}.pvtu"
options = catalyst.Options()
options.ExtractsOutputDirectory = "extracts"
)");
  // The unit cube in the 6 tets of the Kuhn split on every rank that owns something, shifted by
  // the rank; two blocks on the same ranks.
  ParticleSet vertices(3);
  vertices.add_field("displacement", FieldType::Real, 3);
  std::vector<std::int64_t> tets;
  ParticleBlocks blocks;
  if (!owns_nothing(rank())) {
    vertices.resize(8);
    for (int v = 0; v < 8; ++v) {
      vertices.ids()[v] = 8 * rank() + v;
      for (int a = 0; a < 3; ++a)
        vertices.positions()[3 * v + a] = ((v >> a) & 1) + (a == 0 ? 2 * rank() : 0);
      for (int a = 0; a < 3; ++a) vertices.real("displacement")[3 * v + a] = v + 0.5 * a;
    }
    tets = {0, 1, 3, 7, 0, 1, 5, 7, 0, 2, 3, 7, 0, 2, 6, 7, 0, 4, 5, 7, 0, 4, 6, 7};
    blocks.keys = {encode_block_key({2 * rank(), 0, 0}), encode_block_key({2 * rank() + 1, 0, 0})};
    blocks.offsets = {0, 5, 12};
  }
  BlockGeometry geometry;
  geometry.dimension = 3, geometry.dx = 0.5, geometry.block = 2;
  {
    CatalystAdaptor adaptor(MPI_COMM_WORLD, {script}, dir, /*with_mesh=*/true);
    const InSituRequest request = adaptor.request(0, 0.0);
    EXPECT_TRUE(request.mesh && request.blocks);
    EXPECT_FALSE(request.particles);
    InSituData data;
    data.mesh = TetMeshView{&vertices, &tets};
    data.blocks = &blocks, data.geometry = &geometry, data.rank = rank();
    adaptor.execute(data);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank() != 0) return;
  const int owners = ranks() > 1 ? ranks() - 1 : 1;
  vtkNew<vtkXMLPUnstructuredGridReader> mesh_reader;
  mesh_reader->SetFileName((dir + "/extracts/mesh_000000.pvtu").c_str());
  mesh_reader->Update();
  vtkUnstructuredGrid* mesh = mesh_reader->GetOutput();
  ASSERT_EQ(mesh->GetNumberOfCells(), 6 * owners);
  double volume = 0;
  for (vtkIdType c = 0; c < mesh->GetNumberOfCells(); ++c) {
    ASSERT_EQ(mesh->GetCellType(c), VTK_TETRA);
    double x[4][3];
    for (int k = 0; k < 4; ++k) mesh->GetPoint(mesh->GetCell(c)->GetPointId(k), x[k]);
    double e[3][3];
    for (int k = 0; k < 3; ++k)
      for (int a = 0; a < 3; ++a) e[k][a] = x[k + 1][a] - x[0][a];
    volume += std::abs(e[0][0] * (e[1][1] * e[2][2] - e[1][2] * e[2][1]) -
                       e[0][1] * (e[1][0] * e[2][2] - e[1][2] * e[2][0]) +
                       e[0][2] * (e[1][0] * e[2][1] - e[1][1] * e[2][0])) /
              6;
  }
  EXPECT_NEAR(volume, owners, 1e-12);  // the Kuhn tets fill each unit cube exactly
  ASSERT_TRUE(mesh->GetPointData()->GetArray("displacement"));
  EXPECT_EQ(mesh->GetPointData()->GetArray("displacement")->GetNumberOfComponents(), 3);

  vtkNew<vtkXMLPUnstructuredGridReader> block_reader;
  block_reader->SetFileName((dir + "/extracts/blocks_000000.pvtu").c_str());
  block_reader->Update();
  vtkUnstructuredGrid* out = block_reader->GetOutput();
  ASSERT_EQ(out->GetNumberOfCells(), 2 * owners);
  vtkDataArray* owner = out->GetCellData()->GetArray("rank");
  vtkDataArray* count = out->GetCellData()->GetArray("particles");
  ASSERT_TRUE(owner && count);
  for (vtkIdType c = 0; c < out->GetNumberOfCells(); ++c) {
    ASSERT_EQ(out->GetCellType(c), VTK_HEXAHEDRON);
    double bounds[6];
    out->GetCell(c)->GetBounds(bounds);
    // Block (2r + i, 0, 0) of edge 2 * 0.5 = 1 spans x in [2r + i, 2r + i + 1].
    const int r = static_cast<int>(owner->GetTuple1(c)), i = static_cast<int>(bounds[0]) - 2 * r;
    EXPECT_TRUE(i == 0 || i == 1);
    EXPECT_EQ(bounds[1] - bounds[0], 1.0);
    EXPECT_EQ(bounds[3] - bounds[2], 1.0);
    EXPECT_EQ(count->GetTuple1(c), i == 0 ? 5 : 7);
  }
}

TEST(CatalystAdaptor, StressInvariantsAreThoseOfKnownTensors) {
  ParticleSet ps(3);
  ps.add_field("stress", FieldType::Real, 9);
  ps.resize(3);
  const double tensors[3][9] = {{-7, 0, 0, 0, -7, 0, 0, 0, -7},  // hydrostatic: p = 7, von Mises 0
                                {5, 0, 0, 0, 0, 0, 0, 0, 0},     // uniaxial: p = -5/3, von Mises 5
                                {0, 2, 0, 2, 0, 0, 0, 0, 0}};    // pure shear: p = 0, von Mises sqrt(3) 2
  for (int p = 0; p < 3; ++p) std::copy(tensors[p], tensors[p] + 9, ps.real("stress") + 9 * p);
  const vtkSmartPointer<vtkPolyData> piece = particles_piece(ps);
  vtkDataArray* pressure = piece->GetPointData()->GetArray("pressure");
  vtkDataArray* von_mises = piece->GetPointData()->GetArray("von_mises");
  ASSERT_TRUE(pressure && von_mises);
  EXPECT_DOUBLE_EQ(pressure->GetTuple1(0), 7);
  EXPECT_NEAR(von_mises->GetTuple1(0), 0, 1e-14);
  EXPECT_DOUBLE_EQ(pressure->GetTuple1(1), -5.0 / 3);
  EXPECT_DOUBLE_EQ(von_mises->GetTuple1(1), 5);
  EXPECT_DOUBLE_EQ(pressure->GetTuple1(2), 0);
  EXPECT_DOUBLE_EQ(von_mises->GetTuple1(2), 2 * std::sqrt(3.0));
  EXPECT_EQ(piece->GetNumberOfVerts(), 3);
}

TEST(CatalystAdaptor, ScriptsAreFinalisedInTheWorkingDirectory) {
  const std::string dir = fresh_directory("io/catalyst", "finalize");
  const std::string script = write_script(dir, "finalizes.py", R"(# script-version: 2
from paraview.simple import *
particles = TrivialProducer(registrationName="particles")
def catalyst_execute(info):
    pass
def catalyst_finalize():
    open("finalized_%d.txt" % info_rank(), "w").write("done\n")
def info_rank():
    from paraview.modules.vtkRemotingCore import vtkProcessModule
    return vtkProcessModule.GetProcessModule().GetPartitionId()
)");
  {
    CatalystAdaptor adaptor(MPI_COMM_WORLD, {script}, dir);
    const ParticleSet ps = particles_2d(rank());
    ASSERT_TRUE(adaptor.request(0, 0.0).particles);
    InSituData data;
    data.particles = &ps;
    adaptor.execute(data);
    EXPECT_FALSE(std::filesystem::exists(dir + "/finalized_" + std::to_string(rank()) + ".txt"));
  }
  EXPECT_TRUE(std::filesystem::exists(dir + "/finalized_" + std::to_string(rank()) + ".txt"));
}

void expect_refused(const std::vector<std::string>& scripts, const std::string& dir,
                    const std::string& message) {
  try {
    CatalystAdaptor adaptor(MPI_COMM_WORLD, scripts, dir);
    ADD_FAILURE() << "accepted " << scripts.back();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Catalyst script"), std::string::npos) << e.what();
  }
}

TEST(CatalystAdaptor, RefusesBadScriptsOnEveryRank) {
  const std::string dir = fresh_directory("io/catalyst", "refused");
  const std::string good = write_script(dir, "good.py", kParticlesOnly);
  expect_refused({good, dir + "/missing.py"}, dir, "missing.py: cannot be read");
  expect_refused({write_script(dir, "plain.py", "print('not for Catalyst')\n")}, dir,
                 "not a ParaView Catalyst script");
  expect_refused({write_script(dir, "broken.py", "# script-version: 2\nx = (\n")}, dir, "not valid Python");
  // A file that only rank 0 can read stops every rank alike (a node that does not see the file).
  const std::string own = dir + "/rank0_only.py";
  if (rank() == 0) std::ofstream(own) << kParticlesOnly;
  MPI_Barrier(MPI_COMM_WORLD);
  if (ranks() > 1)
    expect_refused({rank() == 0 ? own : dir + "/elsewhere.py"}, dir,
                   rank() == 0 ? "another rank" : "cannot be read");
}

}  // namespace
}  // namespace nendo
