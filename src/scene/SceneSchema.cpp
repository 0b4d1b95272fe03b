#include "scene/SceneSchema.hpp"

#include "scene/MaterialSchema.hpp"

namespace nendo {

namespace {

SettingsKeys<TimeSettings> time_keys() {
  return SettingsKeys<TimeSettings>()
      .add(KeySchema::real("end", "simulated time at which the run stops")
               .measured_in("s")
               .mandatory()
               .above(0),
           &TimeSettings::end)
      .add(
          KeySchema::real("dt",
                          "time step: the fixed step (explicit MPM refuses one above the first step's stable "
                          "limit dx / max(wave speed + |v|)), or the largest step when cfl is set")
              .measured_in("s")
              .when_unset("unset: the step comes from cfl alone")
              .above(0),
          &TimeSettings::dt)
      .add(KeySchema::real("cfl", "CFL number of the adaptive time step")
               .when_unset("unset: fixed step dt")
               .above(0)
               .at_most(1),
           &TimeSettings::cfl)
      .add(KeySchema::choice(
               "integrator", {"explicit", "implicit"},
               "explicit (symplectic Euler) or implicit (a Newton-Krylov solve per step, see implicit)"),
           &TimeSettings::integrator)
      .check([](const scene::MapReader& time, TimeSettings&) {
        if (!time.has("dt") && !time.has("cfl")) time.map().fail("needs dt, cfl or both");
      });
}

SettingsKeys<GridSettings> grid_keys() {
  return SettingsKeys<GridSettings>()
      .add(KeySchema::real("dx", "cell size: the MPM grid spacing, or the kernel support of particle methods")
               .measured_in("m")
               .mandatory()
               .above(0),
           &GridSettings::dx)
      .add(KeySchema::integer("block",
                              "cells per block edge (blocks are the unit of distribution; a particle's "
                              "window of grid nodes must reach only the neighbouring blocks)")
               .at_least(3)
               .at_most(16),
           &GridSettings::block)
      .add(KeySchema::choice("kernel", {"quadratic", "cubic"}, "B-spline interpolation kernel"),
           &GridSettings::kernel)
      .add(KeySchema::choice("transfer", {"apic", "pic", "flip"}, "particle-grid transfer scheme"),
           &GridSettings::transfer)
      .add(KeySchema::real("flip_ratio", "FLIP share of the flip transfer (1 - flip_ratio is PIC)")
               .at_least(0)
               .at_most(1),
           &GridSettings::flip_ratio)
      .add(
          KeySchema::boolean("overlap",
                             "overlap the grid ghost exchange with work on interior blocks (false: exchange, "
                             "then compute; the results are the same bits either way)"),
          &GridSettings::overlap);
}

SettingsKeys<OutputSettings> output_keys() {
  return SettingsKeys<OutputSettings>()
      .add(KeySchema::text("dir", "directory of the HDF5/XDMF output, relative to the working directory"),
           &OutputSettings::dir)
      .add(KeySchema::real("every", "simulated time between outputs")
               .measured_in("s")
               .when_unset("unset: time.end / 100 when every_steps is unset too")
               .above(0),
           &OutputSettings::every)
      .add(KeySchema::integer("every_steps", "steps between outputs; set every or every_steps, not both")
               .when_unset("unset: output by simulated time")
               .above(0),
           &OutputSettings::every_steps)
      .add(KeySchema::text_list("fields", "particle fields written besides position")
               .one_of(output_field_names()),
           &OutputSettings::fields)
      .add(KeySchema::choice("precision", {"double", "single"},
                             "type of the floating fields in the files: double (float64) or single (float32, "
                             "half the bytes, about 7 significant digits); checkpoints always keep double"),
           &OutputSettings::precision)
      .add(KeySchema::choice("compression", {"none", "deflate"},
                             "compression of the particle datasets: none, or deflate (HDF5's shuffle and "
                             "deflate filters, which h5py and ParaView read without plugins)"),
           &OutputSettings::compression)
      .add(KeySchema::integer("compression_level", "deflate level: 1 is the fastest, 9 the smallest")
               .at_least(1)
               .at_most(9),
           &OutputSettings::compression_level)
      .check([](const scene::MapReader& output, OutputSettings&) {
        if (output.has("every") && output.has("every_steps"))
          output.fail("every_steps", "conflicts with every: set only one of them");
      });
}

SettingsKeys<CheckpointSettings> checkpoint_keys() {
  return SettingsKeys<CheckpointSettings>()
      .add(KeySchema::text("dir", "checkpoint directory, relative to the working directory")
               .when_unset("unset: `checkpoints` in the output directory"),
           &CheckpointSettings::dir)
      .add(KeySchema::integer("every_steps", "steps between checkpoints; 0 turns periodic checkpoints off")
               .at_least(0),
           &CheckpointSettings::every_steps)
      .add(KeySchema::real("every", "simulated time between checkpoints; 0 turns them off")
               .measured_in("s")
               .at_least(0),
           &CheckpointSettings::every)
      .add(KeySchema::integer("keep", "number of most recent checkpoints kept").at_least(1),
           &CheckpointSettings::keep)
      .add(KeySchema::real(
               "walltime",
               "wall-time budget of the run: a final checkpoint and a clean exit (code 0) before it "
               "runs out; 0 is off (nendo run --walltime overrides it)")
               .measured_in("s")
               .at_least(0),
           &CheckpointSettings::walltime);
}

SettingsKeys<BalanceSettings> balance_keys() {
  return SettingsKeys<BalanceSettings>()
      .add(KeySchema::integer("every_steps", "steps between load-balance checks; 0 turns re-balancing off")
               .at_least(0),
           &BalanceSettings::every_steps)
      .add(KeySchema::real("threshold", "re-balance when the max/mean load over ranks exceeds this")
               .at_least(1),
           &BalanceSettings::threshold)
      .add_custom(
          KeySchema::choice("weights", {"count", "time"},
                            "the load: count (particles and grid nodes per block) or time (each rank's "
                            "measured work since the last check, outside MPI calls, shared among its "
                            "blocks by count)")
              .defaults_to("count"),
          [](const scene::MapReader& balance, BalanceSettings& settings) {
            settings.by_time = balance.text("weights") == "time";
          });
}

SettingsKeys<CatalystSettings> catalyst_keys() {
  return SettingsKeys<CatalystSettings>()
      .add_custom(KeySchema::text_list("scripts",
                                       "ParaView Catalyst scripts (`# script-version: 2`), relative to the "
                                       "scene file; they must exist")
                      .defaults_to("[]"),
                  [](const scene::MapReader& catalyst, CatalystSettings& settings) {
                    if (!catalyst.has("scripts")) return;
                    const scene::Cursor& scripts = catalyst.cursor("scripts");
                    for (std::size_t i = 0; i < scripts.node.size(); ++i)
                      settings.scripts.push_back(scene::existing_file(scripts.item(i)));
                  })
      .add(KeySchema::integer("every_steps", "steps between Catalyst co-processing calls").above(0),
           &CatalystSettings::every_steps)
      .add(KeySchema::text_list("fields", "particle fields shown to the scripts besides position")
               .when_unset("unset: those of id, velocity, mass, volume, material, stress, J, Jp, rank the "
                           "method has")
               .one_of(output_field_names()),
           &CatalystSettings::fields);
}

// A section the spine reads into scene.*member.
template <class Settings>
SceneSection spine_section(std::string name, std::string description, SettingsKeys<Settings> keys,
                           Settings Scene::*member) {
  return settings_section(std::move(name), "", std::move(description), std::move(keys),
                          [member](Scene& scene, Settings settings) { scene.*member = std::move(settings); });
}

std::vector<SceneSection> make_spine_sections() {
  std::vector<SceneSection> sections;
  sections.push_back(spine_section("time", "Time stepping. At least one of dt and cfl is required.",
                                   time_keys(), &Scene::time));
  sections.push_back(spine_section("grid", "The background grid and its blocks.", grid_keys(), &Scene::grid));
  sections.push_back(spine_section("output",
                                   "Particle output: one HDF5 file per output time and one XDMF time series.",
                                   output_keys(), &Scene::output));
  sections.push_back(spine_section("checkpoint", "Restart files; a checkpoint restarts on any rank count.",
                                   checkpoint_keys(), &Scene::checkpoint));
  sections.push_back(spine_section(
      "balance",
      "Dynamic load balance: blocks are weighted by their particles and grid nodes, and the "
      "space-filling-curve partition is recomputed when the load is uneven. Results do not depend on it.",
      balance_keys(), &Scene::balance));
  sections.push_back(spine_section("catalyst", "ParaView Catalyst in-situ visualisation.", catalyst_keys(),
                                   &Scene::catalyst));
  return sections;
}

KeySchema velocity_key(std::string description) {
  return KeySchema::vector("velocity", std::move(description)).measured_in("m/s");
}

ShapeKeys<BodySettings> body_box() {
  return {"box", "an axis-aligned box",
          SettingsKeys<BodySettings>()
              .add(KeySchema::vector("min", "lowest corner").measured_in("m").mandatory(), &BodySettings::min)
              .add(KeySchema::vector("max", "highest corner; above min on every axis")
                       .measured_in("m")
                       .mandatory(),
                   &BodySettings::max)
              .check([](const scene::MapReader& box, BodySettings&) { scene::check_box(box); })};
}

KeySchema center_key(std::string description) {
  return KeySchema::vector("center", std::move(description)).measured_in("m").mandatory();
}

KeySchema radius_key() { return KeySchema::real("radius", "radius").measured_in("m").mandatory().above(0); }

ShapeList<BodySettings> make_body_list() {
  std::vector<ShapeKeys<BodySettings>> shapes = {
      body_box(),
      {"sphere", "a ball (a disc in 2D)",
       SettingsKeys<BodySettings>()
           .add(center_key("centre"), &BodySettings::center)
           .add(radius_key(), &BodySettings::radius)},
      {"cylinder", "a solid cylinder standing on its base (in 2D the axis-aligned rectangle it projects to)",
       SettingsKeys<BodySettings>()
           .add(center_key("centre of the base"), &BodySettings::center)
           .add(KeySchema::axis("axis", "direction of the cylinder axis; z only in 3D"), &BodySettings::axis)
           .add(radius_key(), &BodySettings::radius)
           .add(KeySchema::real("height", "length along the axis").measured_in("m").mandatory().above(0),
                &BodySettings::height)},
      {"file", "particles or a mesh read from a file",
       SettingsKeys<BodySettings>().add(
           KeySchema::text("path",
                           "point file (HDF5) or mesh file, relative to the scene file; it must exist")
               .mandatory()
               .existing_file(),
           &BodySettings::path)},
  };
  SettingsKeys<BodySettings> common;
  common
      .add(KeySchema::choice("shape", shape_names(shapes), "the body's geometry").mandatory(),
           &BodySettings::shape)
      .add(KeySchema::text("material", "name of a material defined under materials")
               .mandatory()
               .material_name(),
           &BodySettings::material)
      .add(
          KeySchema::integer("particles_per_cell", "particles per cell along each axis (2: 8 per cell in 3D)")
              .at_least(1),
          &BodySettings::particles_per_cell)
      .add(velocity_key("initial velocity"), &BodySettings::velocity);
  return {"bodies",
          "The material bodies, sampled into particles. `shape` selects the keys of each body; the scene's "
          "method may add keys of its own (below).",
          std::move(common), std::move(shapes)};
}

}  // namespace

std::vector<KeySchema> top_level_keys() {
  std::vector<KeySchema> keys = {
      KeySchema::integer("nendo", "scene format version").mandatory().one_of({"1"}),
      KeySchema::choice("method", method_names(), "simulation method").mandatory(),
      KeySchema::integer("dimension", "2 or 3; every vector has this many numbers")
          .mandatory()
          .one_of({"2", "3"}),
      KeySchema::vector("gravity", "gravitational acceleration").measured_in("m/s^2").defaults_to("0"),
      KeySchema::section("time", "time stepping, see [time](#time)").mandatory(),
      KeySchema::section("grid", "grid and blocks, see [grid](#grid)").mandatory(),
      KeySchema::section("materials", "named materials, see [materials](#materials)").mandatory(),
      KeySchema::list("bodies", "material bodies, see [bodies](#bodies); a method may allow none")
          .defaults_to("[]"),
      KeySchema::list("colliders", "collision objects, see [colliders](#colliders)").defaults_to("[]"),
      KeySchema::section("output", "output files, see [output](#output)").defaults_to("{}"),
      KeySchema::section("checkpoint", "restart files, see [checkpoint](#checkpoint)").defaults_to("{}"),
      KeySchema::section("balance", "load balance, see [balance](#balance)").defaults_to("{}"),
      KeySchema::section("catalyst", "in-situ visualisation, see [catalyst](#catalyst)").defaults_to("{}"),
  };
  for (const SceneSection* section : method_sections())
    keys.push_back(KeySchema::section(section->name, section->summary + ", see [" + section->name + "](#" +
                                                         section->name + ")")
                       .defaults_to("{}"));
  for (const auto& [method, list] : method_lists())
    keys.push_back(KeySchema::list(list->schema.name, list->summary + " (" + method->name + "), see [" +
                                                          list->schema.name + "](#" + list->schema.name + ")")
                       .defaults_to("[]"));
  return keys;
}

const std::vector<SceneSection>& spine_sections() {
  static const std::vector<SceneSection> sections = make_spine_sections();
  return sections;
}

const SceneSection* find_section(const std::string& name) {
  for (const SceneSection& section : spine_sections())
    if (section.name == name) return &section;
  return find_method_section(name);
}

const ShapeList<BodySettings>& body_list() {
  static const ShapeList<BodySettings> list = make_body_list();
  return list;
}

ShapeList<ColliderSettings> collider_list() {
  const std::vector<ShapeKeys<ColliderSettings>>& shapes = collider_shapes();
  SettingsKeys<ColliderSettings> common;
  common
      .add(KeySchema::choice("shape", shape_names(shapes), "the collider's geometry").mandatory(),
           &ColliderSettings::shape)
      .add(KeySchema::choice("boundary", {"sticky", "slip", "separate"}, "boundary condition"),
           &ColliderSettings::boundary)
      .add(KeySchema::real("friction", "Coulomb friction coefficient (separate)").at_least(0),
           &ColliderSettings::friction)
      .add(velocity_key("velocity of the collider"), &ColliderSettings::velocity);
  return {"colliders",
          "Analytic collision objects (spec 002 §11.1). sticky: relative velocity set to zero. slip: normal "
          "relative velocity removed always. separate: normal part removed only when approaching, tangential "
          "part reduced by Coulomb friction.",
          std::move(common), shapes};
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
