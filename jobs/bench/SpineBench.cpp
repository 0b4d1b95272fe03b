// Cost of the spine per step: ghost exchange, particle migration, particle halo, load balance, and
// memory per particle, for an MPM-like particle set (docs/performance.md records the figures).
//
//   mpirun -np 2 build/jobs/bench/nendo_spine_bench [--particles 1000000] [--steps 20] [--dim 3]
//          [--ppc 2] [--cfl 0.25] [--rebalance-every 10] [--csv FILE]
//
// Particles sit on a regular lattice (ppc per axis per cell, dx 0.01, block 4) filling a box,
// seeded by id over the ranks like the scene seeder, and turn rigidly about a tilted axis through
// the box centre, so material crosses rank boundaries every step. The loop is an APIC transfer
// (spec 002 §6, without stress): P2G of mass and affine momentum into block windows, scatter-add,
// grid velocity, gather, G2P of velocity and B, F update, advection, migration; every
// `rebalance-every` steps a re-balance. APIC transfers the rotation without smoothing it, so the
// motion, and with it the migration rate, stays nearly the same from step to step. The particle
// halo (dx taken as the kernel support) is built and refreshed once per step for the same
// particles, as a particle method would.
//
// Every phase runs between barriers and is timed on each rank; the table shows, per phase, the
// median over steps of the maximum over ranks. Byte counts are summed over ranks.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/BSpline.hpp"
#include "core/Error.hpp"
#include "core/Mpi.hpp"
#include "decomposition/Space.hpp"

namespace nendo::bench {
namespace {

struct Options {
  std::uint64_t particles = 1000000;
  int steps = 20;
  int dimension = 3;
  int ppc = 2;               // particles per cell per axis
  Real cfl = 0.25;           // largest particle displacement per step, in cells
  int rebalance_every = 10;  // 0: never
  std::string csv;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error("option " + arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--particles") {
      o.particles = std::stoull(value());
    } else if (arg == "--steps") {
      o.steps = std::stoi(value());
    } else if (arg == "--dim") {
      o.dimension = std::stoi(value());
    } else if (arg == "--ppc") {
      o.ppc = std::stoi(value());
    } else if (arg == "--cfl") {
      o.cfl = std::stod(value());
    } else if (arg == "--rebalance-every") {
      o.rebalance_every = std::stoi(value());
    } else if (arg == "--csv") {
      o.csv = value();
    } else {
      throw Error(
          "unknown option " + arg +
          " (known: --particles N --steps N --dim 2|3 --ppc N --cfl C --rebalance-every N --csv FILE)");
    }
  }
  if (o.dimension != 2 && o.dimension != 3) throw Error("--dim must be 2 or 3");
  if (o.particles == 0 || o.steps <= 0 || o.ppc <= 0 || o.cfl <= 0)
    throw Error("--particles, --steps, --ppc and --cfl must be positive");
  return o;
}

// ---- the scenario -------------------------------------------------------------------------------

constexpr Real kDx = 0.01;
constexpr int kBlock = 4;
constexpr Real kDensity = 1000;
constexpr Real kDt = 1e-3;

struct Lattice {
  int dimension;
  Real spacing;              // dx / ppc
  std::uint64_t count[3];    // particles per axis (the last layer may be partial)
  Vec3 centre;               // of the box
  Real angular_velocity[3];  // of the rigid rotation about the centre
};

Lattice make_lattice(const Options& o) {
  Lattice l{};
  l.dimension = o.dimension;
  l.spacing = kDx / o.ppc;
  const std::uint64_t n = o.dimension == 3
                              ? static_cast<std::uint64_t>(std::ceil(std::cbrt(double(o.particles))))
                              : static_cast<std::uint64_t>(std::ceil(std::sqrt(double(o.particles))));
  l.count[0] = n;
  l.count[1] = o.dimension == 3 ? n : (o.particles + n - 1) / n;
  l.count[2] = o.dimension == 3 ? (o.particles + n * n - 1) / (n * n) : 1;
  Real radius2 = 0;
  for (int a = 0; a < 3; ++a) {
    const Real side = a < o.dimension ? l.count[a] * l.spacing : 0;
    l.centre[a] = 0.5 * side;
    radius2 += 0.25 * side * side;
  }
  // Tilted axis in 3D (every rank boundary of the Morton partition gets crossed); z in 2D. The
  // fastest particle moves cfl cells per step.
  const Real omega = o.cfl * kDx / (kDt * std::sqrt(radius2));
  if (o.dimension == 3) {
    const Real axis[3] = {1, 2, 3};
    const Real norm = std::sqrt(14.0);
    for (int a = 0; a < 3; ++a) l.angular_velocity[a] = omega * axis[a] / norm;
  } else {
    l.angular_velocity[0] = l.angular_velocity[1] = 0, l.angular_velocity[2] = omega;
  }
  return l;
}

// Velocity gradient A of the rotation (v = A (x - centre)), row-major 3x3.
void rotation_gradient(const Lattice& l, Real A[9]) {
  const Real* w = l.angular_velocity;
  const Real m[9] = {0, -w[2], w[1], w[2], 0, -w[0], -w[1], w[0], 0};
  std::memcpy(A, m, sizeof(m));
}

// Rank r of P creates ids [rN/P, (r+1)N/P); a particle's state is a function of its id.
ParticleSet seed(const Options& o, const Lattice& l, int rank, int ranks) {
  const int d = o.dimension;
  ParticleSet ps(d);
  ps.add_field("velocity", FieldType::Real, d);
  ps.add_field("mass", FieldType::Real, 1);
  ps.add_field("affine", FieldType::Real, d * d);                // APIC B (spec 002 §6)
  ps.add_field("deformation_gradient", FieldType::Real, d * d);  // F
  ps.add_field("volume", FieldType::Real, 1);
  ps.add_field("Jp", FieldType::Real, 1);  // plastic volume ratio (snow, sand)
  ps.add_field("material", FieldType::Int32, 1);
  const std::uint64_t begin = o.particles * rank / ranks, end = o.particles * (rank + 1) / ranks;
  ps.resize(end - begin);

  Real A[9];
  rotation_gradient(l, A);
  const Real D = 0.25 * kDx * kDx;  // quadratic B-spline inertia tensor, D = dx^2/4 I
  const Real volume = std::pow(l.spacing, d);
  ParticleId* id = ps.ids();
  Real* x = ps.positions();
  Real* v = ps.real("velocity");
  Real* mass = ps.real("mass");
  Real* B = ps.real("affine");
  Real* F = ps.real("deformation_gradient");
  Real* vol = ps.real("volume");
  Real* Jp = ps.real("Jp");
  std::int32_t* material = ps.int32("material");
  for (std::uint64_t g = begin; g < end; ++g) {
    const std::size_t p = g - begin;
    id[p] = g;
    const std::uint64_t index[3] = {g % l.count[0], (g / l.count[0]) % l.count[1],
                                    g / (l.count[0] * l.count[1])};
    for (int a = 0; a < d; ++a) x[d * p + a] = (static_cast<Real>(index[a]) + 0.5) * l.spacing;
    for (int a = 0; a < d; ++a) {
      Real va = 0;
      for (int b = 0; b < d; ++b) va += A[3 * a + b] * (x[d * p + b] - l.centre[b]);
      v[d * p + a] = va;
      for (int b = 0; b < d; ++b) {
        B[d * d * p + d * a + b] = A[3 * a + b] * D;  // C = B D^-1 = A: the first step is exact
        F[d * d * p + d * a + b] = a == b ? 1 : 0;
      }
    }
    mass[p] = kDensity * volume;
    vol[p] = volume;
    Jp[p] = 1;
    material[p] = 0;
  }
  return ps;
}

// ---- one APIC transfer ------------------------------------------------------------------------

// Calls visit(window node index, weight, x_i - x_p) for the 3^d nodes around particle p of block cb.
template <int dim, class Visit>
inline void for_each_node(const BlockGeometry& g, const GhostExchange& ghost, const BlockCoord& cb,
                          const Real* xp, Visit visit) {
  const int ex = ghost.window_extent(0), ey = ghost.window_extent(1);
  const QuadraticWeights q = quadratic_weights(g.dimension, g.dx, g.origin, xp);
  const int span = dim == 3 ? 3 : 1;
  int corner[3] = {0, 0, 0};
  for (int a = 0; a < dim; ++a)
    corner[a] = static_cast<int>(q.base[a] - std::int64_t(cb[a]) * g.block + GhostExchange::kWindowLower);
  Real dpos[3] = {0, 0, 0};
  for (int k = 0; k < span; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 3; ++i) {
        const int offset[3] = {i, j, k};
        for (int a = 0; a < dim; ++a)
          dpos[a] = (static_cast<Real>(q.base[a] + offset[a]) * g.dx + g.origin[a]) - xp[a];
        const Real w = q.w[0][i] * q.w[1][j] * (dim == 3 ? q.w[2][k] : 1.0);
        visit(corner[0] + i + ex * (corner[1] + j + ey * (corner[2] + k)), w, dpos);
      }
}

template <int d>
void particle_to_grid(Space& space, const GhostExchange& ghost, std::vector<Real>& windows) {
  const BlockGeometry& g = space.geometry();
  constexpr int c = 1 + d;
  const ParticleSet& ps = space.particles();
  const ParticleBlocks& blocks = space.blocks();
  const Real* x = ps.positions();
  const Real* v = ps.real("velocity");
  const Real* m = ps.real("mass");
  const Real* B = ps.real("affine");
  const Real inverse_D = 4 / (g.dx * g.dx);
  const std::size_t wn = ghost.window_nodes() * static_cast<std::size_t>(c);
  windows.assign(blocks.count() * wn, 0.0);
  for (std::size_t b = 0; b < blocks.count(); ++b) {
    const BlockCoord cb = decode_block_key(blocks.keys[b]);
    Real* window = windows.data() + b * wn;
    for (std::size_t p = blocks.begin(b); p < blocks.end(b); ++p) {
      const Real* Bp = B + d * d * p;
      for_each_node<d>(g, ghost, cb, x + d * p, [&](int node, Real w, const Real* dpos) {
        Real* n = window + c * node;
        const Real wm = w * m[p];
        n[0] += wm;
        for (int a = 0; a < d; ++a) {
          Real affine = 0;
          for (int b2 = 0; b2 < d; ++b2) affine += Bp[d * a + b2] * dpos[b2];
          n[1 + a] += wm * (v[d * p + a] + inverse_D * affine);
        }
      });
    }
  }
}

void grid_velocity(const GhostExchange& ghost, int d, const std::vector<Real>& grid,
                   std::vector<Real>& velocity) {
  const int c = 1 + d;
  const std::size_t nodes = ghost.grid_blocks() * ghost.nodes_per_block();
  velocity.assign(nodes * d, 0.0);
  for (std::size_t n = 0; n < nodes; ++n) {
    const Real mass = grid[c * n];
    if (mass == 0.0) continue;
    for (int a = 0; a < d; ++a) velocity[d * n + a] = grid[c * n + 1 + a] / mass;
  }
}

template <int d>
void grid_to_particle(Space& space, const GhostExchange& ghost, const std::vector<Real>& windows, Real dt) {
  const BlockGeometry& g = space.geometry();
  ParticleSet& ps = space.particles();
  const ParticleBlocks& blocks = space.blocks();
  Real* x = ps.positions();
  Real* v = ps.real("velocity");
  Real* B = ps.real("affine");
  Real* F = ps.real("deformation_gradient");
  const Real inverse_D = 4 / (g.dx * g.dx);
  const std::size_t wn = ghost.window_nodes() * static_cast<std::size_t>(d);
  for (std::size_t b = 0; b < blocks.count(); ++b) {
    const BlockCoord cb = decode_block_key(blocks.keys[b]);
    const Real* window = windows.data() + b * wn;
    for (std::size_t p = blocks.begin(b); p < blocks.end(b); ++p) {
      Real vp[3] = {0, 0, 0}, Bp[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
      for_each_node<d>(g, ghost, cb, x + d * p, [&](int node, Real w, const Real* dpos) {
        const Real* vi = window + d * node;
        for (int a = 0; a < d; ++a) {
          vp[a] += w * vi[a];
          for (int b2 = 0; b2 < d; ++b2) Bp[d * a + b2] += w * vi[a] * dpos[b2];
        }
      });
      // F <- (I + dt C) F with C = B D^-1 (spec 002 §6, §9.2).
      Real* Fp = F + d * d * p;
      Real Fn[9];
      for (int a = 0; a < d; ++a)
        for (int b2 = 0; b2 < d; ++b2) {
          Real s = Fp[d * a + b2];
          for (int k = 0; k < d; ++k) s += dt * inverse_D * Bp[d * a + k] * Fp[d * k + b2];
          Fn[d * a + b2] = s;
        }
      std::memcpy(Fp, Fn, sizeof(Real) * d * d);
      std::memcpy(B + d * d * p, Bp, sizeof(Real) * d * d);
      for (int a = 0; a < d; ++a) {
        v[d * p + a] = vp[a];
        x[d * p + a] += dt * vp[a];
      }
    }
  }
}

// ---- measurement ------------------------------------------------------------------------------

enum Phase {
  kGhostBuild,
  kHaloBuild,
  kHaloUpdate,
  kP2G,
  kScatterAdd,
  kGridVelocity,
  kGather,
  kG2P,
  kMigrate,
  kPhases
};
const char* const kPhaseNames[kPhases] = {
    "ghost plan build", "halo build",   "halo update (x, v)", "P2G compute", "ghost scatter_add",
    "grid velocity",    "ghost gather", "G2P + advection",    "migration",
};

const char* const kPhaseKeys[kPhases] = {"ghost_build", "halo_build",  "halo_update",
                                         "p2g",         "scatter_add", "grid_velocity",
                                         "gather",      "g2p",         "migration"};

enum Counter {
  kGhostBuildBytes,
  kScatterBytes,
  kGatherBytes,
  kMigrationBytes,
  kMigrated,
  kHaloBuildBytes,
  kHaloUpdateBytes,
  kHaloCopies,
  kBlocksChanged,
  kCounters
};

// Times the call between barriers; returns this rank's seconds.
template <class F>
double timed(MPI_Comm comm, F&& f) {
  MPI_Barrier(comm);
  const double start = MPI_Wtime();
  f();
  return MPI_Wtime() - start;
}

struct Memory {
  double rss_kb = 0, hwm_kb = 0;
};

Memory read_memory() {
  Memory m;
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) m.rss_kb = std::atof(line.c_str() + 6);
    if (line.rfind("VmHWM:", 0) == 0) m.hwm_kb = std::atof(line.c_str() + 6);
  }
  return m;
}

Memory sum_memory(MPI_Comm comm, const Memory& m) {
  double local[2] = {m.rss_kb, m.hwm_kb}, total[2] = {0, 0};
  MPI_Allreduce(local, total, 2, MPI_DOUBLE, MPI_SUM, comm);
  return {total[0], total[1]};
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

// Relative RMS difference between the particles' velocities and the rigid rotation at the positions
// they had before the last advection. After the first step it is round-off (APIC transfers an affine
// field exactly), on any rank count: a check of P2G, scatter-add, gather and G2P. Later steps drift
// by O(omega dt) per step, since explicit advection turns a rotation into a slow outward spiral.
double rotation_error(const Space& space, const Lattice& l) {
  const ParticleSet& ps = space.particles();
  const int d = ps.dimension();
  const Real* x = ps.positions();
  const Real* v = ps.real("velocity");
  Real A[9];
  rotation_gradient(l, A);
  double sums[2] = {0, 0};
  for (std::size_t p = 0; p < ps.size(); ++p)
    for (int a = 0; a < d; ++a) {
      Real exact = 0;
      for (int b = 0; b < d; ++b) exact += A[3 * a + b] * (x[d * p + b] - kDt * v[d * p + b] - l.centre[b]);
      sums[0] += (v[d * p + a] - exact) * (v[d * p + a] - exact);
      sums[1] += exact * exact;
    }
  MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, space.comm());
  return sums[1] > 0 ? std::sqrt(sums[0] / sums[1]) : 0;
}

double particle_imbalance(const Space& space) {
  const double local = static_cast<double>(space.particles().size());
  double max = 0, total = 0;
  MPI_Allreduce(&local, &max, 1, MPI_DOUBLE, MPI_MAX, space.comm());
  MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, space.comm());
  return total > 0 ? max * space.ranks() / total : 1.0;
}

int run(const Options& o) {
  MPI_Comm comm = MPI_COMM_WORLD;
  const int rank = mpi::rank(comm), ranks = mpi::size(comm);
  const Lattice lattice = make_lattice(o);
  BlockGeometry geometry;
  geometry.dimension = o.dimension;
  geometry.dx = kDx;
  geometry.block = kBlock;

  // Memory: the spine's fields, then the peak of sorting and distributing them.
  MPI_Barrier(comm);
  const Memory before = sum_memory(comm, read_memory());
  ParticleSet seeded = seed(o, lattice, rank, ranks);
  const std::size_t payload_bytes = seeded.bytes_per_particle();
  const Memory after_seed = sum_memory(comm, read_memory());
  Space space(comm, geometry, std::move(seeded));
  double distribute_seconds = timed(comm, [&] { space.distribute(); });
  MPI_Allreduce(MPI_IN_PLACE, &distribute_seconds, 1, MPI_DOUBLE, MPI_MAX, comm);
  const Memory after_distribute = sum_memory(comm, read_memory());
  const double imbalance_start = particle_imbalance(space);

  std::vector<double> seconds(static_cast<std::size_t>(kPhases) * o.steps, 0.0);
  std::vector<double> counters(static_cast<std::size_t>(kCounters) * o.steps, 0.0);
  std::vector<double> rebalance_seconds, rebalance_bytes, rebalance_migrated;
  std::vector<Real> windows, grid, velocity, velocity_windows;
  const int d = o.dimension;
  const std::vector<std::string> halo_fields = {"position", "velocity"};

  double velocity_error = 0;   // after the first step
  std::size_t halo_bytes = 0;  // the halo's running counter after the previous step

  MPI_Barrier(comm);
  const double loop_start = MPI_Wtime();
  for (int step = 0; step < o.steps; ++step) {
    double* t = seconds.data() + static_cast<std::size_t>(kPhases) * step;
    double* n = counters.data() + static_cast<std::size_t>(kCounters) * step;
    // Space rebuilds the plans here when the particles moved; the counters of the ghost exchange
    // are zero on entry (reset after the gather), the halo's are read before and after.
    GhostExchange* ghost = nullptr;
    t[kGhostBuild] = timed(comm, [&] { ghost = &space.ghost(); });
    n[kGhostBuildBytes] = static_cast<double>(ghost->bytes_sent());

    ParticleHalo* halo = nullptr;
    const std::size_t halo_bytes0 = halo_bytes;
    t[kHaloBuild] = timed(comm, [&] { halo = &space.halo(); });
    const std::size_t halo_bytes1 = halo->bytes_sent();
    t[kHaloUpdate] = timed(comm, [&] { halo->update(space.particles(), halo_fields); });
    n[kHaloBuildBytes] = static_cast<double>(halo_bytes1 - halo_bytes0);
    n[kHaloUpdateBytes] = static_cast<double>(halo->bytes_sent() - halo_bytes1);
    n[kHaloCopies] = static_cast<double>(halo->particles().size());
    halo_bytes = halo->bytes_sent();

    t[kP2G] = timed(comm, [&] {
      d == 3 ? particle_to_grid<3>(space, *ghost, windows) : particle_to_grid<2>(space, *ghost, windows);
    });
    ghost->reset_counters();
    t[kScatterAdd] = timed(comm, [&] { ghost->scatter_add(windows, 1 + d, grid); });
    n[kScatterBytes] = static_cast<double>(ghost->bytes_sent());
    t[kGridVelocity] = timed(comm, [&] { grid_velocity(*ghost, d, grid, velocity); });
    ghost->reset_counters();
    t[kGather] = timed(comm, [&] { ghost->gather(velocity, d, velocity_windows); });
    n[kGatherBytes] = static_cast<double>(ghost->bytes_sent());
    ghost->reset_counters();
    t[kG2P] = timed(comm, [&] {
      d == 3 ? grid_to_particle<3>(space, *ghost, velocity_windows, kDt)
             : grid_to_particle<2>(space, *ghost, velocity_windows, kDt);
    });

    const std::vector<BlockKey> keys_before = space.blocks().keys;
    space.migration().reset_counters();
    t[kMigrate] = timed(comm, [&] { space.migrate(); });
    n[kMigrationBytes] = static_cast<double>(space.migration().bytes_sent());
    n[kMigrated] = static_cast<double>(space.migration().particles_sent());
    n[kBlocksChanged] = keys_before != space.blocks().keys ? 1 : 0;
    if (step == 0) velocity_error = rotation_error(space, lattice);

    if (o.rebalance_every > 0 && (step + 1) % o.rebalance_every == 0) {
      space.migration().reset_counters();
      double r = timed(comm, [&] { space.rebalance(); });
      double sent[2] = {static_cast<double>(space.migration().bytes_sent()),
                        static_cast<double>(space.migration().particles_sent())};
      MPI_Allreduce(MPI_IN_PLACE, &r, 1, MPI_DOUBLE, MPI_MAX, comm);
      MPI_Allreduce(MPI_IN_PLACE, sent, 2, MPI_DOUBLE, MPI_SUM, comm);
      rebalance_seconds.push_back(r);
      rebalance_bytes.push_back(sent[0]);
      rebalance_migrated.push_back(sent[1]);
    }
  }
  MPI_Barrier(comm);
  const double loop_seconds = MPI_Wtime() - loop_start;
  const Memory after_loop = sum_memory(comm, read_memory());
  const double imbalance_end = particle_imbalance(space);
  const std::uint64_t total_particles = space.global_particles();
  const std::size_t grid_blocks = space.ghost().grid_blocks();  // collective when stale

  // Times: maximum over ranks; counters: sums (blocks changed: any rank).
  std::vector<double> counter_sum(counters.size()), seconds_max(seconds.size());
  MPI_Reduce(seconds.data(), seconds_max.data(), static_cast<int>(seconds.size()), MPI_DOUBLE, MPI_MAX, 0,
             comm);
  MPI_Reduce(counters.data(), counter_sum.data(), static_cast<int>(counters.size()), MPI_DOUBLE, MPI_SUM, 0,
             comm);
  if (rank != 0) return 0;

  auto column = [&](const std::vector<double>& v, int stride, int index) {
    std::vector<double> out;
    for (int s = 0; s < o.steps; ++s) out.push_back(v[static_cast<std::size_t>(stride) * s + index]);
    return out;
  };
  const double N = static_cast<double>(total_particles);
  std::printf(
      "nendo spine benchmark: %llu particles, %dD, %d rank(s), ppc %d (%d per cell), dx %g, block %d\n",
      static_cast<unsigned long long>(total_particles), d, ranks, o.ppc, static_cast<int>(std::pow(o.ppc, d)),
      kDx, kBlock);
  std::printf(
      "lattice %llu x %llu x %llu, spacing %g; rotation %.3g rad/s, dt %g, max displacement %.2f dx/step\n",
      static_cast<unsigned long long>(lattice.count[0]), static_cast<unsigned long long>(lattice.count[1]),
      static_cast<unsigned long long>(lattice.count[2]), lattice.spacing,
      std::sqrt(lattice.angular_velocity[0] * lattice.angular_velocity[0] +
                lattice.angular_velocity[1] * lattice.angular_velocity[1] +
                lattice.angular_velocity[2] * lattice.angular_velocity[2]),
      kDt, o.cfl);
  std::printf("particle blocks on rank 0: %zu, owned grid blocks on rank 0: %zu; distribute: %.1f ms\n\n",
              space.blocks().count(), grid_blocks, 1e3 * distribute_seconds);

  std::printf("%-22s %12s %12s %12s\n", "phase (max over ranks)", "median ms", "mean ms", "max ms");
  double phase_sum = 0, mpm_sum = 0;
  for (int p = 0; p < kPhases; ++p) {
    const std::vector<double> c = column(seconds_max, kPhases, p);
    const double med = median(c);
    phase_sum += med;
    if (p != kHaloBuild && p != kHaloUpdate) mpm_sum += med;
    std::printf("%-22s %12.3f %12.3f %12.3f\n", kPhaseNames[p], 1e3 * med, 1e3 * mean(c),
                1e3 * *std::max_element(c.begin(), c.end()));
  }
  const double rebalance_median = median(rebalance_seconds);
  std::printf("%-22s %12.3f %12.3f %12s  (per call, %zu calls)\n", "rebalance", 1e3 * rebalance_median,
              1e3 * mean(rebalance_seconds), "", rebalance_seconds.size());
  std::printf("%-22s %12.3f\n", "sum of medians", 1e3 * phase_sum);
  std::printf("%-22s %12.3f\n", "... without halo", 1e3 * mpm_sum);
  std::printf("%-22s %12.3f  (wall, incl. halo and rebalance)\n\n", "loop per step",
              1e3 * loop_seconds / o.steps);

  std::printf("%-34s %14s\n", "sent per step (sum over ranks)", "mean");
  const char* const counter_names[kCounters] = {
      "ghost plan build bytes", "ghost scatter_add bytes", "ghost gather bytes",
      "migration bytes",        "particles migrated",      "halo build bytes",
      "halo update bytes",      "halo copies (received)",  "steps with changed blocks"};
  std::vector<double> counter_means(kCounters);
  for (int k = 0; k < kCounters; ++k) {
    counter_means[k] = mean(column(counter_sum, kCounters, k));
    if (k == kBlocksChanged) {
      double changed = 0;
      for (int s = 0; s < o.steps; ++s)
        changed += counter_sum[static_cast<std::size_t>(kCounters) * s + k] > 0;
      std::printf("%-34s %14.0f of %d\n", counter_names[k], changed, o.steps);
    } else {
      std::printf("%-34s %14.0f\n", counter_names[k], counter_means[k]);
    }
  }
  std::printf("%-34s %14.0f  (particles %.0f, per call)\n\n", "rebalance migration bytes",
              mean(rebalance_bytes), mean(rebalance_migrated));

  const double loop_rate = N * o.steps / loop_seconds;
  const double mpm_rate = mpm_sum > 0 ? N / mpm_sum : 0;
  std::printf("particle-steps/s: %.3g (whole loop, wall), %.3g (MPM phases only, sum of medians)\n",
              loop_rate, mpm_rate);

  const double spine_bytes = 8 + 8.0 * d;
  const double rss_per_particle = (after_seed.rss_kb - before.rss_kb) * 1024 / N;
  const double distribute_peak = (after_distribute.hwm_kb - before.rss_kb) * 1024 / N;
  const double loop_rss = (after_loop.rss_kb - before.rss_kb) * 1024 / N;
  const double loop_peak = (after_loop.hwm_kb - before.rss_kb) * 1024 / N;
  std::printf("bytes per particle: spine fields (id + position) %.0f; payload (ParticleSet) %zu;\n",
              spine_bytes, payload_bytes);
  std::printf("  resident (sum over ranks, above the pre-seeding RSS of %.1f MB): after seeding %.1f,\n",
              before.rss_kb / 1024, rss_per_particle);
  std::printf("  peak through sort + distribute %.1f, after the loop %.1f, peak through the loop %.1f\n",
              distribute_peak, loop_rss, loop_peak);
  std::printf("imbalance (max/mean particles per rank): %.4f after distribute, %.4f at the end\n",
              imbalance_start, imbalance_end);

  std::printf("transfer check: velocity vs rigid rotation after step 1 (relative RMS): %.1e\n",
              velocity_error);

  if (!o.csv.empty()) {
    std::ifstream existing(o.csv);
    const bool header = !existing.good() || existing.peek() == std::ifstream::traits_type::eof();
    existing.close();
    std::ofstream out(o.csv, std::ios::app);
    if (!out) throw Error("cannot append to " + o.csv);
    if (header) {
      out << "ranks,dim,particles,ppc,steps";
      for (int p = 0; p < kPhases; ++p) out << ",ms_" << kPhaseKeys[p];
      out << ",ms_rebalance,ms_loop_per_step,particle_steps_per_s,ghost_scatter_bytes,ghost_gather_bytes,"
             "migration_bytes,migrated,halo_build_bytes,halo_update_bytes,spine_bytes_pp,payload_bytes_pp,"
             "rss_bytes_pp,peak_bytes_pp,imbalance\n";
    }
    out << ranks << ',' << d << ',' << total_particles << ',' << o.ppc << ',' << o.steps;
    for (int p = 0; p < kPhases; ++p) out << ',' << 1e3 * median(column(seconds_max, kPhases, p));
    out << ',' << 1e3 * rebalance_median << ',' << 1e3 * loop_seconds / o.steps << ',' << loop_rate << ','
        << counter_means[kScatterBytes] << ',' << counter_means[kGatherBytes] << ','
        << counter_means[kMigrationBytes] << ',' << counter_means[kMigrated] << ','
        << counter_means[kHaloBuildBytes] << ',' << counter_means[kHaloUpdateBytes] << ',' << spine_bytes
        << ',' << payload_bytes << ',' << rss_per_particle << ',' << loop_peak << ',' << imbalance_end
        << '\n';
  }
  return 0;
}

}  // namespace
}  // namespace nendo::bench

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  try {
    status = nendo::bench::run(nendo::bench::parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nendo_spine_bench: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}
