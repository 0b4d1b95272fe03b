// libFuzzer target on the scene loader (issue 12): any input either loads or is refused with a
// SceneError; a crash, a hang, a sanitizer report or any other exception is a bug. Inputs that
// found one are kept in tests/fuzz/regressions/ and loaded by SceneFuzzRegressions in every build.
#include <cstddef>
#include <cstdint>
#include <string>

#include "materials/Materials.hpp"
#include "materials/StvkMaterial.hpp"
#include "scene/SceneLoader.hpp"

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  nendo::register_mpm_material_schemas();
  nendo::register_fem_material_schemas();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    nendo::parse_scene(std::string(reinterpret_cast<const char*>(data), size), "/fuzz/scene.yaml");
  } catch (const nendo::SceneError&) {
  }
  return 0;
}
