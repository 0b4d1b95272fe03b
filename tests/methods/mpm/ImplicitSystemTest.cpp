// The implicit MPM system (spec 002 §10.5–§10.7) driven directly on a deformed body, and the whole
// implicit step on 1–4 ranks:
//  1. the Hessian-vector product against central differences of the gradient, for every material
//     (project_spd off: the exact Hessian), 2D and 3D;
//  2. the assembled matrix against the matrix-free product and diagonal, with and without sticky
//     and slip constraints (A = P H P + (I − P), P = 0 and P = I − n nᵀ), both kernels;
//  3. symmetry of the operator, and the gradient against central differences of the energy;
//  4. rank independence of a short implicit drop with contact: Newton and KSP iterations and the
//     particle state on the test's communicator against one rank (MPI_COMM_SELF);
//  5. the forcing of Newton's linear solves: Eisenstat–Walker against the fixed tolerance.
// The grid is built here as the MPM transfers build it: particle mass and momentum scattered into the
// block windows (GridKernels stencils) and summed into the owned grid blocks by the ghost exchange.
#include <gtest/gtest.h>
#include <petscmat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "MpmHarness.hpp"
#include "colliders/Collider.hpp"
#include "core/BSpline.hpp"
#include "methods/mpm/ImplicitSystem.hpp"
#include "solvers/GeometricMultigrid.hpp"
#include "solvers/HessianOperator.hpp"
#include "solvers/NewtonSolver.hpp"
#include "support/PetscEnvironment.hpp"
#include "support/ReferenceRun.hpp"

namespace nendo {
namespace {

using testing::MpmRun;

const char* const kMaterials[] = {"linear", "neo_hookean",    "fixed_corotated",
                                  "snow",   "drucker_prager", "fluid"};

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

std::string vec(int dim, Real a, Real b, Real c) {
  char text[96];
  if (dim == 3)
    std::snprintf(text, sizeof text, "[%.17g, %.17g, %.17g]", a, b, c);
  else
    std::snprintf(text, sizeof text, "[%.17g, %.17g]", a, b);
  return text;
}

std::string material_yaml(const std::string& model) {
  if (model == "snow")
    return "{model: snow, E: 1.0e6, nu: 0.3, density: 1000, theta_c: 2.5e-2, theta_s: 7.5e-3, hardening: 10}";
  if (model == "drucker_prager")
    return "{model: drucker_prager, E: 1.0e6, nu: 0.3, density: 1000, friction_angle: 35, cohesion: 0}";
  if (model == "fluid") return "{model: fluid, bulk: 1.0e6, gamma: 7, density: 1000, viscosity: 1.0e-3}";
  return "{model: " + model + ", E: 1.0e6, nu: 0.3, density: 1000}";
}

// Cell size of the body scenes of tests 1–3.
Real body_dx(int dim) { return dim == 2 ? 0.025 : 0.05; }
const Real kBodyMin[3] = {0.03, 0.04, 0.02};
const Real kBodyMax[3] = {0.28, 0.24, 0.17};

// A box of one material over several blocks of 3 cells (so that 2–4 ranks share it). With
// colliders: a sticky plane cutting the bottom 1.5 cells and a slanted slip plane along the left
// side (normal not along an axis, so that P = I − n nᵀ couples the components).
std::string body_scene(int dim, const std::string& model, const std::string& kernel, bool colliders) {
  const Real dx = body_dx(dim);
  std::string yaml =
      "nendo: 1\nmethod: mpm\ndimension: " + std::to_string(dim) + "\ngravity: " + vec(dim, 0, 0, 0) +
      "\ntime: {end: 1, dt: 1.0e-2}\n"
      "grid: {dx: " +
      std::to_string(dx) + ", block: 3, kernel: " + kernel +
      "}\n"
      "materials:\n  m: " +
      material_yaml(model) +
      "\nbodies:\n  - {shape: box, min: " + vec(dim, kBodyMin[0], kBodyMin[1], kBodyMin[2]) +
      ", max: " + vec(dim, kBodyMax[0], kBodyMax[1], kBodyMax[2]) + ", material: m, particles_per_cell: 2}\n";
  if (colliders)
    yaml += "colliders:\n  - {shape: plane, point: " + vec(dim, 0, kBodyMin[1] + 1.5 * dx, 0) +
            ", normal: " + vec(dim, 0, 1, 0) +
            ", boundary: sticky}\n  - {shape: plane, point: " + vec(dim, kBodyMin[0] + 1.5 * dx, 0, 0) +
            ", normal: " + vec(dim, 1, 0.3, 0.2) + ", boundary: slip}\n";
  return yaml;
}

// A pseudo-random number in [−1, 1] from a position and a seed: the same on any rank count.
Real hash(const Real* x, int dim, int seed) {
  Real s = 12.9898 * x[0] + 78.233 * x[1] + (dim == 3 ? 37.719 * x[2] : 0) + 4.1414 * seed;
  const Real f = std::sin(s * 1000.0) * 43758.5453;
  return 2 * (f - std::floor(f)) - 1;
}

Real global_dot(const std::vector<Real>& a, const std::vector<Real>& b) {
  Real local = 0, global = 0;
  for (std::size_t i = 0; i < a.size(); ++i) local += a[i] * b[i];
  MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return global;
}
Real global_norm(const std::vector<Real>& a) { return std::sqrt(global_dot(a, a)); }
Real global_distance(const std::vector<Real>& a, const std::vector<Real>& b) {
  std::vector<Real> d(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  return global_norm(d);
}
long global_count(long local) {
  long global = 0;
  MPI_Allreduce(&local, &global, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  return global;
}

// The system of one scene on MPI_COMM_WORLD: particles given a smooth deformation F (det F > 0),
// a smooth velocity and, for plastic materials, a smooth J_P ≠ 1; the grid of mass and momentum;
// prepare() with the scene's colliders as constraints.
template <int D, class Kernel>
struct SystemSetup {
  using Kernels = GridKernels<D, Kernel>;
  static constexpr int kGrid = 1 + D;  // mass, momentum per owned grid node

  MpmRun run;
  std::vector<MpmMaterial> materials;
  ColliderSet bilateral;
  MpmImplicitSystem<D, Kernel> system;
  Real h;
  std::vector<Real> grid, target, v0;
  std::vector<Real> mass, nodes;  // per unknown: its node's mass and position
  std::size_t n = 0;

  SystemSetup(const std::string& yaml, bool project_spd, Real step)
      : run(MPI_COMM_WORLD, yaml),
        materials(make_materials(run.scene)),
        bilateral(run.scene.colliders, D),
        system(materials, project_spd),
        h(step) {
    deform();
    build_grid();
    if (run.scene.materials.begin()->second.model == "snow") {
      EXPECT_TRUE(run.particles().has_field("Jp"));
    }
    system.prepare(*run.space, grid, kGrid, target, D, bilateral, 0.0, h, v0);
    n = static_cast<std::size_t>(system.dofs().local_size());
    nodes.resize(n);
    system.coordinates(nodes.data());
    mass.resize(n);
    for (std::size_t i = 0; i < n; ++i) mass[i] = grid[kGrid * system.dofs().node(PetscInt(i / D))];
  }

  static std::vector<MpmMaterial> make_materials(const Scene& scene) {
    std::vector<MpmMaterial> m;
    for (const auto& [name, settings] : scene.materials) m.push_back(make_mpm_material(settings));
    return m;
  }

  void deform() {
    ParticleSet& ps = run.particles();
    const Real* x = ps.positions();
    Real* F = ps.real("F");
    Real* v = ps.real("velocity");
    Real* Jp = ps.has_field("Jp") ? ps.real("Jp") : nullptr;
    for (std::size_t p = 0; p < ps.size(); ++p) {
      const Real* xp = x + D * p;
      Eigen::Map<Eigen::Matrix<Real, D, D, Eigen::RowMajor>> Fp(F + D * D * p);
      // F = I + G(x), G smooth with |G_ab| ≤ 0.22: stretch, compression and shear that vary
      // over the body (F need not be a gradient field here); det F > 0.3 is checked.
      Fp.setIdentity();
      for (int a = 0; a < D; ++a)
        for (int b = 0; b < D; ++b)
          Fp(a, b) += 0.12 * std::sin(5.0 * (a + 1) * xp[0] + 7.0 * (b + 1) * xp[1] +
                                      (D == 3 ? 3.0 * xp[2] : 0.0) + a - 2 * b) +
                      (a == b ? 0.1 * std::cos(6 * xp[a]) : 0.0);
      EXPECT_GT(Fp.determinant(), 0.3);
      for (int a = 0; a < D; ++a) v[D * p + a] = 0.5 * std::sin(8.0 * xp[(a + 1) % D] + 2.0 * a);
      if (Jp) Jp[p] = 1 + 0.05 * std::sin(10 * xp[0] + 3 * xp[1]);
    }
  }

  // P2G of mass and momentum (spec §6.1 without the affine term): the windows, then the ghost
  // exchange's sum into the owned grid blocks; v* = momentum / mass (no gravity here).
  void build_grid() {
    Space& space = *run.space;
    GhostExchange& ghost = space.ghost();
    const ParticleSet& ps = space.particles();
    const ParticleBlocks& blocks = space.blocks();
    const Real* x = ps.positions();
    const Real* v = ps.real("velocity");
    const int ex = ghost.window_extent(0), ey = ghost.window_extent(1);
    const std::size_t wn = static_cast<std::size_t>(ghost.window_nodes()) * kGrid;
    std::vector<Real> windows(blocks.count() * wn, 0.0);
    for (std::size_t b = 0; b < blocks.count(); ++b) {
      const BlockCoord cb = decode_block_key(blocks.keys[b]);
      Real* window = windows.data() + b * wn;
      for (std::size_t p = blocks.begin(b); p < blocks.end(b); ++p) {
        const auto s = Kernels::stencil(space.geometry(), cb, x + D * p);
        const Real mp = run.mass(p);
        Kernels::for_each_node(ex, ey, s, [&](std::size_t node, int i, int j, int k) {
          const Real w = s.w[0][i] * s.w[1][j] * (D == 3 ? s.w[D - 1][k] : 1.0);
          window[kGrid * node] += w * mp;
          for (int a = 0; a < D; ++a) window[kGrid * node + 1 + a] += w * mp * v[D * p + a];
        });
      }
    }
    ghost.scatter_add(windows, kGrid, grid);
    target.assign(grid.size() / kGrid * D, 0.0);
    for (std::size_t i = 0; i < grid.size() / kGrid; ++i)
      if (grid[kGrid * i] > 0)
        for (int a = 0; a < D; ++a) target[D * i + a] = grid[kGrid * i + 1 + a] / grid[kGrid * i];
  }

  // A vector over the owned unknowns from the node positions (rank-count independent), entries in
  // [−scale, scale].
  std::vector<Real> random(int seed, Real scale = 1) const {
    std::vector<Real> r(n);
    for (std::size_t i = 0; i < n; ++i)
      r[i] = scale * hash(nodes.data() + D * (i / D), D, seed * 7 + int(i % D));
    return r;
  }

  // A linearisation point away from the minimum: v⁰ plus a perturbation that changes F̂ by about
  // 5 % (h |δv| / dx), satisfying the constraints.
  std::vector<Real> point() {
    std::vector<Real> v = random(1, 0.05 * run.scene.grid.dx / h);
    system.project(v.data());
    for (std::size_t i = 0; i < n; ++i) v[i] += v0[i];
    return v;
  }

  std::vector<Real> apply(const std::vector<Real>& x) {
    std::vector<Real> y(n);
    system.apply(x.data(), y.data());
    return y;
  }
  std::vector<Real> gradient(const std::vector<Real>& v) {
    std::vector<Real> g(n);
    system.linearize(v.data(), g.data());
    return g;
  }
};

// ---- 1. Hessian-vector product vs central differences of the gradient --------------------------

template <int D>
void check_hessian_against_gradient(const std::string& model) {
  const Real h = 1e-2;
  SystemSetup<D, QuadraticSpline> s(body_scene(D, model, "quadratic", false), false, h);
  const std::vector<Real> v = s.point();
  const std::vector<Real> x = s.random(2);
  s.gradient(v);
  const std::vector<Real> Hx = s.apply(x);
  // ε: h ε |∇x| ≈ 1e-5 (the change of F̂), truncation ~1e-10, round-off ~1e-11 relative.
  const Real eps = 1e-5 * s.run.scene.grid.dx / h;
  std::vector<Real> plus = v, minus = v, fd(s.n), Mx(s.n);
  for (std::size_t i = 0; i < s.n; ++i) plus[i] += eps * x[i], minus[i] -= eps * x[i];
  const std::vector<Real> gp = s.gradient(plus), gm = s.gradient(minus);
  for (std::size_t i = 0; i < s.n; ++i) fd[i] = (gp[i] - gm[i]) / (2 * eps), Mx[i] = s.mass[i] * x[i];
  const Real error = global_distance(Hx, fd) / global_norm(Hx);
  const Real stiffness = global_distance(Hx, Mx) / global_norm(Mx);  // ‖h²K x‖ / ‖M x‖
  const long unknowns = global_count(long(s.n));
  if (world_rank() == 0)
    std::printf("[ hessian  ] %dD %-16s |Hx - fd|/|Hx| = %.3e  |h^2 K x|/|M x| = %.1f  (%ld unknowns)\n", D,
                model.c_str(), error, stiffness, unknowns);
  EXPECT_LE(error, 1e-6) << D << "D " << model;
  // The stiffness must dominate the mass, or the comparison would mostly test M x.
  EXPECT_GE(stiffness, 1.0) << D << "D " << model;
}

TEST(ImplicitSystem, HessianProductMatchesCentralDifferencesOfTheGradient) {
  for (const char* model : kMaterials) {
    check_hessian_against_gradient<2>(model);
    check_hessian_against_gradient<3>(model);
  }
}

// ---- 2. Matrix-free vs assembled ----------------------------------------------------------------

struct PetscVector {
  ::Vec vec = nullptr;
  explicit PetscVector(const DofMap& dofs) {
    petsc_call(VecCreateMPI(dofs.comm(), dofs.local_size(), PETSC_DETERMINE, &vec), "VecCreateMPI");
  }
  ~PetscVector() { VecDestroy(&vec); }
  PetscVector(const PetscVector&) = delete;
  PetscVector& operator=(const PetscVector&) = delete;
  void set(const std::vector<Real>& x) {
    PetscScalar* a = nullptr;
    VecGetArray(vec, &a);
    std::copy(x.begin(), x.end(), a);
    VecRestoreArray(vec, &a);
  }
  std::vector<Real> get(std::size_t n) const {
    const PetscScalar* a = nullptr;
    VecGetArrayRead(vec, &a);
    std::vector<Real> x(a, a + n);
    VecRestoreArrayRead(vec, &a);
    return x;
  }
};

// Constrained nodes by kind, over all ranks: P·1 = 0 (sticky) or P·1 ≠ 1 (slip).
template <int D, class Kernel>
std::pair<long, long> constrained_nodes(SystemSetup<D, Kernel>& s) {
  std::vector<Real> ones(s.n, 1.0);
  s.system.project(ones.data());
  long sticky = 0, slip = 0;
  for (std::size_t l = 0; l < s.n / D; ++l) {
    bool zero = true, changed = false;
    for (int a = 0; a < D; ++a) zero &= ones[D * l + a] == 0, changed |= ones[D * l + a] != 1;
    sticky += zero, slip += changed && !zero;
  }
  return {global_count(sticky), global_count(slip)};
}

template <int D, class Kernel>
void check_assembled(const std::string& model, const std::string& kernel, bool colliders, bool project_spd,
                     const char* matrix_type) {
  SystemSetup<D, Kernel> s(body_scene(D, model, kernel, colliders), project_spd, 1e-2);
  if (colliders) {
    const auto [sticky, slip] = constrained_nodes(s);
    EXPECT_GT(sticky, 0) << D << "D " << model;
    EXPECT_GT(slip, 0) << D << "D " << model;
    EXPECT_EQ(static_cast<std::size_t>(sticky + slip),
              std::size_t(global_count(long(s.system.constrained_nodes()))));
  }
  s.gradient(s.point());
  std::unique_ptr<HessianOperator> op = make_hessian_operator("assembled");
  op->set_matrix_type(matrix_type);
  op->setup(s.system);
  op->update(s.system);
  PetscVector X(s.system.dofs()), Y(s.system.dofs());
  Real worst = 0;
  for (int trial = 0; trial < 3; ++trial) {
    const std::vector<Real> x = s.random(10 + trial);
    X.set(x);
    petsc_call(MatMult(op->mat(), X.vec, Y.vec), "MatMult");
    const std::vector<Real> assembled = Y.get(s.n), free = s.apply(x);
    worst = std::max(worst, global_distance(assembled, free) / global_norm(free));
  }
  std::vector<Real> diagonal(s.n);
  s.system.diagonal(diagonal.data());
  petsc_call(MatGetDiagonal(op->mat(), Y.vec), "MatGetDiagonal");
  const Real diagonal_error = global_distance(Y.get(s.n), diagonal) / global_norm(diagonal);
  // A second update at the same layout (the Newton iterations' path) gives the same matrix.
  op->update(s.system);
  const std::vector<Real> x = s.random(20);
  X.set(x);
  petsc_call(MatMult(op->mat(), X.vec, Y.vec), "MatMult");
  const Real again = global_distance(Y.get(s.n), s.apply(x)) / global_norm(x);
  if (world_rank() == 0)
    std::printf("[assembled ] %dD %-9s %-16s %-9s spd=%d %-4s  product %.2e  diagonal %.2e  update %.2e\n", D,
                kernel.c_str(), model.c_str(), colliders ? "colliders" : "free", project_spd, matrix_type,
                worst, diagonal_error, again);
  EXPECT_LE(worst, 1e-12) << D << "D " << kernel << " " << model << " colliders " << colliders;
  EXPECT_LE(diagonal_error, 1e-12) << D << "D " << kernel << " " << model << " colliders " << colliders;
  EXPECT_LE(again, 1e-12) << D << "D " << kernel << " " << model;
}

TEST(ImplicitSystem, AssembledMatrixMatchesMatrixFreeProductAndDiagonal) {
  // With the colliders: sticky (P = 0), slip (P = I − n nᵀ) and free (P = I) nodes in one system.
  for (const char* model : kMaterials) {
    check_assembled<2, QuadraticSpline>(model, "quadratic", true, true, "baij");
    check_assembled<3, QuadraticSpline>(model, "quadratic", true, true, "baij");
  }
  // No constraints; the exact Hessian (indefinite parts kept); the cubic kernel's wider stencil;
  // AIJ (the type GAMG gets).
  check_assembled<2, QuadraticSpline>("neo_hookean", "quadratic", false, false, "baij");
  check_assembled<3, QuadraticSpline>("fixed_corotated", "quadratic", false, true, "baij");
  check_assembled<3, QuadraticSpline>("snow", "quadratic", true, false, "aij");
  check_assembled<2, CubicSpline>("fixed_corotated", "cubic", true, true, "aij");
  check_assembled<3, CubicSpline>("drucker_prager", "cubic", true, true, "baij");
}

// ---- 3. Symmetry, and the gradient vs the energy -------------------------------------------------

template <int D>
void check_symmetry_and_gradient(const std::string& model, bool colliders, bool project_spd) {
  const Real h = 1e-2;
  SystemSetup<D, QuadraticSpline> s(body_scene(D, model, "quadratic", colliders), project_spd, h);
  const std::vector<Real> v = s.point();
  const std::vector<Real> g = s.gradient(v);
  const std::vector<Real> x = s.random(30), y = s.random(31);
  const std::vector<Real> Ax = s.apply(x), Ay = s.apply(y);
  const Real yAx = global_dot(y, Ax), xAy = global_dot(x, Ay);
  const Real asymmetry = std::abs(yAx - xAy) / std::abs(yAx);
  // ⟨P∇E, d⟩ for an admissible direction d = P d against (E(v + εd) − E(v − εd)) / 2ε.
  std::vector<Real> d = s.random(32), plus(s.n), minus(s.n);
  s.system.project(d.data());
  // ε: F̂ changes by about 1e-5 (truncation ~1e-10 relative; round-off of the energy differences,
  // which are sums of per-particle differences, ~1e-11).
  const Real eps = 1e-5 * s.run.scene.grid.dx / h;
  for (std::size_t i = 0; i < s.n; ++i) plus[i] = eps * d[i], minus[i] = -eps * d[i];
  const Real fd = (s.system.energy_change(plus.data()) - s.system.energy_change(minus.data())) / (2 * eps);
  const Real gd = global_dot(g, d);
  const Real gradient_error = std::abs(fd - gd) / std::abs(gd);
  if (world_rank() == 0)
    std::printf(
        "[symmetry  ] %dD %-16s %-9s spd=%d  |<y,Ax>-<x,Ay>|/|<y,Ax>| %.2e  |<g,d>-fd|/|<g,d>| %.2e\n", D,
        model.c_str(), colliders ? "colliders" : "free", project_spd, asymmetry, gradient_error);
  EXPECT_LE(asymmetry, 1e-12) << D << "D " << model << " colliders " << colliders << " spd " << project_spd;
  EXPECT_LE(gradient_error, 1e-6) << D << "D " << model << " colliders " << colliders;
}

TEST(ImplicitSystem, OperatorIsSymmetricAndGradientMatchesEnergyDifferences) {
  for (const char* model : kMaterials) {
    check_symmetry_and_gradient<2>(model, true, false);
    check_symmetry_and_gradient<3>(model, true, false);
  }
  for (const char* model : {"fixed_corotated", "neo_hookean"}) {
    check_symmetry_and_gradient<2>(model, false, true);
    check_symmetry_and_gradient<3>(model, true, true);
  }
}

// ---- 4. Rank independence of the implicit step ----------------------------------------------------

// A small elastic body dropped at 1 m/s onto a separate ground plane (friction 0.3), with steps of
// about 20 times the explicit limit dx / c (c = 36.7 m/s for E = 1e6, ν = 0.3, ρ = 1000).
std::string drop_scene(int dim, const std::string& implicit) {
  const Real dx = dim == 2 ? 0.02 : 0.04;
  const Real lo = dim == 2 ? 0.03 : 0.045, size = dim == 2 ? 0.2 : 0.12;
  return "nendo: 1\nmethod: mpm\ndimension: " + std::to_string(dim) + "\ngravity: " + vec(dim, 0, -9.81, 0) +
         "\ntime: {end: 1, dt: 1.0e-2, integrator: implicit}\n"
         "grid: {dx: " +
         std::to_string(dx) +
         "}\n"
         "materials:\n  rubber: {model: neo_hookean, E: 1.0e6, nu: 0.3, density: 1000}\n"
         "bodies:\n  - {shape: box, min: " +
         vec(dim, 0.3, lo, 0.3) + ", max: " + vec(dim, 0.3 + size, lo + size, 0.3 + size) +
         ", material: rubber, particles_per_cell: 2, velocity: " + vec(dim, 0.2, -1, 0.1) +
         "}\n"
         "colliders:\n  - {shape: plane, point: " +
         vec(dim, 0, 0, 0) + ", normal: " + vec(dim, 0, 1, 0) +
         ", boundary: separate, friction: 0.3}\n"
         "implicit: {" +
         implicit + "}\n";
}

struct DropResult {
  long newton = 0, ksp = 0, substeps = 0;
  std::map<ParticleId, std::vector<Real>> state;  // on the communicator's rank 0: x, v, x⁰
  int empty_ranks = 0;                            // ranks that owned no particle at some step
  double seconds = 0;
};

// (id, x, v) of every particle on the communicator's rank 0.
std::vector<Real> gather_state(MPI_Comm comm, const ParticleSet& ps, int dim) {
  const int per = 1 + 2 * dim;
  std::vector<Real> local(ps.size() * per);
  for (std::size_t p = 0; p < ps.size(); ++p) {
    local[per * p] = static_cast<Real>(ps.ids()[p]);
    for (int a = 0; a < dim; ++a)
      local[per * p + 1 + a] = ps.positions()[dim * p + a],
                          local[per * p + 1 + dim + a] = ps.real("velocity")[dim * p + a];
  }
  int ranks = 0, rank = 0;
  MPI_Comm_size(comm, &ranks);
  MPI_Comm_rank(comm, &rank);
  int count = static_cast<int>(local.size());
  std::vector<int> counts(ranks), offsets(ranks);
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  int total = 0;
  for (int r = 0; r < ranks; ++r) offsets[r] = total, total += counts[r];
  std::vector<Real> all(rank == 0 ? total : 0);
  MPI_Gatherv(local.data(), count, MPI_DOUBLE, all.data(), counts.data(), offsets.data(), MPI_DOUBLE, 0,
              comm);
  return all;
}

DropResult run_drop(MPI_Comm comm, int dim, const std::string& implicit, int steps, Real dt) {
  const auto start = std::chrono::steady_clock::now();
  DropResult result;
  MpmRun run(comm, drop_scene(dim, implicit));
  const int per = 1 + 2 * dim;
  auto record = [&](bool initial) {
    const std::vector<Real> all = gather_state(comm, run.particles(), dim);
    for (std::size_t i = 0; i < all.size(); i += per) {
      std::vector<Real>& s = result.state[static_cast<ParticleId>(all[i])];
      s.resize(3 * dim);
      for (int a = 0; a < 2 * dim; ++a) s[a] = all[i + 1 + a];
      if (initial)
        for (int a = 0; a < dim; ++a) s[2 * dim + a] = all[i + 1 + a];
    }
  };
  record(true);
  int empty = run.particles().size() == 0 ? 1 : 0;
  for (int step = 0; step < steps; ++step) {
    run.step(dt);
    const SolverStats* stats = run.method->solver_stats();
    result.newton += stats->newton_iterations;
    result.ksp += stats->ksp_iterations;
    result.substeps += stats->substeps;
    empty |= run.particles().size() == 0 ? 1 : 0;
  }
  record(false);
  MPI_Allreduce(&empty, &result.empty_ranks, 1, MPI_INT, MPI_SUM, comm);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

enum class Compare { Iterations, State };

void check_rank_independence(int dim, const std::string& implicit, int steps, Real dt, Compare compare) {
  int ranks = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const DropResult all = run_drop(MPI_COMM_WORLD, dim, implicit, steps, dt);
  DropResult one;
  int failed = 0;  // the one-rank run throws on rank 0 only: the others must not wait for it
  testing::on_rank0(MPI_COMM_WORLD, [&] {
    try {
      one = run_drop(MPI_COMM_SELF, dim, implicit, steps, dt);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "the one-rank run failed: " << e.what();
      failed = 1;
    }
  });
  MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (failed) return;
  // On rank 0, over the particles matched by id: the differences of positions relative to the
  // displacements and of velocities relative to the velocities, in the 2-norm over all particles
  // (numbers 0–3) and the largest per particle (4–7).
  Real numbers[10] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};  // ..., particles matched, missing
  if (world_rank() == 0) {
    for (const auto& [id, a] : all.state) {
      const auto it = one.state.find(id);
      if (it == one.state.end()) {
        numbers[9] += 1;
        continue;
      }
      const std::vector<Real>& b = it->second;
      Real dx = 0, disp = 0, dv = 0, speed = 0;
      for (int c = 0; c < dim; ++c) {
        dx += (a[c] - b[c]) * (a[c] - b[c]);
        disp += (b[c] - b[2 * dim + c]) * (b[c] - b[2 * dim + c]);
        dv += (a[dim + c] - b[dim + c]) * (a[dim + c] - b[dim + c]);
        speed += b[dim + c] * b[dim + c];
      }
      numbers[0] += dx, numbers[1] += disp, numbers[2] += dv, numbers[3] += speed;
      numbers[4] = std::max(numbers[4], std::sqrt(dx)), numbers[5] = std::max(numbers[5], std::sqrt(disp));
      numbers[6] = std::max(numbers[6], std::sqrt(dv)), numbers[7] = std::max(numbers[7], std::sqrt(speed));
      numbers[8] += 1;
    }
    numbers[9] += static_cast<Real>(one.state.size()) - numbers[8];
  }
  MPI_Bcast(numbers, 10, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  long iterations[6] = {all.newton, all.ksp, one.newton, one.ksp, all.substeps, one.substeps};
  MPI_Bcast(iterations, 6, MPI_LONG, 0, MPI_COMM_WORLD);
  const Real position_error = std::sqrt(numbers[0] / numbers[1]),
             velocity_error = std::sqrt(numbers[2] / numbers[3]);
  const Real position_worst = numbers[4] / numbers[5], velocity_worst = numbers[6] / numbers[7];
  if (world_rank() == 0)
    std::printf(
        "[ranks     ] %dD {%s} %d steps of %.3g s\n             %d ranks: newton %ld ksp %ld substeps %ld "
        "(%.2f s, %d ranks without particles)\n             1 rank:  newton %ld ksp %ld substeps %ld (%.2f "
        "s)\n             |dx|/|u| %.2e  |dv|/|v| %.2e  (largest per particle %.2e %.2e, %g particles)\n",
        dim, implicit.c_str(), steps, dt, ranks, iterations[0], iterations[1], iterations[4], all.seconds,
        all.empty_ranks, iterations[2], iterations[3], iterations[5], one.seconds, position_error,
        velocity_error, position_worst, velocity_worst, numbers[8]);
  EXPECT_EQ(numbers[9], 0) << "particles missing in one run";
  EXPECT_GT(numbers[8], 0);
  // The steps solved something (a body in free flight needs no Newton iteration: only contact does).
  EXPECT_GT(iterations[2], steps) << dim << "D";
  if (compare == Compare::Iterations) {
    EXPECT_LE(std::abs(iterations[0] - iterations[2]), 0.1 * iterations[2]) << dim << "D newton";
    EXPECT_LE(std::abs(iterations[1] - iterations[3]), 0.1 * iterations[3]) << dim << "D ksp";
  } else {
    EXPECT_LE(position_error, 1e-8) << dim << "D positions";
    EXPECT_LE(velocity_error, 1e-8) << dim << "D velocities";
  }
  // The small 3D body leaves a rank without particles on 4 ranks (its DofMap is empty).
  if (dim == 3 && ranks == 4) {
    EXPECT_GE(all.empty_ranks, 1);
  }
}

// ---- The multigrid's coarse level (ImplicitCoarseGrid) ------------------------------------------

// Invariants of the coarse level on 1–4 ranks: the interpolation reproduces a uniform velocity
// on every fine unknown (partition of unity), the coarse operator is symmetric, and its stiffness
// exerts no force under a rigid translation (the kernel's gradients sum to zero), so A_c 1_a has
// only its mass part, in component a.
template <int D>
void check_coarse_level() {
  std::string yaml = body_scene(D, "fixed_corotated", "quadratic", false);
  yaml.replace(yaml.find("block: 3"), 8, "block: 4");  // the coarsening needs an even block
  SystemSetup<D, QuadraticSpline> s(yaml, true, 1e-2);
  const std::vector<Real> density = {1000};
  s.system.set_densities(density);
  s.gradient(s.point());  // the Hessians the coarse stiffness reads
  CoarseSpace* coarse = s.system.coarse_space();
  ASSERT_NE(coarse, nullptr);
  KSP ksp = nullptr;
  PC pc = nullptr;
  ASSERT_EQ(KSPCreate(MPI_COMM_WORLD, &ksp), 0);
  KSPGetPC(ksp, &pc);
  GeometricMultigrid::set_defaults(pc);
  GeometricMultigrid mg;
  ::Mat fine_operator = nullptr;  // the smoother's; no product is taken here
  const PetscInt n = s.system.dofs().local_size();
  MatCreateShell(MPI_COMM_WORLD, n, n, PETSC_DETERMINE, PETSC_DETERMINE, nullptr, &fine_operator);
  mg.setup(pc, s.system.dofs(), *coarse, fine_operator);
  mg.update(*coarse);
  ::Mat P = mg.interpolation(), A = mg.coarse_operator();
  Vec ones = nullptr, fine = nullptr, y = nullptr;
  MatCreateVecs(P, &ones, &fine);
  VecDuplicate(ones, &y);
  PetscBool symmetric = PETSC_FALSE;
  MatIsSymmetric(A, 1e-10, &symmetric);
  EXPECT_TRUE(symmetric) << D << "D";
  PetscInt coarse_size = 0;
  VecGetSize(ones, &coarse_size);
  EXPECT_GT(coarse_size, 0);
  for (int a = 0; a < D; ++a) {
    PetscInt first = 0, end = 0;
    VecGetOwnershipRange(ones, &first, &end);
    VecSet(ones, 0.0);
    for (PetscInt i = first + a; i < end; i += D) VecSetValue(ones, i, 1.0, INSERT_VALUES);
    VecAssemblyBegin(ones), VecAssemblyEnd(ones);
    MatMult(P, ones, fine);
    const PetscScalar* f = nullptr;
    VecGetArrayRead(fine, &f);
    Real worst = 0;
    for (std::size_t i = 0; i < s.n; ++i)
      worst = std::max(worst, std::abs(f[i] - (int(i % D) == a ? 1.0 : 0.0)));
    VecRestoreArrayRead(fine, &f);
    MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_LE(worst, 1e-14) << D << "D: P 1 differs from 1";
    MatMult(A, ones, y);
    const PetscScalar* r = nullptr;
    VecGetArrayRead(y, &r);
    Real along = 0, across = 0;
    for (PetscInt i = 0; i < end - first; ++i)
      (int(i % D) == a ? along : across) = std::max(int(i % D) == a ? along : across, std::abs(r[i]));
    VecRestoreArrayRead(y, &r);
    MPI_Allreduce(MPI_IN_PLACE, &along, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &across, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_GT(along, 0) << D << "D";
    EXPECT_LE(across, 1e-10 * along) << D << "D: a translation is resisted";
  }
  VecDestroy(&ones), VecDestroy(&fine), VecDestroy(&y);
  KSPDestroy(&ksp);
  MatDestroy(&fine_operator);
}

TEST(ImplicitCoarseGrid, InterpolatesUniformVelocityAndTheStiffnessIgnoresTranslations) {
  check_coarse_level<2>();
  check_coarse_level<3>();
}

// The scene's solver settings (matrix-free CG + Jacobi, newton_tol 1e-6, newton_atol 1e-6 cells):
// the Newton and KSP iteration totals on the test's ranks within 10 % of one rank's.
TEST(ImplicitStep, IterationCountsDoNotDependOnTheRankCount) {
  check_rank_independence(2, "operator: matrix_free", 15, 1.1e-2, Compare::Iterations);
  check_rank_independence(3, "operator: matrix_free", 10, 2.2e-2, Compare::Iterations);
}

// The states agree to 1e-8 when each solve is converged well below that: Newton down to the
// round-off floor of the gradient (the relative and scaled tolerances out of reach; max_newton
// raised for the linear convergence of the projected Hessian in contact). At the default
// tolerances two runs differ by what the tolerances leave (up to a few 1e-6 here, on any rank
// count). 2D only: in 3D a step converged this far takes 100–200 Newton iterations, too slow here.
TEST(ImplicitStep, ConvergedStateDoesNotDependOnTheRankCount) {
  check_rank_independence(
      2, "operator: matrix_free, newton_tol: 1.0e-13, newton_atol: 1.0e-13, max_newton: 100, max_halvings: 2",
      10, 1.1e-2, Compare::State);
}

// ---- 5. The forcing of Newton's linear solves ----------------------------------------------------

struct ForcingRun {
  NewtonReport report;
  std::vector<Real> v;
};

// Newton (defaults: matrix-free CG + Jacobi, newton_tol 1e-6, newton_atol 1e-6 cells) from the
// system's starting iterate.
template <int D, class Kernel>
ForcingRun minimise(SystemSetup<D, Kernel>& s, const std::string& forcing,
                    const std::string& solver = "newton") {
  NewtonSettings settings;
  settings.forcing = forcing;
  settings.solver = solver;
  NewtonSolver newton(MPI_COMM_WORLD, settings);
  ForcingRun run{{}, s.v0};
  run.report = newton.solve(s.system, run.v.data());
  return run;
}

// The deformed body (F up to 22 % from I) relaxing in one step of 1e-2 s (15 and 7 times the
// explicit limit in 2D and 3D): Newton with every linear solve to the fixed relative tolerance
// 1e-4, and with Eisenstat–Walker's forcing. Both converge, to the same velocities within what the
// Newton tolerances leave (measured ≤ 5e-5 of the change from v⁰), and Eisenstat–Walker's looser
// solves take fewer Krylov iterations in all (measured 29–49 % of the fixed forcing's). A -ksp_rtol
// in the options database is the user's fixed forcing: with it, both settings solve alike. The body
// has no colliders here: with the sticky and slanted slip planes, this arbitrary F makes the
// incremental potential non-convex enough that the two forcings (each converged to 1e-10) end at
// different stationary points, 1 % apart.
template <int D>
void check_forcing(const std::string& model) {
  SystemSetup<D, QuadraticSpline> s(body_scene(D, model, "quadratic", false), true, 1e-2);
  const ForcingRun fixed = minimise(s, "fixed"), adaptive = minimise(s, "eisenstat_walker");
  std::vector<Real> change(s.n);
  for (std::size_t i = 0; i < s.n; ++i) change[i] = fixed.v[i] - s.v0[i];
  const Real difference = global_distance(fixed.v, adaptive.v) / global_norm(change);
  petsc_call(PetscOptionsSetValue(nullptr, "-ksp_rtol", "1e-4"), "PetscOptionsSetValue");
  const ForcingRun user = minimise(s, "eisenstat_walker");
  petsc_call(PetscOptionsClearValue(nullptr, "-ksp_rtol"), "PetscOptionsClearValue");
  if (world_rank() == 0)
    std::printf(
        "[forcing   ] %dD %-16s fixed: newton %d ksp %3ld  eisenstat_walker: newton %d ksp %3ld  "
        "|dv|/|v - v0| %.2e  with -ksp_rtol 1e-4: newton %d ksp %3ld\n",
        D, model.c_str(), fixed.report.iterations, fixed.report.ksp_iterations, adaptive.report.iterations,
        adaptive.report.ksp_iterations, difference, user.report.iterations, user.report.ksp_iterations);
  EXPECT_TRUE(fixed.report.converged) << D << "D " << model << ": " << fixed.report.failure;
  EXPECT_TRUE(adaptive.report.converged) << D << "D " << model << ": " << adaptive.report.failure;
  EXPECT_GE(fixed.report.iterations, 3) << D << "D " << model << ": too easy a problem to compare";
  EXPECT_LT(adaptive.report.ksp_iterations, 0.75 * fixed.report.ksp_iterations) << D << "D " << model;
  EXPECT_LE(difference, 2e-4) << D << "D " << model;
  EXPECT_EQ(user.report.iterations, fixed.report.iterations) << D << "D " << model;
  EXPECT_EQ(user.report.ksp_iterations, fixed.report.ksp_iterations) << D << "D " << model;
}

TEST(NewtonForcing, EisenstatWalkerTakesFewerKrylovIterationsToTheSameSolution) {
  for (const char* model : {"neo_hookean", "fixed_corotated", "snow"}) {
    check_forcing<2>(model);
    check_forcing<3>(model);
  }
}

// ---- 6. The quasi-Newton alternative --------------------------------------------------------------

// implicit.solver: lbfgs on the same relaxing body: L-BFGS over the Jacobi preconditioner ends
// where Newton ends (within what the tolerances leave), one preconditioner application per
// iteration; it needs about as many iterations as Newton needs Krylov iterations in all (measured:
// 83-115 against Newton's 5-6 iterations with 91-121 CG iterations), each with a gradient.
template <int D>
void check_lbfgs(const std::string& model) {
  SystemSetup<D, QuadraticSpline> s(body_scene(D, model, "quadratic", false), true, 1e-2);
  const ForcingRun newton = minimise(s, "eisenstat_walker"), lbfgs = minimise(s, "eisenstat_walker", "lbfgs");
  std::vector<Real> change(s.n);
  for (std::size_t i = 0; i < s.n; ++i) change[i] = newton.v[i] - s.v0[i];
  const Real difference = global_distance(newton.v, lbfgs.v) / global_norm(change);
  if (world_rank() == 0)
    std::printf(
        "[lbfgs     ] %dD %-16s newton: %d iterations, ksp %3ld  lbfgs: %d iterations  |dv|/|v - v0| %.2e\n",
        D, model.c_str(), newton.report.iterations, newton.report.ksp_iterations, lbfgs.report.iterations,
        difference);
  EXPECT_TRUE(lbfgs.report.converged) << D << "D " << model << ": " << lbfgs.report.failure;
  EXPECT_EQ(lbfgs.report.ksp_iterations, lbfgs.report.iterations);  // one H₀ application each
  EXPECT_GT(lbfgs.report.iterations, newton.report.iterations);
  EXPECT_LE(difference, 2e-4) << D << "D " << model;
}

TEST(NewtonLbfgs, EndsWhereNewtonEnds) {
  for (const char* model : {"neo_hookean", "fixed_corotated"}) {
    check_lbfgs<2>(model);
    check_lbfgs<3>(model);
  }
}

}  // namespace
}  // namespace nendo
