#pragma once
#include <string>

namespace nendo {

// docs/scene-reference.md: every scene key with its type, default, unit, bounds and meaning,
// generated from the schema the loader validates against.
std::string scene_reference_markdown();

}  // namespace nendo
