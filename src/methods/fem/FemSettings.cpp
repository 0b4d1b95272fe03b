#include "methods/fem/FemSettings.hpp"

#include <fmt/format.h>

#include <cmath>

#include "materials/StvkMaterial.hpp"
#include "methods/HeldVertices.hpp"
#include "methods/ImplicitSettings.hpp"

namespace nendo {

namespace {

SettingsKeys<FemSettings> fem_keys() {
  using S = FemSettings;
  return SettingsKeys<S>()
      .add(KeySchema::real("spacing", "edge length of the level-0 mesh of box bodies (cubes of 6 Kuhn tets)")
               .measured_in("m")
               .above(0),
           &S::spacing)
      .add(KeySchema::integer("max_level",
                              "L_max: levels of red refinement below the level-0 mesh (section 4.1)")
               .at_least(0)
               .at_most(7),
           &S::max_level)
      .add(KeySchema::integer(
               "min_level",
               "no tet is coarser than this level (an extension, not in the paper: coarse linear "
               "tets lock in bending, section 8); min_level = max_level is the uniform fine mesh")
               .at_least(0)
               .at_most(7),
           &S::min_level)
      .add(KeySchema::real("linear_tolerance",
                           "delta_lin: a coarse tet's linear range ends where its homogenised stress departs "
                           "from the linear law by this fraction (section 5 H4f)")
               .at_least(0),
           &S::linear_tolerance)
      .add(KeySchema::real("agree_tolerance",
                           "tau_agree: children are merged only if their Green strains are within this "
                           "(Frobenius) of the parent's (section 4.4 (iii))")
               .at_least(0),
           &S::agree_tolerance)
      .add(KeySchema::real(
               "error_tolerance",
               "tau_err: a tet is also refined where its Green strain differs from the recovered "
               "strain (the volume average of the active tets around a node) at one of its corners "
               "by more than this (Frobenius), and a parent is merged only below a quarter of it: "
               "the discretisation-error indicator the paper's linear range lacks (an extension; "
               "coarse linear tets lock in bending, section 8)")
               .at_least(0),
           &S::error_tolerance)
      .add(KeySchema::real("coarsen_factor",
                           "kappa_c: a parent is chosen again only inside this fraction of its linear range "
                           "(hysteresis, section 4.4 (i))")
               .above(0)
               .at_most(1),
           &S::coarsen_factor)
      .add(KeySchema::real("damping", "c_m: mass-proportional damping, v /= 1 + c_m dt (section 6.2)")
               .measured_in("1/s")
               .at_least(0),
           &S::damping)
      .add(KeySchema::real("bulk_viscosity",
                           "phi of O'Brien and Hodgins' viscous stress (section 3), every level")
               .measured_in("Pa s")
               .at_least(0),
           &S::bulk_viscosity)
      .add(KeySchema::real("shear_viscosity",
                           "psi of O'Brien and Hodgins' viscous stress (section 3), every level")
               .measured_in("Pa s")
               .at_least(0),
           &S::shear_viscosity)
      .add(KeySchema::choice(
               "boundary", {"kinematic", "vertices_only"},
               "homogenisation boundary condition (section 10 C2): kinematic, every fine node on "
               "the coarse tet's faces follows the imposed strain; vertices_only, the paper's "
               "literal reading (only the 4 corners held; softer, see the method page)"),
           &S::boundary)
      .add(KeySchema::choice(
               "model", {"local", "whole"},
               "what each rank builds of the hierarchy, its constants and active set: local, the "
               "roots around its nodes and the balance reach beyond, built again when its nodes "
               "move beyond them (memory per rank falls with the ranks); whole, every root, once "
               "(no rebuilds: faster for small meshes whose bodies cross many blocks)"),
           &S::model)
      .check([](const scene::MapReader& fem, S& settings) {
        if (settings.min_level > settings.max_level)
          fem.fail("min_level", "is " + std::to_string(settings.min_level) + ", above max_level (" +
                                    std::to_string(settings.max_level) + ")");
      });
}

SettingsKeys<FemBody> body_keys() {
  using B = FemBody;
  SettingsKeys<B> keys;
  add_held_vertex_keys(keys)
      .add(KeySchema::text(
               "alternate_material",
               "finest tets whose rest centroid lies in an odd cell of a lattice of cubes of side "
               "alternate_cell (a 3D checkerboard) take this material (Fig. 4's inhomogeneous beam)")
               .when_unset("one material")
               .material_name(),
           &B::alternate_material)
      .add(KeySchema::real("alternate_cell", "side of the checkerboard's cubes").measured_in("m").at_least(0),
           &B::alternate_cell)
      .check([](const scene::MapReader& body, B& settings) {
        if (!body.has("alternate_material")) {
          if (body.has("alternate_cell")) body.fail("alternate_cell", "needs alternate_material");
          return;
        }
        if (settings.alternate_cell <= 0)
          body.fail("alternate_cell", "must be above 0 with alternate_material");
      });
  return keys;
}

// The fem halo is one cell: it must hold every corner of a tet at an owned node and the masters of
// its hanging corners, 2.5 level-0 edges away (a cube's Kuhn tets have edges up to √3 spacing). The
// backward Euler potential has no viscous term.
void check_scene(const SceneCheck& check) {
  const Scene& scene = check.scene;
  const FemSettings& fem = scene.sections.get<FemSettings>();
  const Real edge = std::sqrt(3.0) * fem.spacing;
  if (scene.grid.dx < 2.5 * edge * (1 - 1e-9))
    check.fail("grid",
               fmt::format("dx {} is below 2.5 x the longest level-0 edge ({:.6g} = sqrt(3) x fem.spacing "
                           "{}), {:.6g}: the one-cell halo must hold each node's tets and the masters of "
                           "their hanging nodes",
                           scene.grid.dx, edge, fem.spacing, 2.5 * edge));
  if (scene.time.integrator != "implicit") return;
  for (const auto& [key, value] :
       {std::pair{"bulk_viscosity", fem.bulk_viscosity}, std::pair{"shear_viscosity", fem.shear_viscosity}})
    if (value > 0)
      check.fail(std::string("fem.") + key,
                 "is explicit only: the backward Euler potential has no viscous term (use fem.damping)");
}

MethodSchema fem_schema() {
  MethodSchema method;
  method.name = "fem";
  method.dimensions = {3};
  method.dimension_note = "its bodies are tetrahedral meshes";
  method.sections = {
      implicit_section(),
      method_section(
          "fem", "hierarchical tetrahedral FEM",
          "Hierarchical tetrahedral FEM with level selection (spec 004). Box bodies are lattices of "
          "cubes of edge `spacing` cut into 6 Kuhn tets, sphere, cylinder and file bodies are meshed "
          "(read) by Gmsh; each level-0 tet is red-refined max_level times. Materials: model stvk. "
          "grid.dx must be at least 2.5 times the longest level-0 edge (the one-cell halo holds every "
          "tet and hanging-node master around an owned node).",
          fem_keys())};
  method.body = method_body_keys(body_keys());
  method.materials = {fem::kStvkModel};
  method.geometric_multigrid = true;
  method.check = check_scene;
  return method;
}

// Registered before main() (the methods library is linked whole: nendo_whole_archive in CMake).
[[maybe_unused]] const bool registered = (register_method(fem_schema()), true);

}  // namespace

}  // namespace nendo
