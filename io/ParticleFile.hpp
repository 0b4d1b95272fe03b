#pragma once
// The particle output file, shared by ParticleWriter, ParticleReader and XdmfSeries.
//
// DIR/particles_NNNNNN.h5 (NNNNNN = output index, 6 digits):
//   /                     attributes time (float64), step (int64), dimension (int32), and method
//                         (string) when the writer knows it
//   /particles            attribute count (uint64) = N, the global number of particles
//   /particles/<field>    one dataset per field, shape (N,) for 1 component, (N, components)
//                         otherwise; float64 (float32 in single precision), int32 or uint64 as the
//                         field is; attribute unit (string, SI: "m", "m/s", "Pa", "1" for
//                         dimensionless) when the writer knows it. /particles/material carries the
//                         material names (attribute names, strings, index = material). Compressed
//                         files store every dataset in chunks through HDF5's shuffle and deflate
//                         filters, which HDF5 decodes on any read. "id" and "position" are always
//                         present. Particles appear in rank order, each rank's in its own order:
//                         sort by id to compare files written on different rank counts.
//   /xdmf/polyvertex      int64 0..N-1, the Polyvertex connectivity of particles.xdmf (see
//                         XdmfSeries.hpp for why it is explicit); not a particle field.
// Runs of mesh methods (FEM) add the mesh, which mesh.xdmf shows:
//   /mesh                 attribute count (uint64) = T, the global number of tets
//   /mesh/tets            int64 (T, 4): each tet's corners as rows of the /particles datasets
//   /mesh/fields/<name>   int32 (T,): a value per tet, e.g. "level" (the FEM hierarchy level)
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "decomposition/ParticleSet.hpp"

namespace nendo {

struct ParticleFileField {
  std::string name;
  FieldType type = FieldType::Real;
  int components = 1;
  bool single_precision = false;  // a Real field stored as float32
  std::string unit;               // "" when the file does not say
};

// Chunked datasets through HDF5's shuffle and deflate filters, which every HDF5 build decodes.
enum class Compression { None, Deflate };

// How the datasets of a particle file are stored. Checkpoints keep the default: exact doubles.
struct ParticleStorage {
  bool single_precision = false;  // Real fields as float32
  Compression compression = Compression::None;
  int deflate_level = 1;  // 1 (fastest) .. 9 (smallest)
};

// What a particle file says about its contents besides the values.
struct ParticleLabels {
  std::string method;                        // root attribute "method"; "" for none
  std::vector<std::string> material_names;   // attribute "names" of /particles/material
  std::map<std::string, std::string> units;  // field name -> attribute "unit" of its dataset
};

// What one particles_NNNNNN.h5 holds: enough to index it in the XDMF series without reading data.
struct ParticleFileInfo {
  int index = -1;  // output index; -1 when the file name does not carry one
  double time = 0;
  std::int64_t step = 0;
  int dimension = 3;
  std::uint64_t count = 0;                    // N, the global number of particles
  std::vector<ParticleFileField> fields;      // every /particles dataset, "id" and "position" included
  bool has_mesh = false;                      // the file holds /mesh
  std::uint64_t tets = 0;                     // T
  std::vector<ParticleFileField> tet_fields;  // every /mesh/fields dataset
  std::string method;                         // "" when the file does not say
  std::vector<std::string> material_names;    // empty when the file does not say
};

// Names with a fixed-width number, "<prefix><number><suffix>" (outputs, checkpoints). The name
// throws nendo::Error, calling the number `what`, when it does not fit; the number of a path (its
// directory part ignored) is -1 for any other name.
std::string numbered_file_name(const std::string& prefix, std::int64_t number, int digits,
                               const std::string& suffix, const std::string& what);
std::int64_t numbered_file_number(const std::string& path, const std::string& prefix, int digits,
                                  const std::string& suffix);

// "particles_000042.h5" for index 42. Throws nendo::Error for an index outside [0, 999999].
std::string particle_file_name(int index);
// The index of a file name made by particle_file_name, or -1 for any other name (a directory part
// is ignored; "particles_000042.h5.tmp" is not an output).
int particle_file_index(const std::string& file_name);

}  // namespace nendo
