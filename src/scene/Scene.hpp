#pragma once
// A loaded scene: one struct per section of the scene format (DESIGN.md "Scenes and the CLI").
// parse_scene() fills every field, defaults included; the defaults, bounds and meaning of each key
// live in one place, the schema (SceneSchema.cpp, MaterialSchema.cpp), which docs/scene-reference.md
// is generated from. Choices (method, kernel, shape, ...) are kept as the validated names.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/Types.hpp"

namespace nendo {

struct TimeSettings {
  Real end = 0;
  std::optional<Real> dt;   // fixed step, or the cap of the adaptive step when cfl is set
  std::optional<Real> cfl;  // adaptive step
  std::string integrator;   // explicit | implicit
};

struct GridSettings {
  Real dx = 0;
  int block = 0;         // cells per block edge
  std::string kernel;    // quadratic | cubic
  std::string transfer;  // apic | pic | flip
  Real flip_ratio = 0;
};

struct MaterialSettings {
  std::string model;                     // a name registered in MaterialSchema
  std::map<std::string, double> params;  // every parameter of the model, defaults filled in
};

struct BodySettings {
  std::string shape;  // box | sphere | cylinder | file
  std::string material;
  int particles_per_cell = 0;  // per axis
  Vec3 velocity{};
  Vec3 min{};        // box
  Vec3 max{};        // box
  Vec3 center{};     // sphere; cylinder: centre of the base
  Real radius = 0;   // sphere, cylinder
  int axis = 0;      // cylinder: 0, 1, 2 for x, y, z
  Real height = 0;   // cylinder
  std::string path;  // file: resolved against the scene file's directory
};

struct ColliderSettings {
  std::string shape;     // plane | box | sphere | cylinder
  std::string boundary;  // sticky | slip | separate
  Real friction = 0;
  Vec3 velocity{};
  Vec3 point{};         // plane
  Vec3 normal{};        // plane, unit length
  Vec3 min{};           // box
  Vec3 max{};           // box
  Vec3 center{};        // sphere; cylinder: a point on the axis
  Real radius = 0;      // sphere, cylinder
  int axis = 0;         // cylinder: 0, 1, 2 for x, y, z
  bool inside = false;  // material is kept inside the shape rather than outside
};

struct OutputSettings {
  std::string dir;
  std::optional<Real> every;       // simulated seconds between outputs
  std::optional<int> every_steps;  // steps between outputs; exactly one of the two is set after loading
  std::vector<std::string> fields;
};

struct CheckpointSettings {
  std::string dir;
  int every_steps = 0;  // 0: no checkpoints every N steps
  Real every = 0;       // simulated seconds between checkpoints; 0: none
  int keep = 0;
  Real walltime = 0;  // seconds; 0: no wall-time budget
};

struct BalanceSettings {
  int every_steps = 0;  // 0: never re-balance
  Real threshold = 0;   // max/mean load that triggers it
};

struct CatalystSettings {
  std::vector<std::string> scripts;  // resolved against the scene file's directory
  int every_steps = 0;
  std::optional<std::vector<std::string>> fields;  // unset: every field the method has (CatalystOutput)
};

struct ImplicitSettings {
  std::string scheme = "backward_euler";      // backward_euler | midpoint
  std::string operator_type = "matrix_free";  // matrix_free | assembled (scene key `operator`)
  Real newton_tol = 1e-6;                     // on ‖P∇E‖ relative to the first
  Real newton_atol = 1e-6;                    // on the worst node's velocity error × Δt/dx
  int max_newton = 20;
  int max_halvings = 8;  // a failed step is retried in halves, this many times at most
  bool project_spd = true;
  bool monitor = false;
  std::string petsc_options;
};

// The slave-particle SPH method (spec 000); names follow the spec's symbols.
struct SlaveSphSettings {
  bool slaves = true;           // false: the masters-only baseline of spec §4.4 (zero-energy modes)
  Real alpha = 0.9;             // master velocity blend, Eq. (8)
  std::string blend = "paper";  // paper: Eq. (8) literally | flip: the kept part follows the slaves' change
  Real beta = 1;                // implicitness of the slave velocity solve, Eq. (15)
  Real gamma = 2.5;             // adjacency radius γ r with r = d/2 (§3.11, A13)
  Real delete_distance = 0.15;  // slave-slave deletion distance in units of h (§3.12)
  bool insertion = true;        // §3.11
  bool deletion = true;         // §3.12
  std::string gradient = "zero_sum";  // zero_sum (g̃, A5) | plain (the paper's literal g)
  std::string reference = "shepard";  // v̂_m (7R) | master (the literal v^n_m of Eq. 7)
  Real cg_tol = 1e-5;                 // relative residual of the CG solve (A8)
  int cg_max = 1000;
  bool project_spd = true;  // definiteness projection of each master's energy Hessian
};

struct Scene {
  int format = 0;
  std::string method;  // mpm | slave_sph | shape_matching | pbd_powder | fem
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
  ImplicitSettings implicit;
  SlaveSphSettings slave_sph;
  std::string source_path;             // as given to the loader
  std::string source_text;             // the file as read, before overrides
  std::vector<std::string> overrides;  // the --set key.path=value strings applied, in order
};

}  // namespace nendo
