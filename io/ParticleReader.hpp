#pragma once
// Reading a particle output file (layout in ParticleFile.hpp) back: for tests, `nendo info`, the
// XDMF series on restart, and restarts from output files.
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "decomposition/ParticleSet.hpp"
#include "io/ParticleFile.hpp"

namespace nendo {

// Rows [first, first + count) of a particle file.
struct RowRange {
  std::uint64_t first = 0;
  std::uint64_t count = 0;
};

class ParticleReader {
 public:
  // One process, no MPI: the header (attributes, dataset types and shapes) of the file at path.
  // index is taken from the file name (-1 if it is not particles_NNNNNN.h5). Throws nendo::Error
  // naming the file when it is not a readable particle file.
  static ParticleFileInfo describe(const std::string& path);

  // Collective over comm: rank r of P gets the particles [r N / P, (r + 1) N / P) in file order,
  // with every field in /particles (types and component counts as stored; "id" and "position"
  // first, the others in name order). info, when given, receives the header. With
  // verify_checksums, every dataset must carry a "checksum" attribute (ParticleFileOptions) that
  // matches its contents, else the file is reported as damaged. Errors are thrown on every rank
  // (nendo::CollectiveError) naming the file.
  static ParticleSet read(MPI_Comm comm, const std::string& path, ParticleFileInfo* info = nullptr,
                          bool verify_checksums = false);
  // The same, but each rank gets the rows it lists (ascending and disjoint, possibly none), in row
  // order; a range beyond the file's rows is an error.
  static ParticleSet read_rows(MPI_Comm comm, const std::string& path, const std::vector<RowRange>& rows,
                               ParticleFileInfo* info = nullptr, bool verify_checksums = false);

 private:
  using RowsOf = std::function<std::vector<RowRange>(std::uint64_t count)>;
  static ParticleSet read_selected(MPI_Comm comm, const std::string& path, const RowsOf& rows_of,
                                   ParticleFileInfo* info, bool verify_checksums);
};

}  // namespace nendo
