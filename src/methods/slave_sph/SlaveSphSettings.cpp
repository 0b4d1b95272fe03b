#include "methods/slave_sph/SlaveSphSettings.hpp"

#include "methods/ImplicitSettings.hpp"

namespace nendo {

namespace {

SettingsKeys<SlaveSphSettings> slave_sph_keys() {
  using S = SlaveSphSettings;
  return SettingsKeys<S>()
      .add(KeySchema::boolean("slaves",
                              "false: measure deformation and forces on the masters themselves (the baseline "
                              "of spec 000 section 4.4, which has zero-energy modes)"),
           &S::slaves)
      .add(KeySchema::real("alpha",
                           "blend of the slave-interpolated velocity into the master velocity (Eq. 8)")
               .at_least(0)
               .at_most(1),
           &S::alpha)
      .add(KeySchema::choice(
               "blend", {"paper", "flip"},
               "what a master keeps of its velocity, weight 1 - alpha: paper (its old velocity, "
               "Eq. 8; a body at rest under gravity creeps at (1 - alpha)/alpha g dt) or flip (its "
               "old velocity plus the slaves' change in the step, the PIC/FLIP blend of Stomakhin "
               "et al.; no creep)"),
           &S::blend)
      .add(KeySchema::real("beta",
                           "implicitness of the slave velocity solve (Eq. 15): 0 explicit, 1 backward Euler")
               .at_least(0)
               .at_most(1),
           &S::beta)
      .add(KeySchema::real(
               "gamma",
               "masters closer than gamma r (r = half the master spacing) at the start are adjacent; "
               "a slave is inserted when adjacent masters separate beyond 2h")
               .above(0)
               .below(4),
           &S::gamma)
      .add(KeySchema::real("delete_distance",
                           "slaves closer than this times h are merged (the younger is deleted)")
               .at_least(0)
               .below(2),
           &S::delete_distance)
      .add(KeySchema::boolean("insertion", "insert slaves where adjacent masters separate (section 3.11)"),
           &S::insertion)
      .add(KeySchema::boolean("deletion", "delete crowded and orphan slaves (section 3.12)"), &S::deletion)
      .add(KeySchema::choice("gradient", {"zero_sum", "plain"},
                             "kernel gradient weights: zero_sum (internal forces conserve momentum, spec A5) "
                             "or plain (the paper's literal Eq. 11)"),
           &S::gradient)
      .add(KeySchema::choice("reference", {"shepard", "master"},
                             "velocity subtracted in the velocity gradient (Eq. 7): shepard (the slaves' "
                             "weighted mean, Eq. 7R) or master (the master's own velocity, literal Eq. 7)"),
           &S::reference)
      .add(KeySchema::real("cg_tol", "relative residual at which the CG solve of Eq. (15) stops")
               .above(0)
               .below(1),
           &S::cg_tol)
      .add(KeySchema::integer("cg_max", "largest number of CG iterations per step").at_least(1), &S::cg_max)
      .add(KeySchema::boolean("project_spd",
                              "make each master's energy Hessian positive semi-definite so that CG applies"),
           &S::project_spd);
}

// §3.14: one master spacing d = dx / particles_per_cell for the whole scene (the slaves' lattice and
// quadrature volume), and a block cell of at least 2h + d/2 with h = d, so that the one-cell particle
// halo holds every neighbour within 2h after a step's motion.
void check_spacing(const SceneCheck& check) {
  const std::vector<BodySettings>& bodies = check.scene.bodies;
  for (std::size_t b = 0; b < bodies.size(); ++b) {
    const std::string key = "bodies." + std::to_string(b) + ".particles_per_cell";
    if (bodies[b].particles_per_cell < 3)
      check.fail(key,
                 "slave_sph needs at least 3 (the block cell dx must hold the kernel support 2h = 2d "
                 "plus a margin for the particles' motion, with d = dx / particles_per_cell)");
    if (bodies[b].particles_per_cell != bodies[0].particles_per_cell)
      check.fail(key,
                 "slave_sph uses one master spacing for the whole scene: every body needs the same "
                 "particles_per_cell (the first has " +
                     std::to_string(bodies[0].particles_per_cell) + ")");
  }
}

MethodSchema slave_sph_schema() {
  MethodSchema method;
  method.name = "slave_sph";
  method.dimensions = {3};
  method.dimension_note = "its kernel, Eq. 3, is the 3D cubic spline";
  method.sections = {implicit_section(),
                     method_section("slave_sph", "slave-particle SPH",
                                    "The slave-particle SPH method (spec 000). Master spacing d = grid.dx / "
                                    "particles_per_cell, h = d; the KSP of the slave velocity solve reads "
                                    "implicit.petsc_options.",
                                    slave_sph_keys())};
  method.check = check_spacing;
  return method;
}

// Registered before main() (the methods library is linked whole: nendo_whole_archive in CMake).
[[maybe_unused]] const bool registered = (register_method(slave_sph_schema()), true);

}  // namespace

}  // namespace nendo
