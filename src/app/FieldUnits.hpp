#pragma once
// The SI unit of every particle field nendo shows to readers (output files, checkpoints, Catalyst):
// the one table to extend when a method adds a field. "1" marks a dimensionless number (a ratio,
// an index, a count, an id).
#include <map>
#include <string>

namespace nendo {

// Every field of the table with its unit in a run of `dimension` 2 or 3 (2D masses and volumes
// are per metre of depth).
std::map<std::string, std::string> field_units(int dimension);

}  // namespace nendo
