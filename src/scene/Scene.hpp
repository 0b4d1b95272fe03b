#pragma once
// A loaded scene: one struct per section of the scene format (DESIGN.md "Scenes and the CLI").
// parse_scene() fills every field, defaults included; the defaults, bounds and meaning of each key
// live in one place, the schema (SceneSchema.cpp, MaterialSchema.cpp), which docs/scene-reference.md
// is generated from. Choices (method, kernel, shape, ...) are kept as the validated names.
#include <cstdint>
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
  bool overlap = true;  // ghost exchange overlapped with interior work (docs/scaling.md)
};

struct MaterialSettings {
  std::string model;                     // a name registered in MaterialSchema
  std::map<std::string, double> params;  // every parameter of the model, defaults filled in
};

// A deformed copy of a shape-matching body's mesh (spec 001 §7.4): a generator applied to the rest
// mesh, or a mesh file with the same vertices in the same order. The generators act along the
// body's longest axis s ∈ [0, ℓ] of its rest bounding box.
struct ExampleSettings {
  std::string type;    // twist | bend | squash | shear | file
  Real angle = 0;      // twist: end-to-end rotation about the axis; shear: slope angle (degrees)
  Real amplitude = 0;  // bend: a of the centre line a sin(2π s/ℓ) (m)
  Real factor = 1;     // squash: length ratio of the part beyond `start`
  Real start = 0;      // squash, shear: where along the axis the deformed part begins (fraction of ℓ)
  int direction = 2;   // bend, shear: the axis the centre line moves along
  std::string path;    // file
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
  // Shape matching (spec 001) only.
  std::vector<ExampleSettings> examples;
  std::string groups = "global";  // global | per_region | slabs
  int group_slabs = 1;            // slabs: equal slabs of the rest bounding box along group_axis
  int group_axis = 0;
  bool fixed = false;  // vertices inside [fixed_min, fixed_max] at rest are held (mesh methods)
  Vec3 fixed_min{}, fixed_max{};
  // FEM (spec 004 Fig. 4): finest tets whose rest centroid is in an odd cell of a lattice of cube
  // side alternate_cell take alternate_material instead ("" : none).
  std::string alternate_material;
  Real alternate_cell = 0;
  int initial_example = 0;  // the body starts in this example's shape (0: the rest shape)
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
  std::string precision = "double";  // double | single: the floating fields' type in the files
  std::string compression = "none";  // none | deflate (HDF5 shuffle + deflate)
  int compression_level = 1;         // deflate level, 1 (fastest) .. 9 (smallest)
};

struct CheckpointSettings {
  std::string dir;  // empty: <output directory>/checkpoints (app/RunFolder resolves it)
  int every_steps = 0;  // 0: no checkpoints every N steps
  Real every = 0;       // simulated seconds between checkpoints; 0: none
  int keep = 0;
  Real walltime = 0;  // seconds; 0: no wall-time budget
};

struct BalanceSettings {
  int every_steps = 0;   // 0: never re-balance
  Real threshold = 0;    // max/mean load that triggers it
  bool by_time = false;  // weights: time (measured) instead of count
};

struct CatalystSettings {
  std::vector<std::string> scripts;  // resolved against the scene file's directory
  int every_steps = 0;
  std::optional<std::vector<std::string>> fields;  // unset: every field the method has (CatalystOutput)
};

struct ImplicitSettings {
  std::string scheme = "midpoint";            // midpoint | backward_euler (MPM; FEM: backward Euler only)
  std::string operator_type = "matrix_free";  // matrix_free | assembled (scene key `operator`)
  Real newton_tol = 1e-6;                     // on ‖P∇E‖ relative to the first
  Real newton_atol = 1e-6;                    // on the worst node's velocity error × Δt/dx
  int max_newton = 20;
  int max_halvings = 8;                      // a failed step is retried in halves, this many times at most
  std::string forcing = "eisenstat_walker";  // eisenstat_walker | fixed (NewtonSettings::forcing)
  std::string solver = "newton";             // newton | lbfgs (NewtonSettings::solver)
  bool project_spd = true;
  bool monitor = false;
  std::string petsc_options;
  std::string preconditioner;  // jacobi | multigrid of the matrix-free operator; "": the method's
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

// The example-based shape matching method (spec 001); names follow the spec's symbols.
struct ShapeMatchingSettings {
  Real alpha = 0.5;   // stiffness, Eq. (4)
  Real beta = 0.995;  // example strength (return-to-rest blending, §4.3)
  Real damping = 0;   // velocity damping k_d per step (§9 A7; not in the paper)
  std::string rotation =
      "matched";  // matched: polar(A_pq S̃) | Apq: polar(A_pq) (Müller) | A: polar(A_r) (the paper)
  std::string descriptor = "plain";  // plain | frobenius (off-diagonals × √2, §9 A4)
  int max_ring = 32;                 // largest region (a vertex and its 1-ring) the particles hold
};

// Powder by position based dynamics with state transitions (spec 003); names follow the spec's
// symbols. Particles are Δx = spacing apart, h = support·Δx; one nendo step is one frame.
struct PbdPowderSettings {
  Real spacing = 0.005;                   // Δx (m)
  Real support = 2;                       // h / Δx
  int substeps = 8;                       // n_sub per frame (§10 B1)
  int iterations = 4;                     // n_iter Jacobi iterations per substep
  Real relaxation = 0.01;                 // ε_rel: ε = ε_rel D_0 in λ (§5.4); 0: the paper's Eq. (4)
  std::string rest_distance = "mean";     // mean: d̄_0 of the lattice (§5.3) | contact: d = Δx
  std::string rest_constraint = "pairs";  // sum: Eq. (5) | pairs: frozen pair distances (§10 B5)
  bool transitions = true;                // false: every particle keeps its initial state
  std::string initial_state = "flow";     // of body particles (emitted ones start flowing)
  Real density_rate = 10;                 // τ_ρ (1/s), Eq. (8); the spec's 3 lets heaps melt (calibrated)
  std::string density_change = "magnitude";  // magnitude | dilation (§10 B8)
  Real speed_factor = 1;                     // τ_v = speed_factor √(|g| h), Eq. (9)
  std::string rest_when = "stopped";         // stopped (issue 28) | above: the paper (§10 B6) | below
  int transition_frames = 5;                 // K_vis: frames a changed particle is tagged (§4.4)
  bool scorr = false;                        // artificial pressure (§3.3, B4)
  bool unilateral = true;                    // clamp F_i ≥ 0 (B4); the spec's default is false
  bool contact = true;                       // particles kept Δx apart (an extension)
  Real friction = 0.6;                       // μ between particles (an extension, issue 28)
  Real xsph = 0;                             // XSPH viscosity c (§3.3)
  Real vorticity = 0;                        // vorticity confinement ε_vort (§3.3)
};

// A source of powder particles (spec 003 §8): a lattice of spacing Δx in a disc (one layer per
// emission) or a box, emitted every frame or at a rate, until `count` particles.
// The hierarchical tetrahedral FEM (spec 004); names follow the spec's symbols.
struct FemSettings {
  Real spacing = 0.1;                  // level-0 edge length of box bodies (m)
  int max_level = 2;                   // L_max
  int min_level = 0;                   // never coarser (an extension: coarse tets lock in bending)
  Real linear_tolerance = 0.05;        // δ_lin (§5 H4f)
  Real agree_tolerance = 0.01;         // τ_agree (§4.4)
  Real error_tolerance = 0.003;        // τ_err: recovered-strain error indicator (an extension; issue 28)
  Real coarsen_factor = 0.8;           // κ_c (§4.4)
  Real damping = 0;                    // c_m, mass-proportional (1/s)
  Real bulk_viscosity = 0;             // φ (Pa s), the same at every level (§10 C11)
  Real shear_viscosity = 0;            // ψ (Pa s)
  std::string boundary = "kinematic";  // kinematic | vertices_only (§10 C2)
};

struct EmitterSettings {
  std::string shape;  // disc | box
  std::string material;
  Vec3 center{};      // disc
  Real radius = 0;    // disc
  int axis = 1;       // disc: its normal
  Vec3 min{}, max{};  // box
  Vec3 velocity{};
  std::optional<Real> rate;  // particles per second; unset: one emission per frame
  std::uint64_t count = 0;   // emission stops at this many particles
  Real start = 0;            // time of the first emission (s)
  Real jitter = 0.01;        // positions jittered by ± jitter Δx
  std::uint64_t seed = 1;
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
  ShapeMatchingSettings shape_matching;
  PbdPowderSettings pbd_powder;
  FemSettings fem;
  std::vector<EmitterSettings> emitters;
  std::string source_path;             // as given to the loader
  std::string source_text;             // the file as read, before overrides
  std::vector<std::string> overrides;  // the --set key.path=value strings applied, in order
};

}  // namespace nendo
