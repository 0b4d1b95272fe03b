#include "bodies/BodySeeder.hpp"

#include <cmath>
#include <utility>
#include <vector>

#include "core/Error.hpp"
#include "core/Mpi.hpp"
#include "io/ParticleReader.hpp"

namespace nendo {
namespace {

// Points at (i + 1/2) * spacing for i in [lo, lo + count) per axis: sub-cell centres when the
// spacing is dx / particles_per_cell.
struct Lattice {
  Int3 lo{0, 0, 0};
  Int3 count{1, 1, 1};
  Real spacing = 1;
  std::uint64_t size() const { return std::uint64_t(count[0]) * count[1] * count[2]; }
  void point(std::uint64_t index, int dim, Real* x) const {
    for (int a = 0; a < dim; ++a) {
      x[a] = (static_cast<Real>(lo[a] + std::int64_t(index % count[a])) + 0.5) * spacing;
      index /= count[a];
    }
  }
};

void bounds(const BodySettings& b, int dim, Vec3& lo, Vec3& hi) {
  if (b.shape == "box") {
    lo = b.min, hi = b.max;
  } else if (b.shape == "sphere") {
    for (int a = 0; a < dim; ++a) lo[a] = b.center[a] - b.radius, hi[a] = b.center[a] + b.radius;
  } else {  // cylinder: base centre, axis, radius, height
    for (int a = 0; a < dim; ++a) lo[a] = b.center[a] - b.radius, hi[a] = b.center[a] + b.radius;
    lo[b.axis] = b.center[b.axis], hi[b.axis] = b.center[b.axis] + b.height;
  }
}

bool inside(const BodySettings& b, int dim, const Real* x) {
  if (b.shape == "box") {
    for (int a = 0; a < dim; ++a)
      if (x[a] < b.min[a] || x[a] >= b.max[a]) return false;
    return true;
  }
  Real r2 = 0;
  for (int a = 0; a < dim; ++a)
    if (b.shape == "sphere" || a != b.axis) r2 += (x[a] - b.center[a]) * (x[a] - b.center[a]);
  if (r2 >= b.radius * b.radius) return false;
  if (b.shape == "sphere") return true;
  const Real h = x[b.axis] - b.center[b.axis];
  return h >= 0 && h < b.height;
}

Lattice lattice_for(const BodySettings& b, int dim, Real dx) {
  Lattice l;
  l.spacing = dx / b.particles_per_cell;
  Vec3 lo{}, hi{};
  bounds(b, dim, lo, hi);
  for (int a = 0; a < dim; ++a) {
    l.lo[a] = static_cast<std::int64_t>(std::floor(lo[a] / l.spacing));
    l.count[a] = static_cast<std::int64_t>(std::ceil(hi[a] / l.spacing)) - l.lo[a];
  }
  return l;
}

struct BodyFields {
  Real mass, volume;
  int material;
  int body;  // index in scene.bodies
  const Vec3* velocity;
};

void set_fields(ParticleSet& ps, std::size_t p, const BodyFields& f) {
  const int d = ps.dimension();
  for (int a = 0; a < d; ++a) ps.real("velocity")[d * p + a] = (*f.velocity)[a];
  ps.real("volume")[p] = f.volume;
  if (ps.has_field("mass")) ps.real("mass")[p] = f.mass;  // methods that store it (MPM derives it)
  if (ps.has_field("material")) ps.int32("material")[p] = f.material;
  if (ps.has_field("body")) ps.int32("body")[p] = f.body;  // methods that tell bodies apart
}

// The share [begin, end) of a lattice's points that this rank tests, and how many are inside.
struct LatticeShare {
  std::uint64_t begin, end;
};
LatticeShare share_of(const Lattice& l, int rank, int ranks) {
  const std::uint64_t n = l.size();
  return {n * rank / ranks, n * (rank + 1) / ranks};
}

std::size_t count_inside(const BodySettings& b, const Lattice& l, int d, const LatticeShare& share) {
  Real x[3] = {0, 0, 0};
  std::size_t count = 0;
  for (std::uint64_t i = share.begin; i < share.end; ++i) {
    l.point(i, d, x);
    count += inside(b, d, x);
  }
  return count;
}

void seed_lattice(const BodySettings& b, const Lattice& l, const BodyFields& f, ParticleId id_base,
                  const LatticeShare& share, ParticleSet& ps) {
  const int d = ps.dimension();
  Real x[3] = {0, 0, 0};
  for (std::uint64_t i = share.begin; i < share.end; ++i) {
    l.point(i, d, x);
    if (!inside(b, d, x)) continue;
    const std::size_t p = ps.size();
    ps.resize(p + 1);
    ps.ids()[p] = id_base + i;
    for (int a = 0; a < d; ++a) ps.positions()[d * p + a] = x[a];
    set_fields(ps, p, f);
  }
}

// A point-file body's points, read collectively (each rank its share) before anything is seeded.
struct FilePoints {
  ParticleSet points;
  ParticleFileInfo info;
};
FilePoints read_points(MPI_Comm comm, const Scene& scene, const BodySettings& b) {
  ParticleFileInfo info;
  ParticleSet points = ParticleReader::read(comm, b.path, &info);
  if (info.dimension != scene.dimension)
    throw Error(b.path + ": points are " + std::to_string(info.dimension) + "D, the scene is " +
                std::to_string(scene.dimension) + "D");
  return {std::move(points), info};
}

std::uint64_t seed_file(MPI_Comm comm, const FilePoints& file, BodyFields f, ParticleId id_base,
                        ParticleSet& ps) {
  const ParticleSet& points = file.points;
  std::uint64_t mine = points.size(), first = 0;
  MPI_Exscan(&mine, &first, 1, MPI_UINT64_T, MPI_SUM, comm);
  if (mpi::rank(comm) == 0) first = 0;
  const bool has_volume = points.has_field("volume");
  const Real density = f.mass / f.volume;
  const int d = ps.dimension();
  for (std::size_t i = 0; i < points.size(); ++i) {
    const std::size_t p = ps.size();
    ps.resize(p + 1);
    ps.ids()[p] = id_base + first + i;
    for (int a = 0; a < d; ++a) ps.positions()[d * p + a] = points.positions()[d * i + a];
    BodyFields own = f;
    if (has_volume) own.volume = points.real("volume")[i], own.mass = density * own.volume;
    set_fields(ps, p, own);
  }
  return file.info.count;
}

// The points of one lattice row (along axis 0, the other indices fixed by `row`) inside a sphere or
// cylinder: an interval, since the shape is convex, found around the point nearest the shape's
// middle by bisection with inside() itself, so that the count is seed_lattice()'s exactly.
std::uint64_t count_row(const BodySettings& b, const Lattice& l, int d, std::uint64_t row) {
  const std::uint64_t n = std::uint64_t(l.count[0]);
  Real x[3] = {0, 0, 0};
  const auto in = [&](std::uint64_t i) {
    l.point(row * n + i, d, x);
    return inside(b, d, x);
  };
  const Real middle = b.shape == "cylinder" && b.axis == 0 ? b.center[0] + b.height / 2 : b.center[0];
  const auto nearest = static_cast<std::int64_t>(std::floor(middle / l.spacing)) - l.lo[0];
  std::int64_t seed = -1;
  for (std::int64_t i : {nearest, nearest - 1, nearest + 1})
    if (i >= 0 && i < std::int64_t(n) && in(std::uint64_t(i))) seed = i;
  if (seed < 0) return 0;
  std::uint64_t lo = 0, hi = std::uint64_t(seed);  // first inside in [lo, hi]
  while (lo < hi) {
    const std::uint64_t mid = (lo + hi) / 2;
    in(mid) ? hi = mid : lo = mid + 1;
  }
  std::uint64_t first = lo;
  lo = std::uint64_t(seed), hi = n - 1;  // last inside in [lo, hi]
  while (lo < hi) {
    const std::uint64_t mid = (lo + hi + 1) / 2;
    in(mid) ? lo = mid : hi = mid - 1;
  }
  return lo - first + 1;
}

}  // namespace

std::uint64_t count_lattice_particles(const BodySettings& b, int d, Real dx) {
  const Lattice l = lattice_for(b, d, dx);
  if (b.shape == "box") {  // inside() is a test per axis
    std::uint64_t count = 1;
    for (int a = 0; a < d; ++a) {
      std::uint64_t on_axis = 0;
      for (std::int64_t i = 0; i < l.count[a]; ++i) {
        const Real x = (static_cast<Real>(l.lo[a] + i) + 0.5) * l.spacing;
        on_axis += x >= b.min[a] && x < b.max[a];
      }
      count *= on_axis;
    }
    return count;
  }
  std::uint64_t count = 0;
  const std::uint64_t rows = l.size() / std::uint64_t(l.count[0]);
  for (std::uint64_t row = 0; row < rows; ++row) count += count_row(b, l, d, row);
  return count;
}

int material_index(const Scene& scene, const std::string& name) {
  int i = 0;
  for (const auto& [key, settings] : scene.materials) {
    if (key == name) return i;
    ++i;
  }
  throw Error("no material '" + name + "'");
}

// Two passes: count this rank's particles of every body, reserve them at once, then seed, so
// that the fields hold exactly what they need (grown particle by particle they would hold up to
// twice as much, the largest part of the peak memory of a big run).
SeedResult seed_bodies(MPI_Comm comm, const Scene& scene, ParticleSet& ps) {
  const int d = scene.dimension, rank = mpi::rank(comm), ranks = mpi::size(comm);
  std::vector<FilePoints> files;
  std::size_t count = ps.size();
  for (const BodySettings& b : scene.bodies) {
    if (b.shape == "file") {
      files.push_back(read_points(comm, scene, b));
      count += files.back().points.size();
    } else {
      const Lattice l = lattice_for(b, d, scene.grid.dx);
      count += count_inside(b, l, d, share_of(l, rank, ranks));
    }
  }
  ps.reserve(count);
  SeedResult result;
  int body = 0;
  auto file = files.begin();
  for (const BodySettings& b : scene.bodies) {
    const MaterialSettings& m = scene.materials.at(b.material);
    const Real spacing = scene.grid.dx / b.particles_per_cell;
    const Real volume = std::pow(spacing, d);
    const BodyFields f{m.params.at("density") * volume, volume, material_index(scene, b.material), body++,
                       &b.velocity};
    if (b.shape == "file") {
      result.next_id += seed_file(comm, *file++, f, result.next_id, ps);
    } else {
      const Lattice l = lattice_for(b, d, scene.grid.dx);
      seed_lattice(b, l, f, result.next_id, share_of(l, rank, ranks), ps);
      result.next_id += l.size();
    }
  }
  return result;
}

}  // namespace nendo
