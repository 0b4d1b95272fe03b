#include "scene/SceneSchema.hpp"

#include <stdexcept>

#include "scene/MaterialSchema.hpp"

namespace nendo {

namespace {

std::vector<KeySchema> time_keys() {
  return {
      KeySchema::real("end", "simulated time at which the run stops").measured_in("s").mandatory().above(0),
      KeySchema::real("dt",
                      "time step: the fixed step (explicit MPM refuses one above the first step's stable "
                      "limit dx / max(wave speed + |v|)), or the largest step when cfl is set")
          .measured_in("s")
          .when_unset("unset: the step comes from cfl alone")
          .above(0),
      KeySchema::real("cfl", "CFL number of the adaptive time step")
          .when_unset("unset: fixed step dt")
          .above(0)
          .at_most(1),
      KeySchema::choice(
          "integrator", {"explicit", "implicit"},
          "explicit (symplectic Euler) or implicit (a Newton-Krylov solve per step, see implicit)")
          .defaults_to("explicit"),
  };
}

std::vector<KeySchema> grid_keys() {
  return {
      KeySchema::real("dx", "cell size: the MPM grid spacing, or the kernel support of particle methods")
          .measured_in("m")
          .mandatory()
          .above(0),
      KeySchema::integer("block", "cells per block edge (blocks are the unit of distribution)")
          .defaults_to("4")
          .at_least(2)
          .at_most(16),
      KeySchema::choice("kernel", {"quadratic", "cubic"}, "B-spline interpolation kernel")
          .defaults_to("quadratic"),
      KeySchema::choice("transfer", {"apic", "pic", "flip"}, "particle-grid transfer scheme")
          .defaults_to("apic"),
      KeySchema::real("flip_ratio", "FLIP share of the flip transfer (1 - flip_ratio is PIC)")
          .defaults_to("0.95")
          .at_least(0)
          .at_most(1),
      KeySchema::boolean("overlap",
                         "overlap the grid ghost exchange with work on interior blocks (false: exchange, "
                         "then compute; the results are the same bits either way)")
          .defaults_to("true"),
  };
}

std::vector<KeySchema> output_keys() {
  return {
      KeySchema::text("dir", "directory of the HDF5/XDMF output, relative to the working directory")
          .defaults_to("out"),
      KeySchema::real("every", "simulated time between outputs")
          .measured_in("s")
          .when_unset("unset: time.end / 100 when every_steps is unset too")
          .above(0),
      KeySchema::integer("every_steps", "steps between outputs; set every or every_steps, not both")
          .when_unset("unset: output by simulated time")
          .above(0),
      KeySchema::text_list("fields", "particle fields written besides position")
          .defaults_to("[id, velocity, mass, volume, material]")
          .one_of(output_field_names()),
      KeySchema::choice("precision", {"double", "single"},
                        "type of the floating fields in the files: double (float64) or single (float32, "
                        "half the bytes, about 7 significant digits); checkpoints always keep double")
          .defaults_to("double"),
      KeySchema::choice("compression", {"none", "deflate"},
                        "compression of the particle datasets: none, or deflate (HDF5's shuffle and deflate "
                        "filters, which h5py and ParaView read without plugins)")
          .defaults_to("none"),
      KeySchema::integer("compression_level", "deflate level: 1 is the fastest, 9 the smallest")
          .defaults_to("1")
          .at_least(1)
          .at_most(9),
  };
}

std::vector<KeySchema> checkpoint_keys() {
  return {
      KeySchema::text("dir", "checkpoint directory, relative to the working directory")
          .when_unset("unset: `checkpoints` in the output directory"),
      KeySchema::integer("every_steps", "steps between checkpoints; 0 turns periodic checkpoints off")
          .defaults_to("0")
          .at_least(0),
      KeySchema::real("every", "simulated time between checkpoints; 0 turns them off")
          .measured_in("s")
          .defaults_to("0")
          .at_least(0),
      KeySchema::integer("keep", "number of most recent checkpoints kept").defaults_to("3").at_least(1),
      KeySchema::real(
          "walltime",
          "wall-time budget of the run: a final checkpoint and a clean exit (code 0) before it runs "
          "out; 0 is off (nendo run --walltime overrides it)")
          .measured_in("s")
          .defaults_to("0")
          .at_least(0),
  };
}

std::vector<KeySchema> balance_keys() {
  return {
      KeySchema::integer("every_steps", "steps between load-balance checks; 0 turns re-balancing off")
          .defaults_to("100")
          .at_least(0),
      KeySchema::real("threshold", "re-balance when the max/mean load over ranks exceeds this")
          .defaults_to("1.1")
          .at_least(1),
      KeySchema::choice("weights", {"count", "time"},
                        "the load: count (particles and grid nodes per block) or time (each rank's measured "
                        "work since the last check, outside MPI calls, shared among its blocks by count)")
          .defaults_to("count"),
  };
}

std::vector<KeySchema> catalyst_keys() {
  return {
      KeySchema::text_list("scripts",
                           "ParaView Catalyst scripts (`# script-version: 2`), relative to the "
                           "scene file; they must exist")
          .defaults_to("[]"),
      KeySchema::integer("every_steps", "steps between Catalyst co-processing calls")
          .defaults_to("1")
          .above(0),
      KeySchema::text_list("fields", "particle fields shown to the scripts besides position")
          .when_unset(
              "unset: those of id, velocity, mass, volume, material, stress, J, Jp, rank the method has")
          .one_of(output_field_names()),
  };
}

std::vector<KeySchema> implicit_keys() {
  return {
      KeySchema::choice(
          "scheme", {"midpoint", "backward_euler"},
          "MPM's implicit step: midpoint (the implicit midpoint rule, second order, no numerical "
          "damping: a swinging body keeps its amplitude at large steps; Newmark beta = 1/4 for a "
          "linear material) or backward_euler (first order, damps: energy never grows; for "
          "quasi-static loading and settling). FEM always steps by backward Euler")
          .defaults_to("midpoint"),
      KeySchema::choice("operator", {"matrix_free", "assembled"},
                        "Hessian as a matrix-free MatShell or an assembled MPIAIJ/MPIBAIJ matrix")
          .defaults_to("matrix_free"),
      KeySchema::real("newton_tol",
                      "Newton stops when the projected gradient norm of the incremental potential has "
                      "fallen by this factor from its first value")
          .defaults_to("1.0e-6")
          .above(0),
      KeySchema::real("newton_atol",
                      "... or when the worst node's velocity error times dt/dx (a displacement in "
                      "cells) is below this")
          .defaults_to("1.0e-6")
          .above(0),
      KeySchema::integer("max_newton", "largest number of Newton iterations per step")
          .defaults_to("20")
          .at_least(1),
      KeySchema::integer("max_halvings",
                         "a step whose Newton iteration fails is retried as two half steps, at most "
                         "this many times in a row; then the run checkpoints and stops")
          .defaults_to("8")
          .at_least(0),
      KeySchema::choice("forcing", {"eisenstat_walker", "fixed"},
                        "the relative tolerance of each Newton iteration's linear solve: eisenstat_walker "
                        "(loose far from the solution, tighter as Newton converges, never below 1e-4 nor "
                        "tighter than newton_tol needs) or fixed (1e-4); a -ksp_rtol in petsc_options or "
                        "on the command line always fixes it")
          .defaults_to("eisenstat_walker"),
      KeySchema::choice("solver", {"newton", "lbfgs"},
                        "newton (each step direction a Krylov solve to the forcing's tolerance) or lbfgs "
                        "(quasi-Newton as in HOT: the L-BFGS direction over one application of the "
                        "preconditioner, which is built at the step's first linearisation and kept; up "
                        "to 10 x max_newton iterations; docs/methods/implicit-mpm.md)")
          .defaults_to("newton"),
      KeySchema::boolean("project_spd",
                         "make each particle's energy Hessian positive semi-definite (spec 002 "
                         "section 2.6), so that CG applies")
          .defaults_to("true"),
      KeySchema::boolean("monitor", "print one line per Newton iteration on rank 0").defaults_to("false"),
      KeySchema::text("petsc_options",
                      "PETSc options database entries, e.g. \"-ksp_type cg -pc_type gamg\"; the "
                      "command line, PETSC_OPTIONS and .petscrc override them")
          .defaults_to("\"\""),
      KeySchema::choice("preconditioner", {"jacobi", "multigrid"},
                        "of the matrix-free operator (the assembled one takes GAMG): jacobi, or multigrid "
                        "(two-level geometric multigrid through PETSc's PCMG, the options -mg_levels_* "
                        "and -mg_coarse_* apply; MPM: the block grid coarsened by 2, fewer CG iterations, "
                        "each dearer, docs/methods/implicit-mpm.md; fem: every level of the tet hierarchy, "
                        "docs/methods/fem.md)")
          .when_unset("unset: jacobi for mpm, multigrid for fem"),
  };
}

std::vector<KeySchema> slave_sph_keys() {
  return {
      KeySchema::boolean("slaves",
                         "false: measure deformation and forces on the masters themselves (the baseline "
                         "of spec 000 section 4.4, which has zero-energy modes)")
          .defaults_to("true"),
      KeySchema::real("alpha", "blend of the slave-interpolated velocity into the master velocity (Eq. 8)")
          .defaults_to("0.9")
          .at_least(0)
          .at_most(1),
      KeySchema::choice("blend", {"paper", "flip"},
                        "what a master keeps of its velocity, weight 1 - alpha: paper (its old velocity, "
                        "Eq. 8; a body at rest under gravity creeps at (1 - alpha)/alpha g dt) or flip (its "
                        "old velocity plus the slaves' change in the step, the PIC/FLIP blend of Stomakhin "
                        "et al.; no creep)")
          .defaults_to("paper"),
      KeySchema::real("beta",
                      "implicitness of the slave velocity solve (Eq. 15): 0 explicit, 1 backward Euler")
          .defaults_to("1")
          .at_least(0)
          .at_most(1),
      KeySchema::real("gamma",
                      "masters closer than gamma r (r = half the master spacing) at the start are adjacent; "
                      "a slave is inserted when adjacent masters separate beyond 2h")
          .defaults_to("2.5")
          .above(0)
          .below(4),
      KeySchema::real("delete_distance",
                      "slaves closer than this times h are merged (the younger is deleted)")
          .defaults_to("0.15")
          .at_least(0)
          .below(2),
      KeySchema::boolean("insertion", "insert slaves where adjacent masters separate (section 3.11)")
          .defaults_to("true"),
      KeySchema::boolean("deletion", "delete crowded and orphan slaves (section 3.12)").defaults_to("true"),
      KeySchema::choice("gradient", {"zero_sum", "plain"},
                        "kernel gradient weights: zero_sum (internal forces conserve momentum, spec A5) "
                        "or plain (the paper's literal Eq. 11)")
          .defaults_to("zero_sum"),
      KeySchema::choice("reference", {"shepard", "master"},
                        "velocity subtracted in the velocity gradient (Eq. 7): shepard (the slaves' "
                        "weighted mean, Eq. 7R) or master (the master's own velocity, literal Eq. 7)")
          .defaults_to("shepard"),
      KeySchema::real("cg_tol", "relative residual at which the CG solve of Eq. (15) stops")
          .defaults_to("1.0e-5")
          .above(0)
          .below(1),
      KeySchema::integer("cg_max", "largest number of CG iterations per step")
          .defaults_to("1000")
          .at_least(1),
      KeySchema::boolean("project_spd",
                         "make each master's energy Hessian positive semi-definite so that CG applies")
          .defaults_to("true"),
  };
}

std::vector<KeySchema> shape_matching_keys() {
  return {
      KeySchema::real("alpha", "stiffness: the fraction of the way to the goal positions per step (Eq. 4)")
          .defaults_to("0.5")
          .above(0)
          .at_most(1),
      KeySchema::real("beta",
                      "example strength: the example weights are scaled by beta and the rest goes to the "
                      "rest shape each step (section 4.3); 0 is plain shape matching")
          .defaults_to("0.995")
          .at_least(0)
          .below(1),
      KeySchema::real("damping",
                      "velocity damping k_d per step, v <- (1 - k_d) v (not in the paper, spec A7)")
          .defaults_to("0")
          .at_least(0)
          .below(1),
      KeySchema::choice(
          "rotation", {"matched", "Apq", "A"},
          "where the goal's rotation R_r comes from (spec A3): matched, the rotation that best fits the "
          "distorted rest shape S~_r q to the current positions, polar(A_pq S~_r) (torque-free regions for "
          "any S~, so angular momentum is conserved; Mueller's R when S~ = I); Apq, polar(A_pq) (Mueller et "
          "al. 2005; S_r = sym(R^T A_r)); A, polar(A_r) (the paper: regions with an anisotropic A_qq exert "
          "torques, a free body spins up). S_r, what is projected onto the examples, is from polar(A_r) "
          "except with Apq")
          .defaults_to("matched"),
      KeySchema::choice("descriptor", {"plain", "frobenius"},
                        "6-vector of a stretch in the least-squares projection (Eq. 6): plain entries, or "
                        "off-diagonals scaled by sqrt(2) so that its norm is the Frobenius norm (spec A4)")
          .defaults_to("plain"),
      KeySchema::integer("max_ring",
                         "largest region a mesh may have (a vertex and its neighbours along tet edges); "
                         "each particle stores this many ids")
          .defaults_to("32")
          .at_least(5)
          .at_most(256),
  };
}

std::vector<KeySchema> fem_keys() {
  return {
      KeySchema::real("spacing", "edge length of the level-0 mesh of box bodies (cubes of 6 Kuhn tets)")
          .measured_in("m")
          .defaults_to("0.1")
          .above(0),
      KeySchema::integer("max_level", "L_max: levels of red refinement below the level-0 mesh (section 4.1)")
          .defaults_to("2")
          .at_least(0)
          .at_most(7),
      KeySchema::integer("min_level",
                         "no tet is coarser than this level (an extension, not in the paper: coarse linear "
                         "tets lock in bending, section 8); min_level = max_level is the uniform fine mesh")
          .defaults_to("0")
          .at_least(0)
          .at_most(7),
      KeySchema::real("linear_tolerance",
                      "delta_lin: a coarse tet's linear range ends where its homogenised stress departs "
                      "from the linear law by this fraction (section 5 H4f)")
          .defaults_to("0.05")
          .at_least(0),
      KeySchema::real("agree_tolerance",
                      "tau_agree: children are merged only if their Green strains are within this "
                      "(Frobenius) of the parent's (section 4.4 (iii))")
          .defaults_to("0.01")
          .at_least(0),
      KeySchema::real("error_tolerance",
                      "tau_err: a tet is also refined where its Green strain differs from the recovered "
                      "strain (the volume average of the active tets around a node) at one of its corners "
                      "by more than this (Frobenius), and a parent is merged only below a quarter of it: "
                      "the discretisation-error indicator the paper's linear range lacks (an extension; "
                      "coarse linear tets lock in bending, section 8)")
          .defaults_to("0.003")
          .at_least(0),
      KeySchema::real("coarsen_factor",
                      "kappa_c: a parent is chosen again only inside this fraction of its linear range "
                      "(hysteresis, section 4.4 (i))")
          .defaults_to("0.8")
          .above(0)
          .at_most(1),
      KeySchema::real("damping", "c_m: mass-proportional damping, v /= 1 + c_m dt (section 6.2)")
          .measured_in("1/s")
          .defaults_to("0")
          .at_least(0),
      KeySchema::real("bulk_viscosity", "phi of O'Brien and Hodgins' viscous stress (section 3), every level")
          .measured_in("Pa s")
          .defaults_to("0")
          .at_least(0),
      KeySchema::real("shear_viscosity",
                      "psi of O'Brien and Hodgins' viscous stress (section 3), every level")
          .measured_in("Pa s")
          .defaults_to("0")
          .at_least(0),
      KeySchema::choice("boundary", {"kinematic", "vertices_only"},
                        "homogenisation boundary condition (section 10 C2): kinematic, every fine node on "
                        "the coarse tet's faces follows the imposed strain; vertices_only, the paper's "
                        "literal reading (only the 4 corners held; softer, see the method page)")
          .defaults_to("kinematic"),
  };
}

std::vector<KeySchema> pbd_powder_keys() {
  return {
      KeySchema::real("spacing", "particle spacing dx of bodies and emitters; the particle radius is dx/2")
          .measured_in("m")
          .defaults_to("0.005")
          .above(0),
      KeySchema::real("support", "kernel support h in particle spacings (section 5.1)")
          .defaults_to("2")
          .above(1),
      KeySchema::integer("substeps", "PBD substeps per frame (one nendo step is one frame, B1)")
          .defaults_to("8")
          .at_least(1),
      KeySchema::integer("iterations", "Jacobi constraint iterations per substep")
          .defaults_to("4")
          .at_least(1),
      KeySchema::real("relaxation",
                      "eps_rel: the constraint-force mixing eps = eps_rel D_0 in lambda (section 5.4); 0 is "
                      "the paper's Eq. (4)")
          .defaults_to("0.01")
          .at_least(0),
      KeySchema::choice("rest_distance", {"mean", "contact"},
                        "d of the rest constraint (Eq. 5): mean, the mean neighbour distance of the packed "
                        "lattice (1.4164 dx for h = 2 dx, section 5.3), or contact, dx (strong cohesion)")
          .defaults_to("mean"),
      KeySchema::choice(
          "rest_constraint", {"sum", "pairs"},
          "what holds resting particles: sum, the paper's summed distance constraint R_i of Eq. "
          "(5) (it fixes only the mean neighbour distance: no shear resistance, heaps slump flat), "
          "or pairs, distance constraints to up to 16 resting neighbours within 1.5 spacings at the "
          "distances they "
          "had when both came to rest (the fallback of section 10 B5, Jakobsen 2001)")
          .defaults_to("pairs"),
      KeySchema::boolean("transitions",
                         "false: particles keep their initial state (a pure PBF fluid if flow)")
          .defaults_to("true"),
      KeySchema::choice("initial_state", {"flow", "rest"},
                        "state of body particles at the start (emitted "
                        "particles start flowing)")
          .defaults_to("flow"),
      KeySchema::real(
          "density_rate",
          "tau_rho: a resting particle flows when its density changes by more than this fraction of "
          "rho_0 per second over a frame (Eq. 8); calibrated: with the spec's 3 the density noise "
          "of a settled heap (up to 3.5/s in its first frames) turns it back to flow and it melts flat")
          .measured_in("1/s")
          .defaults_to("10")
          .above(0),
      KeySchema::choice("density_change", {"magnitude", "dilation"},
                        "what counts as a density change in Eq. (8): its magnitude, or dilation only (B8)")
          .defaults_to("magnitude"),
      KeySchema::real("speed_factor",
                      "tau_v = speed_factor sqrt(|g| h): the threshold on a flowing particle's speed "
                      "relative to its neighbours' mean velocity in the flow-to-rest test (Eq. 9, "
                      "rest_when)")
          .defaults_to("1")
          .above(0),
      KeySchema::choice(
          "rest_when", {"above", "below", "stopped"},
          "the flow-to-rest test of Eq. (9): above tau_v (the paper's text, B6), below (an "
          "ablation), or stopped: below tau_v, carried, and on a free surface no steeper than "
          "arctan(friction), where a resting particle on a steeper one flows (the paper's reason "
          "for Eq. 9 tested directly; issue 28)")
          .defaults_to("stopped"),
      KeySchema::integer("transition_frames",
                         "frames a particle is tagged as changing after a transition "
                         "(the yellow of Fig. 3; visual only)")
          .defaults_to("5")
          .at_least(0),
      KeySchema::boolean(
          "scorr",
          "PBF artificial pressure s_corr (k = 0.1, n = 4, dq = 0.2 h; B4), added to lambda as "
          "k / D_0 since lambda has units here (m = 1)")
          .defaults_to("false"),
      KeySchema::boolean(
          "unilateral",
          "clamp the density constraint at F_i >= 0: no attraction (B4; the spec's default is "
          "false, but the two-sided constraint draws every emitted layer and small cluster into "
          "a ball and then bursts it)")
          .defaults_to("true"),
      KeySchema::boolean(
          "contact",
          "keep particles at least one spacing apart (an extension: the density constraint alone "
          "lets sparse particles pass through each other, and a falling stream then piles into "
          "overlapping clumps that burst)")
          .defaults_to("true"),
      KeySchema::real("friction",
                      "mu: Coulomb friction between particles (an extension, issue 28): each substep "
                      "removes up to mu times a particle's normal push of its motion relative to its "
                      "neighbours; with rest_when: stopped heaps stand near arctan mu (0 and "
                      "rest_when: above: the paper's frictionless method)")
          .defaults_to("0.6")
          .at_least(0),
      KeySchema::real("xsph", "XSPH viscosity c (Macklin and Mueller use 0.01)").defaults_to("0").at_least(0),
      KeySchema::real("vorticity", "vorticity confinement strength eps_vort").defaults_to("0").at_least(0),
  };
}

std::vector<SectionSchema> make_section_schemas() {
  return {
      {"time", "Time stepping. At least one of dt and cfl is required.", time_keys()},
      {"grid", "The background grid and its blocks.", grid_keys()},
      {"output", "Particle output: one HDF5 file per output time and one XDMF time series.", output_keys()},
      {"checkpoint", "Restart files; a checkpoint restarts on any rank count.", checkpoint_keys()},
      {"balance",
       "Dynamic load balance: blocks are weighted by their particles and grid nodes, and the "
       "space-filling-curve partition is recomputed when the load is uneven. Results do not depend on it.",
       balance_keys()},
      {"catalyst", "ParaView Catalyst in-situ visualisation.", catalyst_keys()},
      {"implicit", "Newton-Krylov solver of the implicit integrator (time.integrator: implicit).",
       implicit_keys()},
      {"slave_sph",
       "The slave-particle SPH method (spec 000). Master spacing d = grid.dx / particles_per_cell, h = d; "
       "the KSP of the slave velocity solve reads implicit.petsc_options.",
       slave_sph_keys()},
      {"shape_matching",
       "Example-based shape matching (spec 001). Bodies are tetrahedral meshes: a box is a lattice of "
       "spacing grid.dx / particles_per_cell cut into 6 tets per cube, a cylinder is meshed by Gmsh with "
       "that edge length, a file body reads a Gmsh mesh. grid.dx must exceed every edge (the particle "
       "halo is one cell). Materials give the density only.",
       shape_matching_keys()},
      {"pbd_powder",
       "Powder by position based dynamics with state transitions (spec 003). One step is one frame "
       "(time.dt, 1/60 s in the paper) of `substeps` PBD substeps. grid.dx must be at least 1.8 h (the "
       "one-cell particle halo holds every neighbour after a substep's motion, which is clamped to 0.4 h).",
       pbd_powder_keys()},
      {"fem",
       "Hierarchical tetrahedral FEM with level selection (spec 004). Box bodies are lattices of cubes of "
       "edge `spacing` cut into 6 Kuhn tets, sphere, cylinder and file bodies are meshed (read) by Gmsh; "
       "each level-0 tet is red-refined max_level times. Materials: model stvk. grid.dx must be at least "
       "2.5 times the longest level-0 edge (the one-cell halo holds every tet and hanging-node master "
       "around an owned node).",
       fem_keys()},
  };
}

KeySchema velocity_key(std::string description) {
  return KeySchema::vector("velocity", std::move(description)).measured_in("m/s").defaults_to("0");
}

KeySchema center_key(std::string description) {
  return KeySchema::vector("center", std::move(description)).measured_in("m").mandatory();
}

KeySchema radius_key() { return KeySchema::real("radius", "radius").measured_in("m").mandatory().above(0); }

KeySchema axis_key() {
  return KeySchema::axis("axis", "direction of the cylinder axis; z only in 3D").defaults_to("y");
}

KeySchema box_corner_key(std::string name, std::string description) {
  return KeySchema::vector(std::move(name), std::move(description)).measured_in("m").mandatory();
}

KeySchema inside_key(std::string default_value) {
  return KeySchema::boolean("inside", "true: material is kept inside the shape; false: outside")
      .defaults_to(std::move(default_value));
}

std::vector<std::string> shape_names(const std::vector<ShapeSchema>& shapes) {
  std::vector<std::string> names;
  for (const ShapeSchema& shape : shapes) names.push_back(shape.name);
  return names;
}

std::vector<ShapeSchema> body_shapes() {
  return {
      {"box",
       "an axis-aligned box",
       {box_corner_key("min", "lowest corner"),
        box_corner_key("max", "highest corner; above min on every axis")}},
      {"sphere", "a ball (a disc in 2D)", {center_key("centre"), radius_key()}},
      {"cylinder",
       "a solid cylinder standing on its base (in 2D the axis-aligned rectangle it projects to)",
       {center_key("centre of the base"), axis_key(), radius_key(),
        KeySchema::real("height", "length along the axis").measured_in("m").mandatory().above(0)}},
      {"file",
       "particles or a mesh read from a file",
       {KeySchema::text("path", "point file (HDF5) or mesh file, relative to the scene file; it must exist")
            .mandatory()}},
  };
}

KeySchema start_key() {
  return KeySchema::real("start",
                         "where the deformed part begins along the axis, as a fraction of the length")
      .defaults_to("0.5")
      .at_least(0)
      .below(1);
}

std::vector<ShapeSchema> example_types() {
  return {
      {"twist",
       "rotation of every cross-section about the long axis by angle (s / l - 1/2)",
       {KeySchema::real("angle", "end-to-end twist").measured_in("degrees").mandatory()}},
      {"bend",
       "S shape: the centre line moves to amplitude sin(2 pi s / l) along direction, each cross-section "
       "turning to stay perpendicular to it",
       {KeySchema::real("amplitude", "amplitude of the centre line").measured_in("m").mandatory(),
        KeySchema::axis("direction", "axis the centre line moves along").defaults_to("z")}},
      {"squash",
       "the part beyond start is compressed along the long axis by factor and widened to keep its volume "
       "(a crumpled nose)",
       {KeySchema::real("factor", "length ratio of the compressed part").mandatory().above(0).at_most(4),
        start_key()}},
      {"shear",
       "the part beyond start is sheared: it moves along direction by tan(angle) times its distance "
       "from start",
       {KeySchema::real("angle", "shear angle").measured_in("degrees").mandatory().above(-80).below(80),
        KeySchema::axis("direction", "axis the sheared part moves along").defaults_to("y"), start_key()}},
      {"file",
       "a mesh file with the body's vertices in the same order",
       {KeySchema::text("path", "Gmsh mesh file, relative to the scene file").mandatory()}},
  };
}

ShapeListSchema make_example_schema() {
  std::vector<ShapeSchema> types = example_types();
  return {"examples",
          "Deformed copies of a shape-matching body (spec 001 section 7.4), under a body's `examples`. "
          "The generators act along the longest axis s in [0, l] of the body's rest bounding box.",
          {KeySchema::choice("type", shape_names(types), "how the example is made").mandatory()},
          types};
}

ShapeListSchema make_body_schema() {
  std::vector<ShapeSchema> shapes = body_shapes();
  return {
      "bodies",
      "The material bodies, sampled into particles. `shape` selects the keys of each body.",
      {KeySchema::choice("shape", shape_names(shapes), "the body's geometry").mandatory(),
       KeySchema::text("material", "name of a material defined under materials").mandatory(),
       KeySchema::integer("particles_per_cell", "particles per cell along each axis (2: 8 per cell in 3D)")
           .defaults_to("2")
           .at_least(1),
       velocity_key("initial velocity"),
       KeySchema::list("examples", "shape_matching: example shapes, see [examples](#examples)")
           .defaults_to("[]"),
       KeySchema::choice("groups", {"global", "per_region", "slabs"},
                         "shape_matching: regions projected together onto the examples (section 4.4): the "
                         "whole body, each region alone, or group_slabs slabs along group_axis")
           .defaults_to("global"),
       KeySchema::integer("group_slabs", "shape_matching: number of equal slabs (groups: slabs)")
           .defaults_to("2")
           .at_least(1)
           .at_most(1024),
       KeySchema::axis("group_axis", "shape_matching: axis the slabs are stacked along").defaults_to("x"),
       KeySchema::vector("fixed_min", "shape_matching, fem: lowest corner of the box of held vertices")
           .measured_in("m")
           .when_unset("no vertex is held"),
       KeySchema::vector("fixed_max", "shape_matching, fem: highest corner of the box of held vertices")
           .measured_in("m")
           .when_unset("no vertex is held"),
       KeySchema::text(
           "alternate_material",
           "fem: finest tets whose rest centroid lies in an odd cell of a lattice of cubes of side "
           "alternate_cell (a 3D checkerboard) take this material (Fig. 4's inhomogeneous beam)")
           .when_unset("one material"),
       KeySchema::real("alternate_cell", "fem: side of the checkerboard's cubes")
           .measured_in("m")
           .defaults_to("0")
           .at_least(0),
       KeySchema::integer("initial_example",
                          "shape_matching: the body starts in this example's shape (0: rest)")
           .defaults_to("0")
           .at_least(0)},
      shapes};
}

std::vector<ShapeSchema> collider_shapes() {
  return {
      {"plane",
       "a half-space: material stays on the side the normal points to",
       {KeySchema::vector("point", "a point on the plane").measured_in("m").mandatory(),
        KeySchema::vector("normal", "outward normal, normalised on load; not zero").mandatory()}},
      {"box",
       "an axis-aligned box",
       {box_corner_key("min", "lowest corner"),
        box_corner_key("max", "highest corner; above min on every axis"), inside_key("true")}},
      {"sphere", "a ball (a disc in 2D)", {center_key("centre"), radius_key(), inside_key("false")}},
      {"cylinder",
       "an infinite cylinder (in 2D the slab between two lines)",
       {center_key("a point on the axis"), axis_key(), radius_key(), inside_key("false")}},
  };
}

ShapeListSchema make_collider_schema() {
  std::vector<ShapeSchema> shapes = collider_shapes();
  return {
      "colliders",
      "Analytic collision objects (spec 002 §11.1). sticky: relative velocity set to zero. slip: normal "
      "relative velocity removed always. separate: normal part removed only when approaching, tangential "
      "part reduced by Coulomb friction.",
      {KeySchema::choice("shape", shape_names(shapes), "the collider's geometry").mandatory(),
       KeySchema::choice("boundary", {"sticky", "slip", "separate"}, "boundary condition")
           .defaults_to("separate"),
       KeySchema::real("friction", "Coulomb friction coefficient (separate)").defaults_to("0").at_least(0),
       velocity_key("velocity of the collider")},
      shapes};
}

ShapeListSchema make_emitter_schema() {
  return {
      "emitters",
      "Sources of particles (pbd_powder): each emission places a lattice of spacing pbd_powder.spacing in "
      "the shape, jittered from a fixed seed; ids are unique without communication.",
      {KeySchema::choice("shape", {"disc", "box"}, "the emitter's geometry").mandatory(),
       KeySchema::text("material", "name of a material in `materials` (its density gives the mass)")
           .mandatory(),
       velocity_key("velocity of emitted particles"),
       KeySchema::real("rate",
                       "particles per second (an emission whenever a whole lattice is due); unset: "
                       "one emission per frame")
           .measured_in("1/s")
           .above(0),
       KeySchema::integer("count", "emission stops after this many particles (the last emission is cut)")
           .mandatory()
           .at_least(1),
       KeySchema::real("start", "time of the first emission").measured_in("s").defaults_to("0").at_least(0),
       KeySchema::real("jitter", "positions are jittered by up to this fraction of the spacing")
           .defaults_to("0.01")
           .at_least(0)
           .below(0.5),
       KeySchema::integer("seed", "seed of the jitter").defaults_to("1").at_least(0)},
      {{"disc",
        "a disc of lattice points (a line segment in 2D), one layer per emission; the next layer waits while "
        "the centre of the last one is within half a spacing of the disc (B12)",
        {center_key("centre"), radius_key(),
         KeySchema::axis("axis", "the disc's normal; emission goes along the velocity").defaults_to("y")}},
       {"box",
        "a box of lattice points per emission",
        {box_corner_key("min", "lowest corner"), box_corner_key("max", "highest corner")}}}};
}

std::vector<KeySchema> make_top_level_keys() {
  return {
      KeySchema::integer("nendo", "scene format version").mandatory().one_of({"1"}),
      KeySchema::choice("method", {"ballistic", "mpm", "slave_sph", "shape_matching", "pbd_powder", "fem"},
                        "simulation method")
          .mandatory(),
      KeySchema::integer("dimension", "2 or 3; every vector has this many numbers")
          .mandatory()
          .one_of({"2", "3"}),
      KeySchema::vector("gravity", "gravitational acceleration").measured_in("m/s^2").defaults_to("0"),
      KeySchema::section("time", "time stepping, see [time](#time)").mandatory(),
      KeySchema::section("grid", "grid and blocks, see [grid](#grid)").mandatory(),
      KeySchema::section("materials", "named materials, see [materials](#materials)").mandatory(),
      KeySchema::list("bodies",
                      "material bodies, see [bodies](#bodies); pbd_powder may have none if it has "
                      "emitters")
          .defaults_to("[]"),
      KeySchema::list("emitters", "particle sources (pbd_powder), see [emitters](#emitters)")
          .defaults_to("[]"),
      KeySchema::list("colliders", "collision objects, see [colliders](#colliders)").defaults_to("[]"),
      KeySchema::section("output", "output files, see [output](#output)").defaults_to("{}"),
      KeySchema::section("checkpoint", "restart files, see [checkpoint](#checkpoint)").defaults_to("{}"),
      KeySchema::section("balance", "load balance, see [balance](#balance)").defaults_to("{}"),
      KeySchema::section("catalyst", "in-situ visualisation, see [catalyst](#catalyst)").defaults_to("{}"),
      KeySchema::section("implicit", "implicit solver, see [implicit](#implicit)").defaults_to("{}"),
      KeySchema::section("slave_sph", "slave-particle SPH, see [slave_sph](#slave_sph)").defaults_to("{}"),
      KeySchema::section("shape_matching",
                         "example-based shape matching, see [shape_matching](#shape_matching)")
          .defaults_to("{}"),
      KeySchema::section("pbd_powder", "position based powder, see [pbd_powder](#pbd_powder)")
          .defaults_to("{}"),
      KeySchema::section("fem", "hierarchical tetrahedral FEM, see [fem](#fem)").defaults_to("{}"),
  };
}

}  // namespace

const ShapeSchema* ShapeListSchema::find_shape(const std::string& shape_name) const {
  for (const ShapeSchema& shape : shapes) {
    if (shape.name == shape_name) return &shape;
  }
  return nullptr;
}

std::vector<KeySchema> ShapeListSchema::keys_of(const ShapeSchema& shape) const {
  std::vector<KeySchema> keys = common_keys;
  keys.insert(keys.end(), shape.keys.begin(), shape.keys.end());
  return keys;
}

const std::vector<KeySchema>& top_level_keys() {
  static const std::vector<KeySchema> keys = make_top_level_keys();
  return keys;
}

const std::vector<SectionSchema>& section_schemas() {
  static const std::vector<SectionSchema> sections = make_section_schemas();
  return sections;
}

const SectionSchema& section_schema(const std::string& name) {
  for (const SectionSchema& section : section_schemas()) {
    if (section.name == name) return section;
  }
  throw std::logic_error("no scene section '" + name + "'");
}

const ShapeListSchema& body_schema() {
  static const ShapeListSchema schema = make_body_schema();
  return schema;
}

const ShapeListSchema& example_schema() {
  static const ShapeListSchema schema = make_example_schema();
  return schema;
}

const ShapeListSchema& emitter_schema() {
  static const ShapeListSchema schema = make_emitter_schema();
  return schema;
}

const ShapeListSchema& collider_schema() {
  static const ShapeListSchema schema = make_collider_schema();
  return schema;
}

KeySchema material_model_key() {
  return KeySchema::choice("model", material_model_names(), "material model; selects the other keys")
      .mandatory();
}

std::string materials_description() {
  return "A map from material name to material; bodies name their material. `model` selects the other keys, "
         "which are the model's parameters below.";
}

const std::vector<std::string>& output_field_names() {
  static const std::vector<std::string> names = {
      "velocity", "stress", "J",       "Jp",      "material",      "mass",   "volume", "rank",
      "id",       "kind",   "body",    "F",       "rest",          "fixed",  "group",  "weights",
      "stretch",  "state",  "changed", "density", "display_state", "status", "level"};
  return names;
}

}  // namespace nendo
