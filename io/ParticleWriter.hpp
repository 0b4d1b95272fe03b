#pragma once
// Particle output: one HDF5 file per output time, written collectively by every rank into a single
// file (layout in ParticleFile.hpp), plus the XDMF time series over all of them (XdmfSeries).
//
// Each rank writes its particles as one hyperslab at its global offset (exclusive scan of the
// counts); ranks without particles take part in every collective call with an empty selection,
// and an output with no particles at all is a valid file with (0,) / (0, c) datasets.
//
// The file is written as particles_NNNNNN.h5.tmp and renamed by rank 0 after every rank has
// closed it, so a run killed mid-output never leaves a complete-looking file; particles.xdmf is
// rewritten (also through a temporary) only after the rename.
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "decomposition/ParticleSet.hpp"
#include "io/InSitu.hpp"
#include "io/ParticleFile.hpp"
#include "io/XdmfSeries.hpp"

namespace nendo {

class Hdf5File;

// A tetrahedral mesh over the particles of an output file (/mesh, ParticleFile.hpp): this rank's
// tets as four rows of the file's /particles datasets each (global rows: a rank's particles
// start at the exclusive scan of the counts), and a value per tet for each field, the same
// field names on every rank. app/MeshOutput.hpp makes one from a method's mesh.
struct FileMesh {
  std::vector<std::int64_t> tets;
  std::vector<TetField> tet_fields;
};

// Room for one group or dataset of a particle file besides its data: its header, a few attributes
// and the heap of its strings (an upper bound, for the disk space a file reserves before writing).
constexpr std::uint64_t kHdf5ObjectBytes = 4 << 10;

// What write_file adds to a plain output file; a checkpoint (io/Checkpoint.hpp) uses all of it.
struct ParticleFileOptions {
  bool polyvertex = true;   // /xdmf/polyvertex, the connectivity particles.xdmf points to
  bool checksums = false;   // a "checksum" attribute (uint64, io/Checksum.hpp) on each /particles dataset
  ParticleStorage storage;  // float32 and compression for outputs; checkpoints keep the default
  ParticleLabels labels;    // the method, units and material names the file carries
  bool sync = false;        // flushed to the disk (MPI_File_sync, fsync) before the rename, and the
                            // directory after it
  const FileMesh* mesh = nullptr;  // /mesh, after the particles; given on every rank or on none
  // Called collectively after the particles are written, before the sync and the close: more
  // groups and attributes (a checkpoint's /meta and its completeness marker).
  std::function<void(const Hdf5File&)> finish;
  // An upper bound of the bytes `finish` adds: its data plus kHdf5ObjectBytes per group or dataset.
  std::uint64_t finish_bytes = 0;
};

class ParticleWriter {
 public:
  // Collective. Outputs go to directory, which must exist (the writer does not create it).
  // fields: the fields written besides "id" and "position", which are always written (listing
  // them too is harmless). first_index: the index of the first output; a restart passes the
  // next index and the XDMF series then starts from the complete outputs already in directory
  // with a smaller index (rank 0 re-reads their headers, XdmfSeries::scan). storage and labels
  // apply to every file (ParticleFileOptions).
  ParticleWriter(MPI_Comm comm, std::string directory, std::vector<std::string> fields, int first_index = 0,
                 ParticleStorage storage = {}, ParticleLabels labels = {});

  // Collective. Writes directory/particles_NNNNNN.h5 with NNNNNN = next_index(), adds it to
  // directory/particles.xdmf (and a mesh to directory/mesh.xdmf) and advances next_index().
  // Throws nendo::Error on every rank, naming the path, when the directory is missing or not
  // writable, a listed field is missing or differs between ranks, a tet corner is not a row of
  // the file, or HDF5 fails.
  ParticleFileInfo write(const ParticleSet& particles, double time, std::int64_t step,
                         const FileMesh* mesh = nullptr);

  int next_index() const { return next_index_; }
  const std::string& directory() const { return directory_; }
  const std::vector<std::string>& fields() const { return fields_; }

  // Collective. Writes one particle file at path (through path + ".tmp" and a rename), with
  // "id", "position" and the given fields, and no XDMF. info.index is set to index. Before any
  // data, rank 0 reserves an upper bound of the file's size on the disk (io/FileSpace.hpp): a file
  // system that cannot hold it fails the write on every rank with a message naming path, the
  // bytes needed and the bytes free, and none of the collective writes can meet a full disk. On
  // failure the temporary file is removed and any file already at path is left as it was.
  static ParticleFileInfo write_file(MPI_Comm comm, const std::string& path, const ParticleSet& particles,
                                     const std::vector<std::string>& fields, double time, std::int64_t step,
                                     int index = -1, const ParticleFileOptions& options = {});

 private:
  MPI_Comm comm_;
  std::string directory_;
  std::vector<std::string> fields_;
  int next_index_;
  ParticleStorage storage_;
  ParticleLabels labels_;
  std::optional<XdmfSeries> series_;  // rank 0 only
};

}  // namespace nendo
