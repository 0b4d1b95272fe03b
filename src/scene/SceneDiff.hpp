#pragma once
// What a restart compares: the scene a checkpoint was written with against the scene given now.
#include <string>
#include <vector>

namespace nendo {

// The keys (dotted paths, list items by index: "materials.jelly.E", "bodies.0.min.1") whose values
// differ between two scenes, each given as its text and its --set overrides, without the keys
// that do not change the physics of the steps still to come: time.end, output, checkpoint,
// balance, catalyst and implicit.monitor. Numbers compare by value (1 equals 1.0); a key written out in one scene
// and left to its default in the other counts as a difference. Throws SceneError if a text does
// not parse.
std::vector<std::string> physics_differences(const std::string& text_a,
                                             const std::vector<std::string>& overrides_a,
                                             const std::string& text_b,
                                             const std::vector<std::string>& overrides_b);

}  // namespace nendo
