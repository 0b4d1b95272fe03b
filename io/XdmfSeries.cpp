#include "io/XdmfSeries.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "core/Error.hpp"
#include "io/ParticleReader.hpp"
#include "io/TextFile.hpp"

namespace nendo {
namespace {

std::string escape_xml(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string full_precision(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

// NumberType and Precision of a field as XDMF declares it (uint64 as Int 8: see the header).
std::string number_type(FieldType type, bool single_precision = false) {
  switch (type) {
    case FieldType::Real:
      return single_precision ? "NumberType=\"Float\" Precision=\"4\""
                              : "NumberType=\"Float\" Precision=\"8\"";
    case FieldType::Int32:
      return "NumberType=\"Int\" Precision=\"4\"";
    case FieldType::UInt64:
      return "NumberType=\"Int\" Precision=\"8\"";
  }
  return "";
}

const char* attribute_type(int components) {
  switch (components) {
    case 1:
      return "Scalar";
    case 3:
      return "Vector";
    case 6:
      return "Tensor6";
    case 9:
      return "Tensor";
    default:
      return "Matrix";
  }
}

std::string dimensions(std::uint64_t count, int components) {
  return components == 1 ? std::to_string(count) : std::to_string(count) + " " + std::to_string(components);
}

void data_item(std::ostringstream& out, const std::string& indent, const std::string& file,
               const std::string& dataset, std::uint64_t count, int components, const std::string& type) {
  out << indent << "<DataItem Dimensions=\"" << dimensions(count, components) << "\" " << type
      << " Format=\"HDF\">" << escape_xml(file) << ":" << escape_xml(dataset) << "</DataItem>\n";
}

// A Uniform grid's geometry (/particles/position) and the particle fields as node attributes,
// from entry's file.
void nodes(std::ostringstream& out, const ParticleFileInfo& entry) {
  const std::string file = particle_file_name(entry.index);
  const std::uint64_t n = entry.count;
  out << "        <Geometry GeometryType=\"" << (entry.dimension == 2 ? "XY" : "XYZ") << "\">\n";
  for (const ParticleFileField& field : entry.fields)
    if (field.name == "position")
      data_item(out, "          ", file, "/particles/position", n, entry.dimension,
                number_type(FieldType::Real, field.single_precision));
  out << "        </Geometry>\n";
  for (const ParticleFileField& field : entry.fields) {
    if (field.name == "position") continue;
    out << "        <Attribute Name=\"" << escape_xml(field.name) << "\" AttributeType=\""
        << attribute_type(field.components) << "\" Center=\"Node\">\n";
    data_item(out, "          ", file, "/particles/" + field.name, n, field.components,
              number_type(field.type, field.single_precision));
    out << "        </Attribute>\n";
  }
}

// The XML of a temporal collection named name around grids.
std::string temporal_collection(const std::string& name, const std::string& grids) {
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n";
  out << "<Xdmf Version=\"3.0\">\n";
  out << "  <Domain>\n";
  out << "    <Grid Name=\"" << name << "\" GridType=\"Collection\" CollectionType=\"Temporal\">\n";
  out << grids;
  out << "    </Grid>\n";
  out << "  </Domain>\n";
  out << "</Xdmf>\n";
  return out.str();
}

// A time step's Grid up to its Topology: `elements` cells of `per_element` nodes listed in dataset.
void grid_head(std::ostringstream& grids, const char* prefix, const ParticleFileInfo& entry,
               const char* topology, const std::string& dataset, std::uint64_t elements, int per_element) {
  const std::string file = particle_file_name(entry.index);
  grids << "      <Grid Name=\"" << prefix << file.substr(10, 6) << "\" GridType=\"Uniform\">\n";
  grids << "        <Time Value=\"" << full_precision(entry.time) << "\"/>\n";
  grids << "        <Topology TopologyType=\"" << topology << "\" NumberOfElements=\"" << elements
        << "\" NodesPerElement=\"" << per_element << "\">\n";
  data_item(grids, "          ", file, dataset, elements, per_element, "NumberType=\"Int\" Precision=\"8\"");
  grids << "        </Topology>\n";
}

}  // namespace

XdmfSeries::XdmfSeries(std::string directory, std::vector<ParticleFileInfo> previous)
    : directory_(std::move(directory)), entries_(std::move(previous)) {
  std::stable_sort(entries_.begin(), entries_.end(),
                   [](const ParticleFileInfo& a, const ParticleFileInfo& b) { return a.index < b.index; });
}

std::string XdmfSeries::path() const {
  return (std::filesystem::path(directory_) / "particles.xdmf").string();
}

std::string XdmfSeries::mesh_path() const {
  return (std::filesystem::path(directory_) / "mesh.xdmf").string();
}

void XdmfSeries::add(const ParticleFileInfo& output) {
  if (output.index < 0)
    throw Error("particles.xdmf: an output needs an index (got " + std::to_string(output.index) + ")");
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                [&](const ParticleFileInfo& entry) { return entry.index >= output.index; }),
                 entries_.end());
  entries_.push_back(output);
  write();
}

std::string XdmfSeries::xml() const {
  std::ostringstream grids;
  for (const ParticleFileInfo& entry : entries_) {
    grid_head(grids, "particles_", entry, "Polyvertex", "/xdmf/polyvertex", entry.count, 1);
    nodes(grids, entry);
    grids << "      </Grid>\n";
  }
  return temporal_collection("particles", grids.str());
}

std::string XdmfSeries::mesh_xml() const {
  std::ostringstream grids;
  bool any = false;
  for (const ParticleFileInfo& entry : entries_) {
    if (!entry.has_mesh || entry.tets == 0) continue;
    any = true;
    const std::string file = particle_file_name(entry.index);
    const std::uint64_t t = entry.tets;
    grid_head(grids, "mesh_", entry, "Tetrahedron", "/mesh/tets", t, 4);
    nodes(grids, entry);
    for (const ParticleFileField& field : entry.tet_fields) {
      grids << "        <Attribute Name=\"" << escape_xml(field.name) << "\" AttributeType=\""
            << attribute_type(field.components) << "\" Center=\"Cell\">\n";
      data_item(grids, "          ", file, "/mesh/fields/" + field.name, t, field.components,
                number_type(field.type));
      grids << "        </Attribute>\n";
    }
    grids << "      </Grid>\n";
  }
  return any ? temporal_collection("mesh", grids.str()) : "";
}

void XdmfSeries::write() const {
  replace_text_file(path(), xml());
  const std::string mesh = mesh_xml();
  if (!mesh.empty()) replace_text_file(mesh_path(), mesh);
}

std::vector<ParticleFileInfo> XdmfSeries::scan(const std::string& directory, int before_index) {
  std::error_code code;
  if (!std::filesystem::is_directory(directory, code))
    throw Error("particles.xdmf: output directory '" + directory + "' does not exist");
  std::vector<ParticleFileInfo> found;
  for (const auto& item : std::filesystem::directory_iterator(directory)) {
    const int index = particle_file_index(item.path().filename().string());
    if (index < 0 || index >= before_index || !item.is_regular_file()) continue;
    ParticleFileInfo info = ParticleReader::describe(item.path().string());
    info.index = index;
    found.push_back(std::move(info));
  }
  std::sort(found.begin(), found.end(),
            [](const ParticleFileInfo& a, const ParticleFileInfo& b) { return a.index < b.index; });
  return found;
}

}  // namespace nendo
