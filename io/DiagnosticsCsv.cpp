#include "io/DiagnosticsCsv.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/CollectiveError.hpp"
#include "core/Error.hpp"
#include "core/Mpi.hpp"
#include "io/TextFile.hpp"

namespace nendo {
namespace {

const std::vector<std::string> kColumns = {
    "step",           "time",       "dt",         "particles",  "kinetic_energy",
    "elastic_energy", "momentum_x", "momentum_y", "momentum_z", "mass"};

std::string real(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

// The leading integer of a CSV line (its step), or nullopt when the line does not start with one.
std::optional<std::int64_t> leading_step(const std::string& line) {
  try {
    std::size_t used = 0;
    const long long step = std::stoll(line, &used);
    if (used < line.size() && line[used] != ',') return std::nullopt;
    return step;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

DiagnosticsCsv::DiagnosticsCsv(MPI_Comm comm, const std::string& directory,
                               std::vector<std::string> extra_columns,
                               std::optional<std::int64_t> resume_after_step)
    : comm_(comm),
      path_((std::filesystem::path(directory) / "diagnostics.csv").string()),
      columns_(kColumns),
      extra_count_(extra_columns.size()) {
  for (const std::string& name : extra_columns) {
    if (name.empty() || name.find_first_of(",\"\r\n") != std::string::npos)
      throw Error(path_ + ": '" + name + "' is not a valid diagnostics column name");
    columns_.push_back(name);
  }

  std::string error;
  if (mpi::rank(comm_) == 0) {
    // The kept rows of a restarted run, read before the file is truncated.
    std::vector<std::string> kept;
    if (resume_after_step) {
      std::ifstream in(path_);
      std::string line;
      if (in && std::getline(in, line)) {
        if (line != header())
          error = path_ + ": the header of the existing file does not match this run's columns (" + header() +
                  ")";
        while (error.empty() && std::getline(in, line)) {
          const std::optional<std::int64_t> step = leading_step(line);
          if (step && *step <= *resume_after_step) kept.push_back(line);
        }
      }
    }
    // The kept rows go through a temporary and a rename: a full disk leaves the old file whole.
    if (error.empty()) {
      std::string text = header() + "\n";
      for (const std::string& line : kept) text += line + "\n";
      try {
        replace_text_file(path_, text);
      } catch (const Error& e) {
        error = e.what();
      }
    }
    if (error.empty()) {
      file_ = std::fopen(path_.c_str(), "a");
      if (!file_) error = path_ + ": cannot open the diagnostics file: " + std::strerror(errno);
    }
  }
  raise_collectively(comm_, error);
}

DiagnosticsCsv::~DiagnosticsCsv() {
  if (file_) std::fclose(file_);
}

std::string DiagnosticsCsv::header() const {
  std::string line;
  for (std::size_t i = 0; i < columns_.size(); ++i) line += (i ? "," : "") + columns_[i];
  return line;
}

std::string DiagnosticsCsv::format(const DiagnosticsRow& row) const {
  if (row.extra.size() != extra_count_)
    throw Error(path_ + ": a row has " + std::to_string(row.extra.size()) + " extra values for " +
                std::to_string(extra_count_) + " extra columns");
  std::string line = std::to_string(row.step) + "," + real(row.time) + "," + real(row.dt) + "," +
                     std::to_string(row.particles) + "," + real(row.kinetic_energy) + "," +
                     real(row.elastic_energy) + "," + real(row.momentum[0]) + "," + real(row.momentum[1]) +
                     "," + real(row.momentum[2]) + "," + real(row.mass);
  for (double value : row.extra) line += "," + real(value);
  return line;
}

void DiagnosticsCsv::append(const DiagnosticsRow& row) {
  const std::string line = format(row) + "\n";  // throws alike on every rank
  std::string error;
  std::error_code code;
  const std::uintmax_t before = file_ ? std::filesystem::file_size(path_, code) : 0;
  if (file_ && (std::fputs(line.c_str(), file_) < 0 || std::fflush(file_) != 0)) {
    error = path_ + ": writing a diagnostics row failed: " + std::strerror(errno);
    // No half row: the file ends with the last whole one, and takes no more.
    std::fclose(file_);
    file_ = nullptr;
    if (code || ::truncate(path_.c_str(), static_cast<off_t>(before)) != 0)
      error += " (and cutting the half row failed)";
  }
  raise_collectively(comm_, error);
}

}  // namespace nendo
