#pragma once
// Reading a scene file (DESIGN.md "Scenes and the CLI") into a validated Scene.
#include <string>
#include <vector>

#include "scene/Scene.hpp"
#include "scene/SceneError.hpp"

namespace nendo {

// Validates every key against the schema, fills defaults and throws SceneError with the first
// problem found in document order. `path` names the scene in errors and is the directory that
// relative file paths start from; `overrides` are `key.path=value` strings (nendo run --set),
// applied in order before validation. No output, no MPI: call it on every rank or on one.
Scene parse_scene(const std::string& text, const std::string& path,
                  const std::vector<std::string>& overrides = {});

// Reads the file at `path`, then parse_scene().
Scene load_scene(const std::string& path, const std::vector<std::string>& overrides = {});

// Where a loaded scene's key was given, for errors found after loading: "--set key=value" for the
// last override that set it (or a section holding it), else "file:line", else the file.
std::string scene_location(const Scene& scene, const std::string& key_path);

// The scene's YAML with every override applied (comments dropped): what a run's scene.yaml holds.
std::string scene_as_run(const Scene& scene);

}  // namespace nendo
