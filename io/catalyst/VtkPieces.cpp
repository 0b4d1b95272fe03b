#include "io/catalyst/VtkPieces.hpp"

#include <vtkCellArray.h>
#include <vtkCellData.h>
#include <vtkCellType.h>
#include <vtkDataSet.h>
#include <vtkDoubleArray.h>
#include <vtkFieldData.h>
#include <vtkIdTypeArray.h>
#include <vtkInformation.h>
#include <vtkInformationStringKey.h>
#include <vtkIntArray.h>
#include <vtkPointData.h>
#include <vtkPoints.h>
#include <vtkPolyData.h>
#include <vtkStringArray.h>
#include <vtkTypeUInt64Array.h>
#include <vtkUnsignedCharArray.h>
#include <vtkUnstructuredGrid.h>

#include <cmath>

#include "core/Error.hpp"

namespace nendo {
namespace {

// VTK shows vectors with 3 and tensors with 9 components: a 2D vector gets z = 0, a 2x2 tensor
// the 3x3 with zeros in the third row and column.
int vtk_components(int components, int dimension) {
  if (dimension == 2 && components == 2) return 3;
  if (dimension == 2 && components == 4) return 9;
  return components;
}

Real padded(const Real* value, int components, int dimension, int c) {
  if (dimension == 2 && components == 2) return c < 2 ? value[c] : 0;
  if (dimension == 2 && components == 4) return c / 3 < 2 && c % 3 < 2 ? value[2 * (c / 3) + c % 3] : 0;
  return value[c];
}

vtkSmartPointer<vtkPoints> points_of(const ParticleSet& set) {
  const int d = set.dimension();
  auto points = vtkSmartPointer<vtkPoints>::New();
  points->SetDataTypeToDouble();
  points->SetNumberOfPoints(static_cast<vtkIdType>(set.size()));
  const Real* x = set.positions();
  for (std::size_t p = 0; p < set.size(); ++p)
    points->SetPoint(static_cast<vtkIdType>(p), x[d * p], x[d * p + 1], d == 3 ? x[d * p + 2] : 0.0);
  return points;
}

vtkSmartPointer<vtkDataArray> real_array(const ParticleField& field, std::size_t n, int dimension) {
  auto array = vtkSmartPointer<vtkDoubleArray>::New();
  const int c = field.components(), vc = vtk_components(c, dimension);
  array->SetNumberOfComponents(vc);
  array->SetNumberOfTuples(static_cast<vtkIdType>(n));
  const Real* in = field.data<Real>();
  double* out = array->GetPointer(0);
  for (std::size_t p = 0; p < n; ++p)
    for (int k = 0; k < vc; ++k) out[vc * p + k] = padded(in + c * p, c, dimension, k);
  return array;
}

template <class VtkArray, class T>
vtkSmartPointer<vtkDataArray> integer_array(const ParticleField& field, std::size_t n) {
  auto array = vtkSmartPointer<VtkArray>::New();
  array->SetNumberOfComponents(field.components());
  array->SetNumberOfTuples(static_cast<vtkIdType>(n));
  const T* in = field.data<T>();
  std::copy(in, in + n * field.components(), array->GetPointer(0));
  return array;
}

void add_point_fields(const ParticleSet& set, vtkPointData* data) {
  for (const ParticleField& field : set.fields()) {
    if (field.name() == "position") continue;
    vtkSmartPointer<vtkDataArray> array;
    switch (field.type()) {
      case FieldType::Real:
        array = real_array(field, set.size(), set.dimension());
        break;
      case FieldType::Int32:
        array = integer_array<vtkIntArray, std::int32_t>(field, set.size());
        break;
      case FieldType::UInt64:
        array = integer_array<vtkTypeUInt64Array, std::uint64_t>(field, set.size());
        break;
    }
    array->SetName(field.name().c_str());
    data->AddArray(array);
  }
}

// Pressure -tr(σ)/d and the von Mises stress sqrt(3/2 s:s) of the deviator s = σ + p I.
void add_stress_invariants(const ParticleSet& set, vtkPointData* data) {
  const int d = set.dimension();
  if (!set.has_field("stress") || set.field("stress").type() != FieldType::Real ||
      set.field("stress").components() != d * d)
    return;
  const Real* sigma = set.real("stress");
  auto pressure = vtkSmartPointer<vtkDoubleArray>::New();
  auto von_mises = vtkSmartPointer<vtkDoubleArray>::New();
  pressure->SetName("pressure"), von_mises->SetName("von_mises");
  pressure->SetNumberOfTuples(static_cast<vtkIdType>(set.size()));
  von_mises->SetNumberOfTuples(static_cast<vtkIdType>(set.size()));
  for (std::size_t p = 0; p < set.size(); ++p) {
    const Real* s = sigma + d * d * p;
    Real trace = 0;
    for (int a = 0; a < d; ++a) trace += s[a * d + a];
    const Real mean = trace / d;
    Real ss = 0;
    for (int a = 0; a < d; ++a)
      for (int b = 0; b < d; ++b) {
        const Real dev = s[a * d + b] - (a == b ? mean : 0);
        ss += dev * dev;
      }
    pressure->SetValue(static_cast<vtkIdType>(p), -mean);
    von_mises->SetValue(static_cast<vtkIdType>(p), std::sqrt(1.5 * ss));
  }
  data->AddArray(pressure);
  data->AddArray(von_mises);
}

vtkSmartPointer<vtkStringArray> string_array(const char* name, const std::vector<std::string>& values) {
  auto array = vtkSmartPointer<vtkStringArray>::New();
  array->SetName(name);
  for (const std::string& value : values) array->InsertNextValue(value);
  return array;
}

// The method, the material names and the units as field data; each point array's unit as its
// UNITS_LABEL too (VTK's place for it, which extracts do not keep).
void add_labels(const ParticleLabels* labels, vtkDataSet* piece) {
  if (!labels) return;
  vtkPointData* points = piece->GetPointData();
  std::vector<std::string> units;
  for (int a = 0; a < points->GetNumberOfArrays(); ++a) {
    vtkAbstractArray* array = points->GetAbstractArray(a);
    const auto unit = labels->units.find(array->GetName());
    if (unit == labels->units.end()) continue;
    units.push_back(unit->first + ": " + unit->second);
    array->GetInformation()->Set(vtkDataArray::UNITS_LABEL(), unit->second.c_str());
  }
  vtkFieldData* field = piece->GetFieldData();
  field->AddArray(string_array("method", {labels->method}));
  field->AddArray(string_array("material_names", labels->material_names));
  field->AddArray(string_array("units", units));
}

// Cells of `points_per_cell` consecutive or listed point ids, in VTK's offsets/connectivity form.
vtkSmartPointer<vtkCellArray> cells(std::size_t count, int points_per_cell, const std::int64_t* ids) {
  auto offsets = vtkSmartPointer<vtkIdTypeArray>::New();
  auto connectivity = vtkSmartPointer<vtkIdTypeArray>::New();
  offsets->SetNumberOfTuples(static_cast<vtkIdType>(count + 1));
  connectivity->SetNumberOfTuples(static_cast<vtkIdType>(count * points_per_cell));
  for (std::size_t c = 0; c <= count; ++c) offsets->SetValue(c, static_cast<vtkIdType>(c * points_per_cell));
  for (std::size_t i = 0; i < count * points_per_cell; ++i)
    connectivity->SetValue(i, static_cast<vtkIdType>(ids ? ids[i] : static_cast<std::int64_t>(i)));
  auto array = vtkSmartPointer<vtkCellArray>::New();
  array->SetData(offsets, connectivity);
  return array;
}

}  // namespace

vtkSmartPointer<vtkPolyData> particles_piece(const ParticleSet& particles, const ParticleLabels* labels) {
  auto piece = vtkSmartPointer<vtkPolyData>::New();
  piece->SetPoints(points_of(particles));
  piece->SetVerts(cells(particles.size(), 1, nullptr));
  add_point_fields(particles, piece->GetPointData());
  add_stress_invariants(particles, piece->GetPointData());
  add_labels(labels, piece);
  return piece;
}

vtkSmartPointer<vtkUnstructuredGrid> blocks_piece(const ParticleBlocks& blocks, const BlockGeometry& geometry,
                                                  int rank) {
  const int d = geometry.dimension, corners = d == 3 ? 8 : 4;
  // VTK's hexahedron and quad corner order: the bottom face counter-clockwise, then the top face.
  static const int kCorner[8][3] = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0},
                                    {0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 1}};
  const Real edge = geometry.block * geometry.dx;
  auto points = vtkSmartPointer<vtkPoints>::New();
  points->SetDataTypeToDouble();
  points->SetNumberOfPoints(static_cast<vtkIdType>(blocks.count() * corners));
  auto owner = vtkSmartPointer<vtkIntArray>::New();
  auto count = vtkSmartPointer<vtkIdTypeArray>::New();
  owner->SetName("rank"), count->SetName("particles");
  owner->SetNumberOfTuples(static_cast<vtkIdType>(blocks.count()));
  count->SetNumberOfTuples(static_cast<vtkIdType>(blocks.count()));
  for (std::size_t b = 0; b < blocks.count(); ++b) {
    const BlockCoord c = decode_block_key(blocks.keys[b]);
    for (int k = 0; k < corners; ++k) {
      double x[3] = {0, 0, 0};
      for (int a = 0; a < d; ++a) x[a] = geometry.origin[a] + (c[a] + kCorner[k][a]) * edge;
      points->SetPoint(static_cast<vtkIdType>(b * corners + k), x);
    }
    owner->SetValue(static_cast<vtkIdType>(b), rank);
    count->SetValue(static_cast<vtkIdType>(b), static_cast<vtkIdType>(blocks.particles(b)));
  }
  auto piece = vtkSmartPointer<vtkUnstructuredGrid>::New();
  piece->SetPoints(points);
  piece->SetCells(d == 3 ? VTK_HEXAHEDRON : VTK_QUAD, cells(blocks.count(), corners, nullptr));
  piece->GetCellData()->AddArray(owner);
  piece->GetCellData()->AddArray(count);
  return piece;
}

vtkSmartPointer<vtkUnstructuredGrid> mesh_piece(const TetMeshView& mesh, const ParticleLabels* labels) {
  if (!mesh.vertices || !mesh.tets || mesh.tets->size() % 4 != 0)
    throw Error("Catalyst mesh channel: a tetrahedral mesh needs vertices and four indices per tet");
  for (const std::int64_t v : *mesh.tets)
    if (v < 0 || static_cast<std::size_t>(v) >= mesh.vertices->size())
      throw Error("Catalyst mesh channel: tet vertex " + std::to_string(v) + " is not one of the " +
                  std::to_string(mesh.vertices->size()) + " vertices");
  auto piece = vtkSmartPointer<vtkUnstructuredGrid>::New();
  piece->SetPoints(points_of(*mesh.vertices));
  piece->SetCells(VTK_TETRA, cells(mesh.tets->size() / 4, 4, mesh.tets->data()));
  add_point_fields(*mesh.vertices, piece->GetPointData());
  add_stress_invariants(*mesh.vertices, piece->GetPointData());
  if (mesh.tet_fields)
    for (const TetField& field : *mesh.tet_fields) {  // e.g. the fem's "level": colour tets by it
      if (field.values.size() != mesh.tets->size() / 4)
        throw Error("Catalyst mesh channel: tet field " + field.name + " needs one value per tet");
      auto array = vtkSmartPointer<vtkIntArray>::New();
      array->SetName(field.name.c_str());
      array->SetNumberOfValues(static_cast<vtkIdType>(field.values.size()));
      for (std::size_t t = 0; t < field.values.size(); ++t)
        array->SetValue(static_cast<vtkIdType>(t), field.values[t]);
      piece->GetCellData()->AddArray(array);
    }
  add_labels(labels, piece);
  return piece;
}

}  // namespace nendo
