#include "scene/SceneLoader.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "scene/MapReader.hpp"
#include "scene/MaterialSchema.hpp"
#include "scene/SceneOverrides.hpp"
#include "scene/SceneSchema.hpp"

namespace nendo {

namespace {

using scene::Cursor;
using scene::DimensionSource;
using scene::MapReader;

YAML::Node parse_yaml(const std::string& text, const std::string& path) {
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& error) {
    throw SceneError(path + ":" + std::to_string(error.mark.line + 1), "", "YAML syntax error: " + error.msg);
  }
}

void require_scene_map(const YAML::Node& root, const std::string& path) {
  if (root.IsMap()) return;
  const std::string line = scene::line_of(root);
  const std::string where = path + ":" + (line.empty() ? "1" : line);
  if (root.IsNull()) throw SceneError(where, "", "the scene is empty");
  throw SceneError(where, "", "the scene must be a map of keys (got " + scene::describe(root) + ")");
}

void check_box(const MapReader& box, int dimension) {
  const Vec3 min = box.vector("min");
  const Vec3 max = box.vector("max");
  for (int axis = 0; axis < dimension; ++axis) {
    if (min[axis] < max[axis]) continue;
    box.fail("max", fmt::format("must be greater than min on every axis ({}: min {}, max {})", "xyz"[axis],
                                format_number(min[axis]), format_number(max[axis])));
  }
}

Vec3 unit_normal(const MapReader& plane) {
  Vec3 normal = plane.vector("normal");
  const Real length = std::sqrt(normal[0] * normal[0] + normal[1] * normal[1] + normal[2] * normal[2]);
  if (length == 0) plane.fail("normal", "must not be the zero vector");
  for (Real& component : normal) component /= length;
  return normal;
}

bool knows(const std::vector<KeySchema>& keys, const std::string& name) { return find_key(keys, name); }

class SceneReader {
 public:
  SceneReader(const scene::SceneSource& source, const YAML::Node& root)
      : source_(source), root_(root), directory_(std::filesystem::path(source.file).parent_path()) {}

  Scene read() {
    Scene scene;
    const scene::NestedReaders sections = {
        {"time", [&](const Cursor& c) { scene.time = read_time(c); }},
        {"grid", [&](const Cursor& c) { scene.grid = read_grid(c); }},
        {"materials", [&](const Cursor& c) { scene.materials = read_materials(c); }},
        {"bodies", [&](const Cursor& c) { scene.bodies = read_bodies(c); }},
        {"colliders", [&](const Cursor& c) { scene.colliders = read_colliders(c); }},
        {"output", [&](const Cursor& c) { scene.output = read_output(c); }},
        {"checkpoint", [&](const Cursor& c) { scene.checkpoint = read_checkpoint(c); }},
        {"balance", [&](const Cursor& c) { scene.balance = read_balance(c); }},
        {"catalyst", [&](const Cursor& c) { scene.catalyst = read_catalyst(c); }},
        {"implicit", [&](const Cursor& c) { scene.implicit = read_implicit(c); }},
        {"slave_sph", [&](const Cursor& c) { scene.slave_sph = read_slave_sph(c); }},
        {"shape_matching", [&](const Cursor& c) { scene.shape_matching = read_shape_matching(c); }},
        {"pbd_powder", [&](const Cursor& c) { scene.pbd_powder = read_pbd_powder(c); }},
        {"fem", [&](const Cursor& c) { scene.fem = read_fem(c); }},
        {"emitters", [&](const Cursor& c) { scene.emitters = read_emitters(c); }},
    };
    const MapReader top(root(), top_level_keys(), dimension_source(), sections);
    scene.format = top.integer("nendo");
    scene.method = top.text("method");
    scene.dimension = dimension();
    scene.gravity = top.vector("gravity");
    if (scene.method == "slave_sph" && scene.dimension != 3)
      top.fail("dimension", "slave_sph is three-dimensional (its kernel, Eq. 3, is the 3D cubic spline)");
    if ((scene.method == "shape_matching" || scene.method == "fem") && scene.dimension != 3)
      top.fail("dimension", scene.method + " is three-dimensional (its bodies are tetrahedral meshes)");
    check_sources(top, scene);
    if (!scene.output.every && !scene.output.every_steps) scene.output.every = scene.time.end / 100;
    return scene;
  }

 private:
  Cursor root() const { return {&source_, root_, "", ""}; }

  DimensionSource dimension_source() {
    return [this] { return dimension(); };
  }

  int dimension() {
    if (!dimension_) dimension_ = read_dimension();
    return *dimension_;
  }

  int read_dimension() {
    const Cursor top = root();
    const std::vector<scene::MapEntry> entries = scene::map_entries(top);
    const scene::MapEntry* entry = scene::find_entry(entries, "dimension");
    if (!entry) top.fail_missing("dimension");
    check_value(entry->value, *find_key(top_level_keys(), "dimension"), dimension_source());
    return static_cast<int>(*scene::parse_integer(entry->value.node.Scalar()));
  }

  MapReader section(const Cursor& map, const std::string& name) {
    return MapReader(map, section_schema(name).keys, dimension_source());
  }

  TimeSettings read_time(const Cursor& map) {
    const MapReader time = section(map, "time");
    if (!time.has("dt") && !time.has("cfl")) map.fail("needs dt, cfl or both");
    TimeSettings settings;
    settings.end = time.real("end");
    settings.dt = time.optional_real("dt");
    settings.cfl = time.optional_real("cfl");
    settings.integrator = time.text("integrator");
    return settings;
  }

  GridSettings read_grid(const Cursor& map) {
    const MapReader grid = section(map, "grid");
    GridSettings settings;
    settings.dx = grid.real("dx");
    settings.block = grid.integer("block");
    settings.kernel = grid.text("kernel");
    settings.transfer = grid.text("transfer");
    settings.flip_ratio = grid.real("flip_ratio");
    settings.overlap = grid.boolean("overlap");
    return settings;
  }

  std::map<std::string, MaterialSettings> read_materials(const Cursor& map) {
    std::map<std::string, MaterialSettings> materials;
    for (const scene::MapEntry& entry : scene::map_entries(map)) {
      materials.emplace(entry.name, read_material(entry.value));
    }
    return materials;
  }

  MaterialSettings read_material(const Cursor& map) {
    const KeySchema model_key = material_model_key();
    const MaterialModelSchema& model = *find_material_model(selector(map, model_key));
    std::vector<KeySchema> keys = {model_key};
    keys.insert(keys.end(), model.parameters.begin(), model.parameters.end());
    const MapReader material(map, keys, dimension_source());
    MaterialSettings settings;
    settings.model = model.name;
    for (const KeySchema& parameter : model.parameters) {
      settings.params[parameter.name] = material.real(parameter.name);
    }
    return settings;
  }

  // The value of the key that selects a map's other keys (a material's model, a body's shape).
  std::string selector(const Cursor& map, const KeySchema& key) {
    const std::vector<scene::MapEntry> entries = scene::map_entries(map);
    const scene::MapEntry* entry = scene::find_entry(entries, key.name);
    if (!entry) map.fail_missing(key.name);
    check_value(entry->value, key, dimension_source());
    return entry->value.node.Scalar();
  }

  // The fem halo is one cell: it must hold every corner of a tet at an owned node and the masters
  // of its hanging corners, 2.5 level-0 edges away (a cube's Kuhn tets have edges up to √3 spacing).
  void check_fem_reach(const MapReader& top, const Scene& scene) {
    const Real edge = std::sqrt(3.0) * scene.fem.spacing;
    if (scene.grid.dx < 2.5 * edge * (1 - 1e-9))
      top.fail("grid",
               fmt::format("dx {} is below 2.5 x the longest level-0 edge ({:.6g} = sqrt(3) x fem.spacing "
                           "{}), {:.6g}: the one-cell halo must hold each node's tets and the masters of "
                           "their hanging nodes",
                           scene.grid.dx, edge, scene.fem.spacing, 2.5 * edge));
  }

  // Every method needs bodies, except that pbd_powder may pour all its particles from emitters;
  // and pbd_powder's halo must hold a neighbourhood after a substep (spec 003 §11).
  void check_sources(const MapReader& top, const Scene& scene) {
    const bool powder = scene.method == "pbd_powder";
    if (!powder && !scene.emitters.empty()) top.fail("emitters", "are a pbd_powder feature");
    if (scene.bodies.empty() && scene.emitters.empty())
      top.fail("bodies", powder ? "must list at least one body, or the scene needs emitters"
                                : "must list at least one body");
    if (scene.method == "fem") check_fem_reach(top, scene);
    if (!powder) return;
    const Real h = scene.pbd_powder.support * scene.pbd_powder.spacing;
    if (scene.grid.dx < 1.8 * h * (1 - 1e-9))
      top.fail("grid",
               fmt::format("dx {} is below 1.8 h = {:.6g} (h = pbd_powder.support x spacing = {:.6g}): the "
                           "particle halo of one cell must hold the neighbours within h after a "
                           "substep's motion of up to 0.4 h",
                           format_number(scene.grid.dx), 1.8 * h, h));
  }

  std::vector<BodySettings> read_bodies(const Cursor& list) {
    std::vector<BodySettings> bodies;
    for (std::size_t i = 0; i < list.node.size(); ++i)
      bodies.push_back(read_body(list.item(i), bodies.empty() ? nullptr : &bodies.front()));
    return bodies;
  }

  bool method_is(const char* name) const {
    const YAML::Node method = root_["method"];
    return method && method.IsScalar() && method.Scalar() == name;
  }

  // time.integrator as written, before the time section is read (a time that is not a map, found
  // by the fuzzer, is the time section's error to report).
  bool integrator_is(const char* name) const {
    const YAML::Node time = root_["time"];
    if (!time || !time.IsMap()) return false;
    const YAML::Node integrator = time["integrator"];
    return integrator && integrator.IsScalar() && integrator.Scalar() == name;
  }

  // Slave SPH (spec 000 §3.14): one master spacing d = dx / particles_per_cell for the whole scene
  // (the slaves' lattice and quadrature volume), and a block cell of at least 2h + d/2 with h = d,
  // so that the one-cell particle halo holds every neighbour within 2h after a step's motion.
  void check_slave_sph_spacing(const MapReader& reader, const BodySettings& first, const BodySettings& body) {
    if (body.particles_per_cell < 3)
      reader.fail("particles_per_cell",
                  "slave_sph needs at least 3 (the block cell dx must hold the kernel support 2h = 2d "
                  "plus a margin for the particles' motion, with d = dx / particles_per_cell)");
    if (body.particles_per_cell != first.particles_per_cell)
      reader.fail("particles_per_cell",
                  "slave_sph uses one master spacing for the whole scene: every body needs the same "
                  "particles_per_cell (the first has " +
                      std::to_string(first.particles_per_cell) + ")");
  }

  // `first`: the scene's first body, null when this is it.
  BodySettings read_body(const Cursor& map, const BodySettings* first) {
    const ShapeSchema& shape = selected(map, body_schema());
    const std::vector<KeySchema> keys = body_schema().keys_of(shape);
    BodySettings settings;
    const scene::NestedReaders nested = {
        {"examples", [&](const Cursor& c) { settings.examples = read_examples(c); }}};
    const MapReader body(map, keys, dimension_source(), nested);
    read_shape_matching_body(body, settings);
    settings.shape = shape.name;
    settings.material = material_reference(body);
    settings.particles_per_cell = body.integer("particles_per_cell");
    settings.velocity = body.vector("velocity");
    if (knows(keys, "min")) check_box(body, dimension());
    if (knows(keys, "min")) settings.min = body.vector("min");
    if (knows(keys, "max")) settings.max = body.vector("max");
    if (knows(keys, "center")) settings.center = body.vector("center");
    if (knows(keys, "radius")) settings.radius = body.real("radius");
    if (knows(keys, "axis")) settings.axis = body.axis("axis");
    if (knows(keys, "height")) settings.height = body.real("height");
    if (knows(keys, "path")) settings.path = existing_file(body.cursor("path"));
    if (method_is("slave_sph")) check_slave_sph_spacing(body, first ? *first : settings, settings);
    if (method_is("pbd_powder") && body.has("particles_per_cell"))
      body.fail("particles_per_cell",
                "is not used by pbd_powder: its particles are pbd_powder.spacing apart");
    return settings;
  }

  // The keys of a shape-matching body (spec 001): examples, groups, held vertices.
  void read_shape_matching_body(const MapReader& body, BodySettings& settings) {
    static const char* const keys[] = {"examples", "groups", "group_slabs", "group_axis", "initial_example"};
    static const char* const mesh_keys[] = {"fixed_min", "fixed_max"};
    static const char* const fem_keys[] = {"alternate_material", "alternate_cell"};
    const bool mesh = method_is("shape_matching") || method_is("fem");
    for (const char* key : mesh_keys)
      if (!mesh && body.has(key)) body.fail(key, "is a key of shape_matching and fem bodies only");
    for (const char* key : fem_keys)
      if (!method_is("fem") && body.has(key)) body.fail(key, "is a key of fem bodies only");
    if (!method_is("shape_matching")) {
      for (const char* key : keys)
        if (body.has(key)) body.fail(key, "is a key of shape_matching bodies only");
    } else {
      settings.groups = body.text("groups");
      settings.group_slabs = body.integer("group_slabs");
      settings.group_axis = body.axis("group_axis");
    }
    if (method_is("fem")) read_fem_body(body, settings);
    if (!mesh) return;
    if (body.has("fixed_min") != body.has("fixed_max"))
      body.fail(body.has("fixed_min") ? "fixed_min" : "fixed_max", "needs fixed_min and fixed_max together");
    if (body.has("fixed_min")) {
      settings.fixed = true;
      settings.fixed_min = body.vector("fixed_min");
      settings.fixed_max = body.vector("fixed_max");
      for (int a = 0; a < 3; ++a)
        if (settings.fixed_max[a] < settings.fixed_min[a])
          body.fail("fixed_max", "must not be below fixed_min on any axis");
    }
    if (!method_is("shape_matching")) return;
    settings.initial_example = body.integer("initial_example");
    if (settings.initial_example > static_cast<int>(settings.examples.size()))
      body.fail("initial_example", "is " + std::to_string(settings.initial_example) + " but the body has " +
                                       std::to_string(settings.examples.size()) + " examples");
  }

  // Fig. 4's checkerboard: a second material on alternate cells.
  void read_fem_body(const MapReader& body, BodySettings& settings) {
    if (!body.has("alternate_material")) {
      if (body.has("alternate_cell")) body.fail("alternate_cell", "needs alternate_material");
      return;
    }
    settings.alternate_material = material_reference(body, "alternate_material");
    settings.alternate_cell = body.real("alternate_cell");
    if (settings.alternate_cell <= 0) body.fail("alternate_cell", "must be above 0 with alternate_material");
  }

  // The schema's item type `map` selects with its first key (a body's shape, an example's type).
  const ShapeSchema& selected(const Cursor& map, const ShapeListSchema& schema) {
    return *schema.find_shape(selector(map, schema.common_keys.front()));
  }

  template <class Read>
  auto read_items(const Cursor& list, Read read) {
    std::vector<decltype(read(list))> items;
    for (std::size_t i = 0; i < list.node.size(); ++i) items.push_back(read(list.item(i)));
    return items;
  }

  std::vector<ExampleSettings> read_examples(const Cursor& list) {
    return read_items(list, [&](const Cursor& item) { return read_example(item); });
  }

  ExampleSettings read_example(const Cursor& map) {
    const ShapeSchema& type = selected(map, example_schema());
    const std::vector<KeySchema> keys = example_schema().keys_of(type);
    const MapReader example(map, keys, dimension_source());
    ExampleSettings settings;
    settings.type = type.name;
    if (knows(keys, "angle")) settings.angle = example.real("angle");
    if (knows(keys, "amplitude")) settings.amplitude = example.real("amplitude");
    if (knows(keys, "factor")) settings.factor = example.real("factor");
    if (knows(keys, "start")) settings.start = example.real("start");
    if (knows(keys, "direction")) settings.direction = example.axis("direction");
    if (knows(keys, "path")) settings.path = existing_file(example.cursor("path"));
    return settings;
  }

  std::vector<ColliderSettings> read_colliders(const Cursor& list) {
    return read_items(list, [&](const Cursor& item) { return read_collider(item); });
  }

  ColliderSettings read_collider(const Cursor& map) {
    const ShapeSchema& shape = selected(map, collider_schema());
    const std::vector<KeySchema> keys = collider_schema().keys_of(shape);
    const MapReader collider(map, keys, dimension_source());
    ColliderSettings settings;
    settings.shape = shape.name;
    settings.boundary = collider.text("boundary");
    settings.friction = collider.real("friction");
    settings.velocity = collider.vector("velocity");
    if (knows(keys, "point")) settings.point = collider.vector("point");
    if (knows(keys, "normal")) settings.normal = unit_normal(collider);
    if (knows(keys, "min")) check_box(collider, dimension());
    if (knows(keys, "min")) settings.min = collider.vector("min");
    if (knows(keys, "max")) settings.max = collider.vector("max");
    if (knows(keys, "center")) settings.center = collider.vector("center");
    if (knows(keys, "radius")) settings.radius = collider.real("radius");
    if (knows(keys, "axis")) settings.axis = collider.axis("axis");
    if (knows(keys, "inside")) settings.inside = collider.boolean("inside");
    return settings;
  }

  OutputSettings read_output(const Cursor& map) {
    const MapReader output = section(map, "output");
    if (output.has("every") && output.has("every_steps")) {
      output.fail("every_steps", "conflicts with every: set only one of them");
    }
    OutputSettings settings;
    settings.dir = output.text("dir");
    settings.every = output.optional_real("every");
    settings.every_steps = output.optional_integer("every_steps");
    settings.fields = output.texts("fields");
    settings.precision = output.text("precision");
    settings.compression = output.text("compression");
    settings.compression_level = output.integer("compression_level");
    return settings;
  }

  CheckpointSettings read_checkpoint(const Cursor& map) {
    const MapReader checkpoint = section(map, "checkpoint");
    CheckpointSettings settings;
    if (checkpoint.has("dir")) settings.dir = checkpoint.text("dir");
    settings.every_steps = checkpoint.integer("every_steps");
    settings.every = checkpoint.real("every");
    settings.keep = checkpoint.integer("keep");
    settings.walltime = checkpoint.real("walltime");
    return settings;
  }

  BalanceSettings read_balance(const Cursor& map) {
    const MapReader balance = section(map, "balance");
    BalanceSettings settings;
    settings.every_steps = balance.integer("every_steps");
    settings.threshold = balance.real("threshold");
    settings.by_time = balance.text("weights") == "time";
    return settings;
  }

  CatalystSettings read_catalyst(const Cursor& map) {
    const MapReader catalyst = section(map, "catalyst");
    CatalystSettings settings;
    if (catalyst.has("scripts")) {
      const Cursor& scripts = catalyst.cursor("scripts");
      for (std::size_t i = 0; i < scripts.node.size(); ++i)
        settings.scripts.push_back(existing_file(scripts.item(i)));
    }
    settings.every_steps = catalyst.integer("every_steps");
    if (catalyst.has("fields")) settings.fields = catalyst.texts("fields");
    return settings;
  }

  ImplicitSettings read_implicit(const Cursor& map) {
    const MapReader implicit = section(map, "implicit");
    ImplicitSettings settings;
    settings.scheme = implicit.text("scheme");
    settings.operator_type = implicit.text("operator");
    settings.newton_tol = implicit.real("newton_tol");
    settings.newton_atol = implicit.real("newton_atol");
    settings.max_newton = implicit.integer("max_newton");
    settings.max_halvings = implicit.integer("max_halvings");
    settings.forcing = implicit.text("forcing");
    settings.solver = implicit.text("solver");
    settings.project_spd = implicit.boolean("project_spd");
    settings.monitor = implicit.boolean("monitor");
    settings.petsc_options = implicit.text("petsc_options");
    if (implicit.has("preconditioner")) settings.preconditioner = implicit.text("preconditioner");
    if (settings.preconditioner == "multigrid" && !method_is("mpm") && !method_is("fem"))
      implicit.fail("preconditioner",
                    "multigrid coarsens implicit MPM's block grid or the fem method's tet "
                    "hierarchy; use jacobi, or operator: assembled for GAMG");
    return settings;
  }

  SlaveSphSettings read_slave_sph(const Cursor& map) {
    const MapReader sph = section(map, "slave_sph");
    SlaveSphSettings settings;
    settings.slaves = sph.boolean("slaves");
    settings.alpha = sph.real("alpha");
    settings.blend = sph.text("blend");
    settings.beta = sph.real("beta");
    settings.gamma = sph.real("gamma");
    settings.delete_distance = sph.real("delete_distance");
    settings.insertion = sph.boolean("insertion");
    settings.deletion = sph.boolean("deletion");
    settings.gradient = sph.text("gradient");
    settings.reference = sph.text("reference");
    settings.cg_tol = sph.real("cg_tol");
    settings.cg_max = sph.integer("cg_max");
    settings.project_spd = sph.boolean("project_spd");
    return settings;
  }

  ShapeMatchingSettings read_shape_matching(const Cursor& map) {
    const MapReader sm = section(map, "shape_matching");
    ShapeMatchingSettings settings;
    settings.alpha = sm.real("alpha");
    settings.beta = sm.real("beta");
    settings.damping = sm.real("damping");
    settings.rotation = sm.text("rotation");
    settings.descriptor = sm.text("descriptor");
    settings.max_ring = sm.integer("max_ring");
    return settings;
  }

  FemSettings read_fem(const Cursor& map) {
    const MapReader fem = section(map, "fem");
    FemSettings settings;
    settings.spacing = fem.real("spacing");
    settings.max_level = fem.integer("max_level");
    settings.min_level = fem.integer("min_level");
    if (settings.min_level > settings.max_level)
      fem.fail("min_level", "is " + std::to_string(settings.min_level) + ", above max_level (" +
                                std::to_string(settings.max_level) + ")");
    settings.linear_tolerance = fem.real("linear_tolerance");
    settings.agree_tolerance = fem.real("agree_tolerance");
    settings.error_tolerance = fem.real("error_tolerance");
    settings.coarsen_factor = fem.real("coarsen_factor");
    settings.damping = fem.real("damping");
    settings.bulk_viscosity = fem.real("bulk_viscosity");
    settings.shear_viscosity = fem.real("shear_viscosity");
    settings.boundary = fem.text("boundary");
    if (integrator_is("implicit"))
      for (const char* key : {"bulk_viscosity", "shear_viscosity"})
        if (fem.real(key) > 0)
          fem.fail(key,
                   "is explicit only: the backward Euler potential has no viscous term (use fem.damping)");
    return settings;
  }

  PbdPowderSettings read_pbd_powder(const Cursor& map) {
    const MapReader pbd = section(map, "pbd_powder");
    PbdPowderSettings settings;
    settings.spacing = pbd.real("spacing");
    settings.support = pbd.real("support");
    settings.substeps = pbd.integer("substeps");
    settings.iterations = pbd.integer("iterations");
    settings.relaxation = pbd.real("relaxation");
    settings.rest_distance = pbd.text("rest_distance");
    settings.rest_constraint = pbd.text("rest_constraint");
    settings.transitions = pbd.boolean("transitions");
    settings.initial_state = pbd.text("initial_state");
    settings.density_rate = pbd.real("density_rate");
    settings.density_change = pbd.text("density_change");
    settings.speed_factor = pbd.real("speed_factor");
    settings.rest_when = pbd.text("rest_when");
    settings.transition_frames = pbd.integer("transition_frames");
    settings.scorr = pbd.boolean("scorr");
    settings.unilateral = pbd.boolean("unilateral");
    settings.contact = pbd.boolean("contact");
    settings.friction = pbd.real("friction");
    settings.xsph = pbd.real("xsph");
    settings.vorticity = pbd.real("vorticity");
    return settings;
  }

  std::vector<EmitterSettings> read_emitters(const Cursor& list) {
    return read_items(list, [&](const Cursor& item) { return read_emitter(item); });
  }

  EmitterSettings read_emitter(const Cursor& map) {
    const ShapeSchema& shape = selected(map, emitter_schema());
    const std::vector<KeySchema> keys = emitter_schema().keys_of(shape);
    const MapReader emitter(map, keys, dimension_source());
    EmitterSettings settings;
    settings.shape = shape.name;
    settings.material = material_reference(emitter);
    settings.velocity = emitter.vector("velocity");
    settings.rate = emitter.optional_real("rate");
    settings.count = static_cast<std::uint64_t>(emitter.integer("count"));
    settings.start = emitter.real("start");
    settings.jitter = emitter.real("jitter");
    settings.seed = static_cast<std::uint64_t>(emitter.integer("seed"));
    if (knows(keys, "center")) settings.center = emitter.vector("center");
    if (knows(keys, "radius")) settings.radius = emitter.real("radius");
    if (knows(keys, "axis")) settings.axis = emitter.axis("axis");
    if (knows(keys, "min")) check_box(emitter, dimension());
    if (knows(keys, "min")) settings.min = emitter.vector("min");
    if (knows(keys, "max")) settings.max = emitter.vector("max");
    return settings;
  }

  std::vector<std::string> material_names() const {
    std::vector<std::string> names;
    for (const auto& pair : root_) {
      if (pair.first.Scalar() != "materials" || !pair.second.IsMap()) continue;
      for (const auto& material : pair.second) names.push_back(material.first.Scalar());
    }
    return names;
  }

  std::string material_reference(const MapReader& body, const char* key = "material") const {
    const std::string name = body.text(key);
    const std::vector<std::string> names = material_names();
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      check_model_fits_method(body, key, name);
      return name;
    }
    const std::string known = names.empty() ? "no materials are defined" : "defined: " + join(names, ", ");
    body.fail(key, "unknown material '" + name + "' (" + known + ")");
  }

  // The FEM's element is StVK with its own material model; the other methods cannot use it.
  void check_model_fits_method(const MapReader& body, const char* key, const std::string& name) const {
    const YAML::Node model = root_["materials"][name]["model"];
    if (!model || !model.IsScalar()) return;  // reported where the material is read
    const bool stvk = model.Scalar() == "stvk";
    if (method_is("fem") && !stvk)
      body.fail(key, "material '" + name + "' is " + model.Scalar() +
                         "; the fem method's materials are model stvk");
    if (!method_is("fem") && stvk)
      body.fail(key, "material '" + name + "' is stvk, a material of the fem method");
  }

  std::string existing_file(const Cursor& value) const {
    std::filesystem::path path = value.node.Scalar();
    if (path.is_relative()) path = directory_ / path;
    path = path.lexically_normal();
    std::error_code error;
    if (!std::filesystem::exists(path, error)) value.fail("file not found: '" + path.string() + "'");
    return path.string();
  }

  const scene::SceneSource& source_;
  YAML::Node root_;
  std::filesystem::path directory_;
  std::optional<int> dimension_;
};

}  // namespace

Scene parse_scene(const std::string& text, const std::string& path,
                  const std::vector<std::string>& overrides) {
  YAML::Node root = parse_yaml(text, path);
  require_scene_map(root, path);
  scene::SceneSource source{path, {}};
  scene::apply_overrides(root, overrides, source);
  Scene scene = SceneReader(source, root).read();
  scene.source_path = path;
  scene.source_text = text;
  scene.overrides = overrides;
  return scene;
}

Scene load_scene(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw SceneError(path, "", "cannot open the scene file");
  std::ostringstream text;
  text << file.rdbuf();
  return parse_scene(text.str(), path, overrides);
}

std::string scene_location(const Scene& scene, const std::string& key_path) {
  for (auto o = scene.overrides.rbegin(); o != scene.overrides.rend(); ++o) {  // the last --set wins
    const std::string key = o->substr(0, o->find('='));
    if (key_path == key || key_path.rfind(key + ".", 0) == 0) return "--set " + *o;
  }
  YAML::Node node;
  try {
    node = YAML::Load(scene.source_text);
  } catch (const YAML::Exception&) {
    return scene.source_path;
  }
  std::istringstream parts(key_path);
  for (std::string part; std::getline(parts, part, '.');) {
    const YAML::Node& map = node;  // const: a missing key must not be created
    const YAML::Node child = map.IsMap() ? map[part] : YAML::Node();
    if (!child) return scene.source_path;
    node.reset(child);
  }
  const std::string line = scene::line_of(node);
  return line.empty() ? scene.source_path : scene.source_path + ":" + line;
}

std::string scene_as_run(const Scene& scene) {
  YAML::Node root = parse_yaml(scene.source_text, scene.source_path);
  scene::SceneSource source{scene.source_path, {}};
  scene::apply_overrides(root, scene.overrides, source);
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

}  // namespace nendo
