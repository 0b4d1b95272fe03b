#pragma once
// nendo's data as VTK datasets, one piece per rank (the Catalyst channels of io/InSitu.hpp).
// Everything is copied: a script may keep a dataset after the call that received it.
#include <vtkSmartPointer.h>

#include "io/InSitu.hpp"

class vtkPolyData;
class vtkUnstructuredGrid;

namespace nendo {

// A vertex per particle, every field as point data, the stress invariants when "stress" is there;
// labels (may be null) as field data and units (io/InSitu.hpp).
vtkSmartPointer<vtkPolyData> particles_piece(const ParticleSet& particles,
                                             const ParticleLabels* labels = nullptr);
// The particle blocks as hexahedra (2D: quads), with cell data "rank" and "particles".
vtkSmartPointer<vtkUnstructuredGrid> blocks_piece(const ParticleBlocks& blocks, const BlockGeometry& geometry,
                                                  int rank);
// Tetrahedra over the vertices, with every vertex field as point data.
vtkSmartPointer<vtkUnstructuredGrid> mesh_piece(const TetMeshView& mesh,
                                                const ParticleLabels* labels = nullptr);

}  // namespace nendo
