#pragma once
// A Gmsh MSH file's tetrahedra and nodes, read in chunks of bounded size so that a mesh larger
// than one process can hold is read by one process (issue 34: a rank-0 reader streaming to the
// others, src/bodies/TetMeshFile.hpp). Gmsh itself (io/GmshMesh.hpp) reads only whole meshes.
//
// Formats: MSH 4.1 (ASCII and binary) and MSH 2.x ASCII (2.2 is what most tools write); a file in
// another format or version is for Gmsh (`streams` is false). Tets are the elements of types 4
// (4-node) and 11 (10-node, whose corners are its first 4 nodes), in file order; other elements
// are skipped. Errors are nendo::Error naming the file.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/Types.hpp"

namespace nendo {

class MshReader {
 public:
  // Whether `path` is an MSH file this reader reads (false for a missing or unreadable file too).
  static bool streams(const std::string& path);

  // Opens the file and finds its $Nodes and $Elements sections.
  explicit MshReader(const std::string& path);
  ~MshReader();
  MshReader(const MshReader&) = delete;
  MshReader& operator=(const MshReader&) = delete;

  const std::string& path() const { return path_; }

  // The largest node tag (MSH 4.1: from the header; MSH 2: a pass over the nodes).
  std::int64_t max_node_tag();

  // Starts reading the tets from the first one; then each call appends the next at most `count`
  // tets' 4 corner node tags to `corners` (cleared first), and returns false once none are left.
  void rewind_tets();
  bool next_tets(std::size_t count, std::vector<std::int64_t>& corners);

  // Likewise for the nodes: their tags and x, y, z.
  void rewind_nodes();
  bool next_nodes(std::size_t count, std::vector<std::int64_t>& tags, std::vector<Real>& xyz);

 private:
  class Input;
  void read_format();
  void find_sections();
  void skip_section(const std::string& name);
  std::uint64_t count();
  void begin_section(long at);
  bool next_block(bool elements);
  [[noreturn]] void fail(const std::string& what) const;

  std::string path_;
  std::unique_ptr<Input> in_;
  // MSH 4 nodes: a block's tags come before its coordinates, which this second input reads, so
  // that a block of any size is read in chunks too.
  std::unique_ptr<Input> coordinates_;
  int major_ = 0;
  bool binary_ = false;
  long nodes_at_ = -1, elements_at_ = -1;  // file offsets of the sections' contents
  // The section being read: blocks left (MSH 4; MSH 2 has one), the current block's items left,
  // and its element type (elements) or parametric coordinates per node (nodes).
  std::uint64_t blocks_left_ = 0, in_block_ = 0;
  int block_type_ = 0, block_parameters_ = 0;
};

}  // namespace nendo
