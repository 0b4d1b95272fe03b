#include "methods/shape_matching/ShapeMatchingSettings.hpp"

#include "methods/HeldVertices.hpp"

namespace nendo {

namespace {

SettingsKeys<ShapeMatchingSettings> shape_matching_keys() {
  using S = ShapeMatchingSettings;
  return SettingsKeys<S>()
      .add(KeySchema::real("alpha",
                           "stiffness: the fraction of the way to the goal positions per step (Eq. 4)")
               .above(0)
               .at_most(1),
           &S::alpha)
      .add(
          KeySchema::real("beta",
                          "example strength: the example weights are scaled by beta and the rest goes to the "
                          "rest shape each step (section 4.3); 0 is plain shape matching")
              .at_least(0)
              .below(1),
          &S::beta)
      .add(KeySchema::real("damping",
                           "velocity damping k_d per step, v <- (1 - k_d) v (not in the paper, spec A7)")
               .at_least(0)
               .below(1),
           &S::damping)
      .add(KeySchema::choice(
               "rotation", {"matched", "Apq", "A"},
               "where the goal's rotation R_r comes from (spec A3): matched, the rotation that best fits the "
               "distorted rest shape S~_r q to the current positions, polar(A_pq S~_r) (torque-free regions "
               "for "
               "any S~, so angular momentum is conserved; Mueller's R when S~ = I); Apq, polar(A_pq) "
               "(Mueller et "
               "al. 2005; S_r = sym(R^T A_r)); A, polar(A_r) (the paper: regions with an anisotropic A_qq "
               "exert "
               "torques, a free body spins up). S_r, what is projected onto the examples, is from polar(A_r) "
               "except with Apq"),
           &S::rotation)
      .add(KeySchema::choice(
               "descriptor", {"plain", "frobenius"},
               "6-vector of a stretch in the least-squares projection (Eq. 6): plain entries, or "
               "off-diagonals scaled by sqrt(2) so that its norm is the Frobenius norm (spec A4)"),
           &S::descriptor)
      .add(KeySchema::integer("max_ring",
                              "largest region a mesh may have (a vertex and its neighbours along tet edges); "
                              "each particle stores this many ids")
               .at_least(5)
               .at_most(256),
           &S::max_ring);
}

KeySchema start_key() {
  return KeySchema::real("start",
                         "where the deformed part begins along the axis, as a fraction of the length")
      .at_least(0)
      .below(1);
}

ShapeList<ExampleSettings> example_list() {
  using E = ExampleSettings;
  std::vector<ShapeKeys<E>> types = {
      {"twist", "rotation of every cross-section about the long axis by angle (s / l - 1/2)",
       SettingsKeys<E>().add(KeySchema::real("angle", "end-to-end twist").measured_in("degrees").mandatory(),
                             &E::angle)},
      {"bend",
       "S shape: the centre line moves to amplitude sin(2 pi s / l) along direction, each cross-section "
       "turning to stay perpendicular to it",
       SettingsKeys<E>()
           .add(KeySchema::real("amplitude", "amplitude of the centre line").measured_in("m").mandatory(),
                &E::amplitude)
           .add(KeySchema::axis("direction", "axis the centre line moves along"), &E::direction)},
      {"squash",
       "the part beyond start is compressed along the long axis by factor and widened to keep its volume "
       "(a crumpled nose)",
       SettingsKeys<E>()
           .add(KeySchema::real("factor", "length ratio of the compressed part")
                    .mandatory()
                    .above(0)
                    .at_most(4),
                &E::factor)
           .add(start_key(), &E::start)},
      {"shear",
       "the part beyond start is sheared: it moves along direction by tan(angle) times its distance "
       "from start",
       SettingsKeys<E>()
           .add(KeySchema::real("angle", "shear angle")
                    .measured_in("degrees")
                    .mandatory()
                    .above(-80)
                    .below(80),
                &E::angle)
           .add(KeySchema::axis("direction", "axis the sheared part moves along").defaults_to("y"),
                &E::direction)
           .add(start_key(), &E::start)},
      {"file", "a mesh file with the body's vertices in the same order",
       SettingsKeys<E>().add(
           KeySchema::text("path", "Gmsh mesh file, relative to the scene file").mandatory().existing_file(),
           &E::path)},
  };
  SettingsKeys<E> common;
  common.add(KeySchema::choice("type", shape_names(types), "how the example is made").mandatory(), &E::type);
  return {"examples",
          "Deformed copies of a shape-matching body (spec 001 section 7.4), under a body's `examples`. "
          "The generators act along the longest axis s in [0, l] of the body's rest bounding box.",
          std::move(common), std::move(types)};
}

SettingsKeys<ShapeMatchingBody> body_keys() {
  using B = ShapeMatchingBody;
  SettingsKeys<B> keys;
  keys.add_nested(KeySchema::list("examples", "example shapes, see [examples](#examples)").defaults_to("[]"),
                  [](const scene::Cursor& list, const scene::ReadContext& context, B& body) {
                    body.examples = read_shape_list(list, example_list(), context);
                  })
      .add(KeySchema::choice("groups", {"global", "per_region", "slabs"},
                             "regions projected together onto the examples (section 4.4): the whole body, "
                             "each region alone, or group_slabs slabs along group_axis"),
           &B::groups)
      .add(KeySchema::integer("group_slabs", "number of equal slabs (groups: slabs)")
               .at_least(1)
               .at_most(1024),
           &B::group_slabs)
      .add(KeySchema::axis("group_axis", "axis the slabs are stacked along"), &B::group_axis);
  add_held_vertex_keys(keys)
      .add(KeySchema::integer("initial_example", "the body starts in this example's shape (0: rest)")
               .at_least(0),
           &B::initial_example)
      .check([](const scene::MapReader& map, B& body) {
        if (body.initial_example > static_cast<int>(body.examples.size()))
          map.fail("initial_example", "is " + std::to_string(body.initial_example) + " but the body has " +
                                          std::to_string(body.examples.size()) + " examples");
      });
  return keys;
}

MethodSchema shape_matching_schema() {
  MethodSchema method;
  method.name = "shape_matching";
  method.dimensions = {3};
  method.dimension_note = "its bodies are tetrahedral meshes";
  method.sections = {method_section(
      "shape_matching", "example-based shape matching",
      "Example-based shape matching (spec 001). Bodies are tetrahedral meshes: a box is a lattice of "
      "spacing grid.dx / particles_per_cell cut into 6 tets per cube, a cylinder is meshed by Gmsh with "
      "that edge length, a file body reads a Gmsh mesh. grid.dx must exceed every edge (the particle "
      "halo is one cell). Materials give the density only.",
      shape_matching_keys())};
  method.body = method_body_keys(body_keys());
  method.body_lists = {example_list().schema()};
  return method;
}

// Registered before main() (the methods library is linked whole: nendo_whole_archive in CMake).
[[maybe_unused]] const bool registered = (register_method(shape_matching_schema()), true);

}  // namespace

}  // namespace nendo
