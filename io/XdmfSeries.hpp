#pragma once
// DIR/particles.xdmf: an XDMF 3 temporal collection over the particle files, so that ParaView
// (Xdmf3ReaderS / Xdmf3ReaderT) and VisIt open a whole run as one time series. Runs of mesh
// methods also get DIR/mesh.xdmf, the same over the files' tetrahedral meshes (/mesh).
//
// The file is rewritten whole at every output from the in-memory list of entries, through a
// temporary and a rename, so it is always complete, valid XML. Only one process (rank 0) keeps an
// XdmfSeries; it does no MPI. Paths inside are relative to DIR.
//
// Choices made for ParaView 5.11 (VTK 9.2 vtkXdmf3DataSet), written down because each one avoids
// a silent failure there:
//  - Topology is Polyvertex with an explicit connectivity DataItem (/xdmf/polyvertex = 0..N-1).
//    The XDMF 3 library counts Polyvertex elements as the size of the connectivity array, so a
//    Topology without one yields points but zero cells, and ParaView renders nothing.
//  - Vectors: VTK takes each node attribute's component count from its data (values / points)
//    and makes an Attribute the active vector only when it is AttributeType="Vector" with exactly
//    3 components. XDMF defines Vector as 3 components, and the legacy XDMF 2 reader forces
//    Vector to 3 (misreading an N x 2 array). So 3-component fields are "Vector", while 2D
//    vectors (and any other width) are "Matrix" with Dimensions "N 2", which the XDMF 3 readers
//    load as a 2-component point array named after the field (X, Y, Magnitude in ParaView; a
//    Calculator makes a 3D vector for glyphs). 9 components are "Tensor", 6 "Tensor6", 1 "Scalar".
//  - uint64 fields (the id) are declared NumberType="Int" Precision="8": the XDMF 3 HDF5
//    controller has no UInt64 read path (it throws "Unknown XdmfArrayType"), while HDF5 converts
//    the stored uint64 to int64 on read; ids stay below 2^63.
//  - Floating fields are declared NumberType="Float" with Precision="8", or "4" for the float32
//    of single-precision outputs: the reader takes the stored type from the declaration.
//  - Geometry is "XY" in 2D (VTK pads z = 0) and "XYZ" in 3D, from /particles/position.
//  - The mesh is a series of its own, not a second grid per time step in particles.xdmf: a
//    spatial collection of both makes the reader's output a vtkMultiBlockDataSet with every
//    point twice and the particles' vertex cells counted with the tets. Its grids (Topology
//    Tetrahedron over /mesh/tets, the file's rows of /particles) share the particle files'
//    geometry and node attributes; the tet fields are Center="Cell" attributes, and a node and
//    a cell attribute may share a name ("level" of a node and of a tet). Outputs with no tets
//    are left out of mesh.xdmf.
#include <string>
#include <vector>

#include "io/ParticleFile.hpp"

namespace nendo {

class XdmfSeries {
 public:
  // previous: the outputs already in the series (a restart passes scan(directory, next_index)).
  explicit XdmfSeries(std::string directory, std::vector<ParticleFileInfo> previous = {});

  // Adds one output and rewrites DIR/particles.xdmf (and DIR/mesh.xdmf). Entries with an index >=
  // output.index are dropped first: a restarted run rewrites them.
  void add(const ParticleFileInfo& output);
  // Rewrites DIR/particles.xdmf from entries(), and DIR/mesh.xdmf when an entry has tets
  // (temporary + rename). Throws nendo::Error naming the path on failure.
  void write() const;

  const std::vector<ParticleFileInfo>& entries() const { return entries_; }
  std::string path() const;
  std::string mesh_path() const;
  // The XML text of particles.xdmf, and of mesh.xdmf ("" when no entry has tets).
  std::string xml() const;
  std::string mesh_xml() const;

  // The complete outputs particles_NNNNNN.h5 in directory with index < before_index, in index
  // order, read from their headers (one process, no MPI). A missing directory is an error;
  // an unreadable file is an error naming it.
  static std::vector<ParticleFileInfo> scan(const std::string& directory, int before_index);

 private:
  std::string directory_;
  std::vector<ParticleFileInfo> entries_;
};

}  // namespace nendo
