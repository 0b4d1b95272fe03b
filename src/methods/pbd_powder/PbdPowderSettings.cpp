#include "methods/pbd_powder/PbdPowderSettings.hpp"

#include <fmt/format.h>

namespace nendo {

namespace {

SettingsKeys<PbdPowderSettings> pbd_powder_keys() {
  using S = PbdPowderSettings;
  return SettingsKeys<S>()
      .add(KeySchema::real("spacing",
                           "particle spacing dx of bodies and emitters; the particle radius is dx/2")
               .measured_in("m")
               .above(0),
           &S::spacing)
      .add(KeySchema::real("support", "kernel support h in particle spacings (section 5.1)").above(1),
           &S::support)
      .add(KeySchema::integer("substeps", "PBD substeps per frame (one nendo step is one frame, B1)")
               .at_least(1),
           &S::substeps)
      .add(KeySchema::integer("iterations", "Jacobi constraint iterations per substep").at_least(1),
           &S::iterations)
      .add(KeySchema::real(
               "relaxation",
               "eps_rel: the constraint-force mixing eps = eps_rel D_0 in lambda (section 5.4); 0 is "
               "the paper's Eq. (4)")
               .at_least(0),
           &S::relaxation)
      .add(KeySchema::choice(
               "rest_distance", {"mean", "contact"},
               "d of the rest constraint (Eq. 5): mean, the mean neighbour distance of the packed "
               "lattice (1.4164 dx for h = 2 dx, section 5.3), or contact, dx (strong cohesion)"),
           &S::rest_distance)
      .add(KeySchema::choice(
               "rest_constraint", {"sum", "pairs"},
               "what holds resting particles: sum, the paper's summed distance constraint R_i of Eq. "
               "(5) (it fixes only the mean neighbour distance: no shear resistance, heaps slump flat), "
               "or pairs, distance constraints to up to 16 resting neighbours within 1.5 spacings at the "
               "distances they "
               "had when both came to rest (the fallback of section 10 B5, Jakobsen 2001)"),
           &S::rest_constraint)
      .add(KeySchema::boolean("transitions",
                              "false: particles keep their initial state (a pure PBF fluid if flow)"),
           &S::transitions)
      .add(KeySchema::choice("initial_state", {"flow", "rest"},
                             "state of body particles at the start (emitted "
                             "particles start flowing)"),
           &S::initial_state)
      .add(KeySchema::real(
               "density_rate",
               "tau_rho: a resting particle flows when its density changes by more than this fraction of "
               "rho_0 per second over a frame (Eq. 8); calibrated: with the spec's 3 the density noise "
               "of a settled heap (up to 3.5/s in its first frames) turns it back to flow and it melts flat")
               .measured_in("1/s")
               .above(0),
           &S::density_rate)
      .add(KeySchema::choice(
               "density_change", {"magnitude", "dilation"},
               "what counts as a density change in Eq. (8): its magnitude, or dilation only (B8)"),
           &S::density_change)
      .add(KeySchema::real("speed_factor",
                           "tau_v = speed_factor sqrt(|g| h): the threshold on a flowing particle's speed "
                           "relative to its neighbours' mean velocity in the flow-to-rest test (Eq. 9, "
                           "rest_when)")
               .above(0),
           &S::speed_factor)
      .add(KeySchema::choice(
               "rest_when", {"above", "below", "stopped"},
               "the flow-to-rest test of Eq. (9): above tau_v (the paper's text, B6), below (an "
               "ablation), or stopped: below tau_v, carried, and on a free surface no steeper than "
               "arctan(friction), where a resting particle on a steeper one flows (the paper's reason "
               "for Eq. 9 tested directly; issue 28)"),
           &S::rest_when)
      .add(KeySchema::integer("transition_frames",
                              "frames a particle is tagged as changing after a transition "
                              "(the yellow of Fig. 3; visual only)")
               .at_least(0),
           &S::transition_frames)
      .add(KeySchema::boolean(
               "scorr",
               "PBF artificial pressure s_corr (k = 0.1, n = 4, dq = 0.2 h; B4), added to lambda as "
               "k / D_0 since lambda has units here (m = 1)"),
           &S::scorr)
      .add(KeySchema::boolean(
               "unilateral",
               "clamp the density constraint at F_i >= 0: no attraction (B4; the spec's default is "
               "false, but the two-sided constraint draws every emitted layer and small cluster into "
               "a ball and then bursts it)"),
           &S::unilateral)
      .add(KeySchema::boolean(
               "contact",
               "keep particles at least one spacing apart (an extension: the density constraint alone "
               "lets sparse particles pass through each other, and a falling stream then piles into "
               "overlapping clumps that burst)"),
           &S::contact)
      .add(KeySchema::real("friction",
                           "mu: Coulomb friction between particles (an extension, issue 28): each substep "
                           "removes up to mu times a particle's normal push of its motion relative to its "
                           "neighbours; with rest_when: stopped heaps stand near arctan mu (0 and "
                           "rest_when: above: the paper's frictionless method)")
               .at_least(0),
           &S::friction)
      .add(KeySchema::real("xsph", "XSPH viscosity c (Macklin and Mueller use 0.01)").at_least(0), &S::xsph)
      .add(KeySchema::real("vorticity", "vorticity confinement strength eps_vort").at_least(0),
           &S::vorticity);
}

ShapeList<EmitterSettings> emitter_list() {
  using E = EmitterSettings;
  std::vector<ShapeKeys<E>> shapes = {
      {"disc",
       "a disc of lattice points (a line segment in 2D), one layer per emission; the next layer waits while "
       "the centre of the last one is within half a spacing of the disc (B12)",
       SettingsKeys<E>()
           .add(KeySchema::vector("center", "centre").measured_in("m").mandatory(), &E::center)
           .add(KeySchema::real("radius", "radius").measured_in("m").mandatory().above(0), &E::radius)
           .add(KeySchema::axis("axis", "the disc's normal; emission goes along the velocity"), &E::axis)},
      {"box", "a box of lattice points per emission",
       SettingsKeys<E>()
           .add(KeySchema::vector("min", "lowest corner").measured_in("m").mandatory(), &E::min)
           .add(KeySchema::vector("max", "highest corner").measured_in("m").mandatory(), &E::max)
           .check([](const scene::MapReader& box, E&) { scene::check_box(box); })},
  };
  SettingsKeys<E> common;
  common.add(KeySchema::choice("shape", shape_names(shapes), "the emitter's geometry").mandatory(), &E::shape)
      .add(KeySchema::text("material", "name of a material in `materials` (its density gives the mass)")
               .mandatory()
               .material_name(),
           &E::material)
      .add(KeySchema::vector("velocity", "velocity of emitted particles").measured_in("m/s"), &E::velocity)
      .add(KeySchema::real("rate",
                           "particles per second (an emission whenever a whole lattice is due); unset: "
                           "one emission per frame")
               .measured_in("1/s")
               .above(0),
           &E::rate)
      .add(KeySchema::integer("count", "emission stops after this many particles (the last emission is cut)")
               .mandatory()
               .at_least(1),
           &E::count)
      .add(KeySchema::real("start", "time of the first emission").measured_in("s").at_least(0), &E::start)
      .add(KeySchema::real("jitter", "positions are jittered by up to this fraction of the spacing")
               .at_least(0)
               .below(0.5),
           &E::jitter)
      .add(KeySchema::integer("seed", "seed of the jitter").at_least(0), &E::seed);
  return {
      "emitters",
      "Sources of particles (pbd_powder): each emission places a lattice of spacing pbd_powder.spacing in "
      "the shape, jittered from a fixed seed; ids are unique without communication.",
      std::move(common), std::move(shapes)};
}

// Particles come from bodies or emitters, are pbd_powder.spacing apart, and the one-cell halo holds
// a neighbourhood after a substep (spec 003 §11).
void check_scene(const SceneCheck& check) {
  const Scene& scene = check.scene;
  if (scene.bodies.empty() && scene.sections.get<std::vector<EmitterSettings>>().empty())
    check.fail("bodies", "must list at least one body, or the scene needs emitters");
  for (std::size_t b = 0; b < scene.bodies.size(); ++b) {
    const std::string key = "bodies." + std::to_string(b) + ".particles_per_cell";
    if (check.has(key))
      check.fail(key, "is not used by pbd_powder: its particles are pbd_powder.spacing apart");
  }
  const PbdPowderSettings& pbd = scene.sections.get<PbdPowderSettings>();
  const Real h = pbd.support * pbd.spacing;
  if (scene.grid.dx < 1.8 * h * (1 - 1e-9))
    check.fail("grid",
               fmt::format("dx {} is below 1.8 h = {:.6g} (h = pbd_powder.support x spacing = {:.6g}): "
                           "the particle halo of one cell must hold the neighbours within h after a "
                           "substep's motion of up to 0.4 h",
                           format_number(scene.grid.dx), 1.8 * h, h));
}

MethodSchema pbd_powder_schema() {
  MethodSchema method;
  method.name = "pbd_powder";
  method.sections = {method_section(
      "pbd_powder", "position based powder",
      "Powder by position based dynamics with state transitions (spec 003). One step is one frame "
      "(time.dt, 1/60 s in the paper) of `substeps` PBD substeps. grid.dx must be at least 1.8 h (the "
      "one-cell particle halo holds every neighbour after a substep's motion, which is clamped to 0.4 h).",
      pbd_powder_keys())};
  method.lists = {method_list("particle sources", emitter_list())};
  method.bodies_optional = true;
  method.check = check_scene;
  return method;
}

// Registered before main() (the methods library is linked whole: nendo_whole_archive in CMake).
[[maybe_unused]] const bool registered = (register_method(pbd_powder_schema()), true);

}  // namespace

}  // namespace nendo
