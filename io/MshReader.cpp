#include "io/MshReader.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>

#include "core/Error.hpp"

namespace nendo {
namespace {

constexpr int kTet4 = 4, kTet10 = 11;  // Gmsh element types

// Nodes per element of Gmsh's element types 1-31 (index = type), for skipping binary elements.
constexpr int kNodesPerType[] = {0, 2,  3,  4,  4, 8,  6,  5,  3,  6,  9, 10, 27, 18, 14, 1,
                                 8, 20, 15, 13, 9, 10, 12, 15, 15, 21, 4, 5,  6,  20, 35, 56};

// The parametric coordinates a node on an entity of dimension `dim` carries (MSH 4.1).
int parameters(int dim) { return dim; }

}  // namespace

// The file through a buffer of its own, read as ASCII tokens and lines or as binary values.
class MshReader::Input {
 public:
  explicit Input(const std::string& path) : file_(std::fopen(path.c_str(), "rb")), buffer_(1 << 20) {}
  ~Input() {
    if (file_) std::fclose(file_);
  }
  Input(const Input&) = delete;
  Input& operator=(const Input&) = delete;

  bool open() const { return file_ != nullptr; }
  long tell() const { return start_ + static_cast<long>(at_); }
  void seek(long offset) {
    std::fseek(file_, offset, SEEK_SET);
    start_ = offset, at_ = end_ = 0;
  }
  // The next line without its end ("\\r\\n" or "\\n"); false at the end of the file.
  bool line(std::string& text) {
    text.clear();
    for (;;) {
      if (at_ == end_ && !fill()) return !text.empty();
      const char* from = buffer_.data() + at_;
      const void* newline = std::memchr(from, '\n', end_ - at_);
      const std::size_t n = newline ? static_cast<const char*>(newline) - from : end_ - at_;
      text.append(from, n);
      at_ += n;
      if (newline) {
        ++at_;
        if (!text.empty() && text.back() == '\r') text.pop_back();
        return true;
      }
    }
  }
  // The next whitespace-separated token, parsed as T; false if there is none or it is not a T.
  template <class T>
  bool token(T& value) {
    while (true) {
      if (at_ == end_ && !fill()) return false;
      const char c = buffer_[at_];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') break;
      ++at_;
    }
    if (end_ - at_ < 64 && !keep_and_fill()) return false;
    const auto [next, error] = std::from_chars(buffer_.data() + at_, buffer_.data() + end_, value);
    if (error != std::errc()) return false;
    at_ = next - buffer_.data();
    return true;
  }
  template <class T>
  bool raw(T& value) {
    return bytes(&value, sizeof value);
  }
  bool bytes(void* to, std::size_t n) {
    auto* out = static_cast<char*>(to);
    while (n > 0) {
      if (at_ == end_ && !fill()) return false;
      const std::size_t take = std::min(n, end_ - at_);
      std::memcpy(out, buffer_.data() + at_, take);
      out += take, n -= take, at_ += take;
    }
    return true;
  }
  void skip(long n) { seek(tell() + n); }

 private:
  bool fill() {
    start_ += static_cast<long>(end_);
    at_ = 0;
    end_ = std::fread(buffer_.data(), 1, buffer_.size(), file_);
    return end_ > 0;
  }
  // Moves the unread bytes to the front and reads more behind them, so that a token is whole.
  bool keep_and_fill() {
    const std::size_t left = end_ - at_;
    std::memmove(buffer_.data(), buffer_.data() + at_, left);
    start_ += static_cast<long>(at_);
    at_ = 0;
    end_ = left + std::fread(buffer_.data() + left, 1, buffer_.size() - left, file_);
    return end_ > 0;
  }

  std::FILE* file_;
  std::vector<char> buffer_;
  long start_ = 0;  // the file offset of buffer_[0]
  std::size_t at_ = 0, end_ = 0;
};

bool MshReader::streams(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::string line, version;
  while (std::getline(file, line) && (line.empty() || line == "\r")) {
  }
  if (line.rfind("$MeshFormat", 0) != 0) return false;
  int type = -1, size = 0;
  if (!(file >> version >> type >> size) || size != 8) return false;
  return version == "4.1" || (version.rfind("2.", 0) == 0 && type == 0);
}

MshReader::MshReader(const std::string& path)
    : path_(path), in_(std::make_unique<Input>(path)), coordinates_(std::make_unique<Input>(path)) {
  if (!in_->open()) fail("cannot open it");
  read_format();
  find_sections();
}

MshReader::~MshReader() = default;

void MshReader::fail(const std::string& what) const { throw Error("the mesh file " + path_ + ": " + what); }

void MshReader::read_format() {
  std::string line;
  while (in_->line(line) && line.empty()) {
  }
  if (line != "$MeshFormat") fail("it is not a Gmsh MSH file (no $MeshFormat first)");
  if (!in_->line(line)) fail("it ends in $MeshFormat");
  char version[16] = {};
  int type = -1, size = 0;
  if (std::sscanf(line.c_str(), "%15s %d %d", version, &type, &size) != 3 || size != 8)
    fail("its format line '" + line + "' is not 'version file-type 8'");
  binary_ = type == 1;
  major_ = version[0] - '0';
  if (!((std::strcmp(version, "4.1") == 0) || (major_ == 2 && !binary_)))
    fail("MSH " + std::string(version) + (binary_ ? " binary" : "") +
         " is not streamed (MSH 4.1 and 2.x ASCII are); Gmsh reads it whole");
  if (binary_) {
    int one = 0;
    if (!in_->raw(one) || one != 1) fail("its binary data has the other byte order");
  }
}

void MshReader::find_sections() {
  std::string line;
  while (in_->line(line)) {
    if (line.empty() || line[0] != '$' || line.rfind("$End", 0) == 0) continue;
    const std::string name = line.substr(1);
    if (name == "Nodes") nodes_at_ = in_->tell();
    if (name == "Elements") elements_at_ = in_->tell();
    skip_section(name);
  }
  if (nodes_at_ < 0) fail("it has no $Nodes section");
  if (elements_at_ < 0) fail("it has no $Elements section");
}

// Past "$End<name>". Binary nodes and elements are skipped block by block (their bytes could hold
// anything); the other sections, and ASCII ones, line by line.
void MshReader::skip_section(const std::string& name) {
  if (binary_ && (name == "Nodes" || name == "Elements")) {
    const bool elements = name == "Elements";
    begin_section(in_->tell());
    while (next_block(elements)) {
      const long per = elements ? 8 * (1 + kNodesPerType[block_type_]) : 8 + 8 * (3 + block_parameters_);
      in_->skip(per * static_cast<long>(in_block_));
      in_block_ = 0;
    }
  }
  const std::string end = "$End" + name;
  std::string line;
  while (in_->line(line))
    if (line == end) return;
  fail("its $" + name + " section has no " + end);
}

std::uint64_t MshReader::count() {
  std::uint64_t n = 0;
  if (binary_ ? !in_->raw(n) : !in_->token(n)) fail("a count is missing or not a number");
  return n;
}

// Reads the section header at `at`: MSH 4 "blocks items min-tag max-tag", MSH 2 "items".
void MshReader::begin_section(long at) {
  in_->seek(at);
  in_block_ = 0;
  if (major_ == 2) {
    blocks_left_ = 0, in_block_ = count();
    return;
  }
  blocks_left_ = count();
  for (int k = 0; k < 3; ++k) count();
}

// Moves to the next block (MSH 4) with items in it; false at the section's end.
bool MshReader::next_block(bool elements) {
  while (in_block_ == 0) {
    if (blocks_left_ == 0) return false;
    --blocks_left_;
    int dim = 0, tag = 0, third = 0;
    bool ok = binary_ ? in_->raw(dim) && in_->raw(tag) && in_->raw(third)
                      : in_->token(dim) && in_->token(tag) && in_->token(third);
    if (!ok) fail("a block header is cut short");
    in_block_ = count();
    std::string rest;
    if (!binary_) in_->line(rest);  // the items start on the next line
    if (elements) {
      block_type_ = third;
      if (binary_ && (third <= 0 || third >= static_cast<int>(std::size(kNodesPerType))))
        fail("element type " + std::to_string(third) + " is not one nendo can skip in a binary file");
    } else {
      block_parameters_ = third ? parameters(dim) : 0;
    }
  }
  return true;
}

std::int64_t MshReader::max_node_tag() {
  if (major_ == 4) {
    in_->seek(nodes_at_);
    for (int k = 0; k < 3; ++k) count();
    return static_cast<std::int64_t>(count());
  }
  std::int64_t most = 0;
  std::vector<std::int64_t> tags;
  std::vector<Real> xyz;
  rewind_nodes();
  while (next_nodes(1 << 16, tags, xyz))
    for (std::int64_t tag : tags) most = std::max(most, tag);
  return most;
}

void MshReader::rewind_tets() { begin_section(elements_at_); }

bool MshReader::next_tets(std::size_t count, std::vector<std::int64_t>& corners) {
  corners.clear();
  std::string rest;
  while (corners.size() < 4 * count && (major_ == 2 ? in_block_ > 0 : next_block(true))) {
    --in_block_;
    if (major_ == 2) {  // tag type ntags tags... nodes...
      std::int64_t tag = 0, value = 0;
      int type = 0, tags = 0;
      if (!in_->token(tag) || !in_->token(type) || !in_->token(tags)) fail("an element line is cut short");
      for (int k = 0; k < tags; ++k) in_->token(value);
      if (type == kTet4 || type == kTet10)
        for (int c = 0; c < 4; ++c) {
          if (!in_->token(value)) fail("element " + std::to_string(tag) + " has too few nodes");
          corners.push_back(value);
        }
      in_->line(rest);
      continue;
    }
    const bool tet = block_type_ == kTet4 || block_type_ == kTet10;
    if (binary_) {
      const int nodes = kNodesPerType[block_type_];
      if (!tet) {
        in_->skip(8 * (1 + nodes) * static_cast<long>(in_block_ + 1));
        in_block_ = 0;
        continue;
      }
      std::uint64_t value[11];
      if (!in_->bytes(value, 8 * (1 + nodes))) fail("an element is cut short");
      for (int c = 0; c < 4; ++c) corners.push_back(static_cast<std::int64_t>(value[1 + c]));
    } else {
      std::int64_t value = 0;
      if (tet) {
        in_->token(value);
        for (int c = 0; c < 4; ++c) {
          if (!in_->token(value)) fail("element " + std::to_string(value) + " has too few nodes");
          corners.push_back(value);
        }
      }
      in_->line(rest);
    }
  }
  return !corners.empty();
}

void MshReader::rewind_nodes() {
  begin_section(nodes_at_);
  coordinates_->seek(in_->tell());
}

bool MshReader::next_nodes(std::size_t count, std::vector<std::int64_t>& tags, std::vector<Real>& xyz) {
  tags.clear(), xyz.clear();
  if (major_ == 2) {
    for (; in_block_ > 0 && tags.size() < count; --in_block_) {
      std::int64_t tag = 0;
      Real x[3];
      if (!in_->token(tag) || !in_->token(x[0]) || !in_->token(x[1]) || !in_->token(x[2]))
        fail("a node line is cut short");
      tags.push_back(tag), xyz.insert(xyz.end(), x, x + 3);
    }
    return !tags.empty();
  }
  while (tags.size() < count) {
    if (in_block_ == 0) {
      // The next block's header is where the coordinates of the last one ended.
      in_->seek(coordinates_->tell());
      if (!next_block(false)) break;
      // Its coordinates start after its tags.
      coordinates_->seek(in_->tell());
      if (binary_) {
        coordinates_->skip(8 * static_cast<long>(in_block_));
      } else {
        std::string line;
        for (std::uint64_t k = 0; k < in_block_; ++k) coordinates_->line(line);
      }
    }
    for (; in_block_ > 0 && tags.size() < count; --in_block_) {
      std::uint64_t tag = 0;
      Real x[6];
      const int n = 3 + block_parameters_;
      bool ok = binary_ ? in_->raw(tag) && coordinates_->bytes(x, 8 * n) : in_->token(tag);
      for (int c = 0; !binary_ && ok && c < n; ++c) ok = coordinates_->token(x[c]);
      if (!ok) fail("a node is cut short");
      tags.push_back(static_cast<std::int64_t>(tag)), xyz.insert(xyz.end(), x, x + 3);
    }
  }
  return !tags.empty();
}

}  // namespace nendo
