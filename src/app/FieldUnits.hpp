#pragma once
// The SI unit of every particle field nendo shows to readers (output files, checkpoints, Catalyst):
// the one table to extend when a method adds a field. "1" marks a dimensionless number (a ratio,
// an index, a count, an id).
#include <map>
#include <string>

namespace nendo {

// The unit of field `name` in a run of `dimension` 2 or 3 (2D masses, volumes and densities are
// per metre of depth); "" for a field the table does not know.
std::string field_unit(const std::string& name, int dimension);

// Every field of the table with its unit.
std::map<std::string, std::string> field_units(int dimension);

}  // namespace nendo
