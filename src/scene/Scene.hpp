#pragma once
// A loaded scene: one struct per section of the scene format (DESIGN.md "Scenes and the CLI").
// parse_scene() fills every field, defaults included. Each key is declared once, bound to its field
// (scene/SettingsKeys.hpp): the spine's sections in SceneSchema.cpp, a method's in its own folder
// (<Name>Settings.cpp), whose structs the scene holds in a SettingsBag. Choices (method, kernel,
// shape, ...) are kept as the validated names.
#include <any>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <typeindex>
#include <vector>

#include "core/Types.hpp"

namespace nendo {

// Settings of parts of nendo that scene/ does not name (a method's section, a method's keys of a
// body): one value per type. get<T>() of a type the scene did not fill is T's defaults, so that a
// Scene made in code behaves as a scene file that leaves those keys out.
class SettingsBag {
 public:
  template <class T>
  const T& get() const {
    const auto found = values_.find(typeid(T));
    if (found != values_.end()) return std::any_cast<const T&>(found->second);
    static const T defaults{};
    return defaults;
  }

  template <class T>
  T& put(T value) {
    std::any& slot = values_[typeid(T)];
    slot = std::move(value);
    return std::any_cast<T&>(slot);
  }

  template <class T>
  T& at() {
    return std::any_cast<T&>(values_.at(typeid(T)));
  }

 private:
  std::map<std::type_index, std::any> values_;
};

struct TimeSettings {
  Real end = 0;
  std::optional<Real> dt;               // fixed step, or the cap of the adaptive step when cfl is set
  std::optional<Real> cfl;              // adaptive step
  std::string integrator = "explicit";  // explicit | implicit
};

struct GridSettings {
  Real dx = 0;
  int block = 4;                     // cells per block edge
  std::string kernel = "quadratic";  // quadratic | cubic
  std::string transfer = "apic";     // apic | pic | flip
  Real flip_ratio = 0.95;
  bool overlap = true;  // ghost exchange overlapped with interior work (docs/scaling.md)
};

struct MaterialSettings {
  std::string model;                     // a name registered in MaterialSchema
  std::map<std::string, double> params;  // every parameter of the model, defaults filled in
};

struct BodySettings {
  std::string shape;  // box | sphere | cylinder | file
  std::string material;
  int particles_per_cell = 2;  // per axis
  Vec3 velocity{};
  Vec3 min{};               // box
  Vec3 max{};               // box
  Vec3 center{};            // sphere; cylinder: centre of the base
  Real radius = 0;          // sphere, cylinder
  int axis = 1;             // cylinder: 0, 1, 2 for x, y, z
  Real height = 0;          // cylinder
  std::string path;         // file: resolved against the scene file's directory
  SettingsBag method_keys;  // the keys the scene's method adds to a body (MethodSchema::body)
};

struct ColliderSettings {
  std::string shape;                  // plane | box | sphere | cylinder
  std::string boundary = "separate";  // sticky | slip | separate
  Real friction = 0;
  Vec3 velocity{};
  Vec3 point{};         // plane
  Vec3 normal{};        // plane, unit length
  Vec3 min{};           // box
  Vec3 max{};           // box
  Vec3 center{};        // sphere; cylinder: a point on the axis
  Real radius = 0;      // sphere, cylinder
  int axis = 1;         // cylinder: 0, 1, 2 for x, y, z
  bool inside = false;  // material is kept inside the shape rather than outside
};

struct OutputSettings {
  std::string dir = "out";
  std::optional<Real> every;       // simulated seconds between outputs
  std::optional<int> every_steps;  // steps between outputs; exactly one of the two is set after loading
  std::vector<std::string> fields = {"id", "velocity", "mass", "volume", "material"};
  std::string precision = "double";  // double | single: the floating fields' type in the files
  std::string compression = "none";  // none | deflate (HDF5 shuffle + deflate)
  int compression_level = 1;         // deflate level, 1 (fastest) .. 9 (smallest)
};

struct CheckpointSettings {
  std::string dir;      // empty: <output directory>/checkpoints (app/RunFolder resolves it)
  int every_steps = 0;  // 0: no checkpoints every N steps
  Real every = 0;       // simulated seconds between checkpoints; 0: none
  int keep = 3;
  Real walltime = 0;  // seconds; 0: no wall-time budget
};

struct BalanceSettings {
  int every_steps = 100;  // 0: never re-balance
  Real threshold = 1.1;   // max/mean load that triggers it
  bool by_time = false;   // weights: time (measured) instead of count
};

struct CatalystSettings {
  std::vector<std::string> scripts;  // resolved against the scene file's directory
  int every_steps = 1;
  std::optional<std::vector<std::string>> fields;  // unset: every field the method has (CatalystOutput)
};

struct Scene {
  int format = 0;
  std::string method;  // a name in the registry (scene/SceneRegistry.hpp)
  int dimension = 0;
  Vec3 gravity{};
  TimeSettings time;
  GridSettings grid;
  std::map<std::string, MaterialSettings> materials;
  std::vector<BodySettings> bodies;
  std::vector<ColliderSettings> colliders;
  OutputSettings output;
  CheckpointSettings checkpoint;
  BalanceSettings balance;
  CatalystSettings catalyst;
  SettingsBag sections;                // what the methods register: their sections and lists (SceneRegistry)
  std::string source_path;             // as given to the loader
  std::string source_text;             // the file as read, before overrides
  std::vector<std::string> overrides;  // the --set key.path=value strings applied, in order
};

}  // namespace nendo
