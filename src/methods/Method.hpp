#pragma once
// What every method provides to the driver. A method owns its physics; the space, exchanges,
// output and checkpoints are shared. Virtual calls happen once per step, never per particle.
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/Error.hpp"
#include "core/StageClock.hpp"
#include "core/StateRecord.hpp"
#include "decomposition/Space.hpp"
#include "decomposition/TetMeshView.hpp"
#include "scene/Scene.hpp"

namespace nendo {

// Global sums over all ranks, the columns of diagnostics.csv.
struct GlobalDiagnostics {
  std::uint64_t particles = 0;
  Real kinetic_energy = 0;
  Real elastic_energy = 0;
  Vec3 momentum{0, 0, 0};
  Real mass = 0;
};

// Per-step figures of an implicit solve (summed over the substeps of a retried step).
struct SolverStats {
  int substeps = 0;           // 1, or more when Newton failed and the step was retried in halves
  int newton_iterations = 0;  // summed over substeps
  long ksp_iterations = 0;    // summed over substeps and Newton iterations
  int line_search_halvings = 0;
  int gradient_steps = 0;
  Real residual = 0;         // ‖P∇E‖ relative to its first value, at the end of the last substep
  Real scaled_residual = 0;  // ... and the worst node's velocity error × Δt/dx (cells)
};

class Method {
 public:
  virtual ~Method() = default;
  // Registers the method's particle fields before the bodies are seeded.
  virtual void register_fields(ParticleSet& particles) const = 0;
  // Appends this rank's share of the scene's bodies to `particles` (fields registered) on a fresh
  // run. The default samples them on the particle lattice (bodies/BodySeeder.hpp); mesh methods
  // make their vertices. Collective.
  virtual void seed(MPI_Comm comm, const Scene& scene, ParticleSet& particles);
  // Called once the seeded particles are distributed.
  virtual void initialize(Space& /*space*/) {}
  // What a checkpoint must carry besides the particle fields (counters, random state, emitter
  // progress); the same on every rank. Every piece of state a step reads must be in one or the
  // other: the restart tests (tests/app/restart_test.py) check that a restarted run is bitwise
  // the uninterrupted one.
  virtual StateRecord save_state() const { return {}; }
  // Called instead of initialize() when a run resumes from a checkpoint: the particles are
  // distributed and carry their checkpointed fields; state is what save_state() returned.
  virtual void restore(Space& /*space*/, const StateRecord& /*state*/) {}
  // The largest stable step for the current state (collective); infinity if unbounded.
  virtual Real stable_dt(const Space& /*space*/) const { return std::numeric_limits<Real>::infinity(); }
  // The step past which the method's explicit update is unstable in the current state (Courant
  // number 1, no safety factor; collective); infinity if none. A fixed time.dt above it is refused
  // before the first step.
  virtual Real step_limit(const Space& /*space*/) const { return std::numeric_limits<Real>::infinity(); }
  // One step from time t to t + dt; particles end migrated to their owners.
  virtual void advance(Space& space, Real t, Real dt) = 0;
  // Whether advance() itself throws ParticleStateError on a non-finite value, keeping the last
  // finite state (MPM); else the driver checks every Real field after each step (StateGuard.hpp).
  virtual bool checks_finite_state() const { return false; }
  virtual GlobalDiagnostics diagnostics(const Space& space) const = 0;
  // Where the step's time went on this rank (the stages of the method's algorithm), for the
  // end-of-run profile and the benchmarks; empty if the method does not time itself.
  virtual std::vector<StageTime> stage_times() const { return {}; }
  // Output fields the method computes from its state rather than stores (MPM: "stress", "J"):
  // their number of components, 0 for a name it does not provide.
  virtual int derived_field_components(const std::string& /*name*/) const { return 0; }
  // Fills `out` (derived_field_components(name) numbers per local particle) for `name`.
  virtual void derive_field(const Space& /*space*/, const std::string& /*name*/, Real* /*out*/) const {}
  // Mesh methods (FEM, shape matching): this rank's tetrahedra, for the output files (mesh.xdmf,
  // app/MeshOutput.hpp) and Catalyst's "mesh" channel. Collective. The vertices are particles:
  // owned ones and halo copies (space.halo()), each carrying its id; every tet is listed by
  // exactly one rank. tet_fields, when given, hold a value per listed tet (FEM: "level").
  virtual bool has_mesh() const { return false; }
  virtual TetMeshView mesh_view(const Space& /*space*/) const { return {}; }
  // Implicit methods: what the solver did in the last step (solver.csv, the progress line).
  virtual const SolverStats* solver_stats() const { return nullptr; }
  // What the method adds to rank 0's progress line (fem: refinements and coarsenings so far), ""
  // for nothing. Not collective: it reports what the last steps accumulated.
  virtual std::string progress_note() const { return ""; }
};

// A particle whose state became NaN or inf (or flew out of the addressable domain): the run stops
// with this, the same on every rank. `problem` names the field, e.g. "non-finite velocity".
class ParticleStateError : public Error {
 public:
  ParticleStateError(long step, ParticleId id, const std::string& problem)
      : Error("step " + std::to_string(step) + ": particle " + std::to_string(id) + " has a " + problem),
        step_(step),
        id_(id),
        field_(problem) {}
  long step() const { return step_; }
  ParticleId id() const { return id_; }
  const std::string& field() const { return field_; }

 private:
  long step_;
  ParticleId id_;
  std::string field_;
};

// The implicit solver did not converge even at its smallest step (implicit.max_halvings halvings).
// The particles hold a good state at time reached() (the step's start, or the end of the last
// substep that converged); the driver checkpoints it and stops. Thrown on every rank alike.
class SolverError : public CollectiveError {
 public:
  SolverError(long step, Real reached, const std::string& why)
      : CollectiveError("step " + std::to_string(step) + ": " + why), reached_(reached) {}
  Real reached() const { return reached_; }

 private:
  Real reached_;
};

// The blocks of the scene's space: dimension, cell size grid.dx, grid.block cells per edge.
BlockGeometry geometry_of(const Scene& scene);

// Creates the method the scene names (methods are listed in methods/Methods.cpp).
std::unique_ptr<Method> make_method(const Scene& scene);

// Kinetic energy, momentum and mass from the "velocity" and "mass" fields (collective).
GlobalDiagnostics particle_diagnostics(const Space& space);
// The same with the mass of local particle p given by mass(p) (methods that derive it).
GlobalDiagnostics particle_diagnostics(const Space& space, const std::function<Real(std::size_t)>& mass);

// An empty particle set with what every method's particles carry (id, position, velocity,
// reference volume) and the fields `method` registers (mass, material, its state).
ParticleSet make_particles(const Method& method, int dimension);

}  // namespace nendo
