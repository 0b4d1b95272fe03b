// A method, its material model and its keys plug into the scene format from one file, as the
// methods in src/methods/ do: this binary links the scene library alone, registers a toy method
// below, and the loader, the checks and the reference read it without a line of src/scene/.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scene/MaterialSchema.hpp"
#include "scene/SceneError.hpp"
#include "scene/SceneLoader.hpp"
#include "scene/SceneReference.hpp"
#include "scene/SceneRegistry.hpp"

namespace nendo {
namespace {

// The toy method's settings: each key's default is the field's initial value.
struct ToySettings {
  Real stiffness = 2.5;
  int sweeps = 3;
  std::string mode = "soft";
};

// Its keys of a body.
struct ToyBody {
  Real glue = 0;
};

MethodSchema toy_schema() {
  MethodSchema method;
  method.name = "toy";
  method.dimensions = {2};
  method.dimension_note = "a toy";
  method.sections = {method_section(
      "toy", "a toy method", "A method registered by a test.",
      SettingsKeys<ToySettings>()
          .add(KeySchema::real("stiffness", "how stiff").measured_in("Pa").above(0), &ToySettings::stiffness)
          .add(KeySchema::integer("sweeps", "how many sweeps").at_least(1), &ToySettings::sweeps)
          .add(KeySchema::choice("mode", {"soft", "hard"}, "which mode"), &ToySettings::mode))};
  method.body = method_body_keys(
      SettingsKeys<ToyBody>().add(KeySchema::real("glue", "how sticky").at_least(0), &ToyBody::glue));
  method.materials = {"putty"};
  method.check = [](const SceneCheck& check) {
    if (check.scene.sections.get<ToySettings>().sweeps > 2 * static_cast<int>(check.scene.bodies.size()) + 8)
      check.fail("toy.sweeps", "is more than a toy needs");
  };
  return method;
}

[[maybe_unused]] const bool registered = [] {
  register_method(toy_schema());
  register_material_model(
      {"putty", "a toy material", {KeySchema::real("density", "density").defaults_to("1")}});
  register_material_model({"clay", "another", {KeySchema::real("density", "density").defaults_to("1")}});
  return true;
}();

const std::string toy_scene = R"(nendo: 1
method: toy
dimension: 2
time: {end: 1.0, dt: 0.1}
grid: {dx: 0.1}
materials:
  blob: {model: putty}
bodies:
  - {shape: box, min: [0, 0], max: [1, 1], material: blob, glue: 0.5}
)";

std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    parse_scene(text, "toy.yaml", overrides);
  } catch (const SceneError& error) {
    return error.what();
  }
  return "no error";
}

TEST(SceneRegistry, AMethodRegisteredFromItsOwnFileIsLoadedWithItsDefaults) {
  const Scene scene = parse_scene(toy_scene, "toy.yaml");
  EXPECT_EQ(scene.method, "toy");
  EXPECT_EQ(scene.sections.get<ToySettings>().stiffness, 2.5);
  EXPECT_EQ(scene.sections.get<ToySettings>().sweeps, 3);
  EXPECT_EQ(scene.bodies.at(0).method_keys.get<ToyBody>().glue, 0.5);
  const Scene set = parse_scene(toy_scene, "toy.yaml", {"toy.stiffness=7", "toy.mode=hard"});
  EXPECT_EQ(set.sections.get<ToySettings>().stiffness, 7);
  EXPECT_EQ(set.sections.get<ToySettings>().mode, "hard");
}

TEST(SceneRegistry, ItsKeysAreCheckedLikeTheSpines) {
  EXPECT_EQ(error_of(toy_scene, {"toy.stifness=1"}),
            "--set toy.stifness=1: key 'toy.stifness': unknown key (did you mean 'stiffness'?)");
  EXPECT_EQ(error_of(toy_scene, {"toy.stiffness=0"}),
            "--set toy.stiffness=0: key 'toy.stiffness': must be > 0 (got 0)");
  EXPECT_EQ(error_of(toy_scene, {"bodies.0.glue=-1"}),
            "--set bodies.0.glue=-1: key 'bodies.0.glue': must be >= 0 (got -1)");
  EXPECT_EQ(error_of(toy_scene, {"dimension=3", "bodies.0.min=[0,0,0]", "bodies.0.max=[1,1,1]"}),
            "--set dimension=3: key 'dimension': toy is three-dimensional (a toy)");
}

TEST(SceneRegistry, ItsWholeSceneCheckRunsAtLoadTimeAndNamesTheKey) {
  EXPECT_EQ(error_of(toy_scene, {"toy.sweeps=11"}),
            "--set toy.sweeps=11: key 'toy.sweeps': is more than a toy needs");
  EXPECT_EQ(error_of(toy_scene + "toy: {sweeps: 11}\n"),
            "toy.yaml:10: key 'toy.sweeps': is more than a toy needs");
}

TEST(SceneRegistry, ItsBodiesTakeOnlyTheMaterialModelsItLists) {
  EXPECT_EQ(error_of(toy_scene, {"materials.blob={model: clay}"}),
            "toy.yaml:9: key 'bodies.0.material': material 'blob' is clay; the toy method's materials are "
            "model putty");
}

TEST(SceneRegistry, TheReferenceDocumentsIt) {
  const std::string reference = scene_reference_markdown();
  EXPECT_NE(reference.find("## toy\n\nA method registered by a test."), std::string::npos);
  EXPECT_NE(reference.find("| `stiffness` | number | `2.5` | Pa | > 0 | how stiff |"), std::string::npos);
  EXPECT_NE(reference.find("| `glue` | number | `0` |  | >= 0 | how sticky |"), std::string::npos);
  EXPECT_NE(reference.find("### `putty`"), std::string::npos);
}

TEST(SceneRegistry, AMethodRegistersOnce) {
  EXPECT_THROW(register_method(toy_schema()), Error);
  EXPECT_EQ(method_names(), std::vector<std::string>{"toy"});
}

}  // namespace
}  // namespace nendo
