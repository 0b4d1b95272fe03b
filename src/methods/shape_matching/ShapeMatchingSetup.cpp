// The precomputation of spec 001 §5 (P1-P7): meshes and examples, lumped masses, 1-rings, each
// region's rest data and example stretches, and the projections of the groups. Each rank sets up
// its share of the vertices (vertex indices [rN/P, (r+1)N/P) of each body, as the particle seeder
// splits lattices) from its share of the mesh (BodyShare.hpp: those vertices, their region
// members and the tets around the members), kept in the whole mesh's vertex and tet order so that
// every sum runs as over the whole mesh; the group Gram matrices L_G^T L_G are summed over ranks
// as integers, so the setup, like the steps, does not depend on the rank count.
#include <fmt/format.h>

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <climits>
#include <cmath>

#include "bodies/BodySeeder.hpp"
#include "core/ReproducibleSum.hpp"
#include "methods/shape_matching/BodyShare.hpp"
#include "methods/shape_matching/ExampleProjection.hpp"
#include "methods/shape_matching/RegionPolar.hpp"
#include "methods/shape_matching/ShapeMatching.hpp"

namespace nendo {
namespace shape_matching {

using RowMat3 = Eigen::Matrix<Real, 3, 3, Eigen::RowMajor>;
using MatX = Eigen::Matrix<Real, Eigen::Dynamic, Eigen::Dynamic>;

// P3: N_r = {r} ∪ 1-ring(r) of every vertex of a mesh part, sorted (CSR; complete for the vertices
// whose every tet is in the part).
struct Rings {
  std::vector<std::int64_t> offset;
  std::vector<std::int32_t> member;
  std::size_t size(std::size_t v) const { return static_cast<std::size_t>(offset[v + 1] - offset[v]); }
};

Rings rings_of(const TetMesh& mesh) {
  const std::size_t nv = mesh.vertex_count();
  // Every vertex with the other corners of its tets (duplicates included), then each short list
  // sorted and made unique in place: O(tets), no global sort.
  std::vector<std::int64_t> offset(nv + 1, 0);
  for (std::size_t v = 0; v < nv; ++v) offset[v + 1] = 1;
  for (std::int32_t corner : mesh.tets) offset[corner + 1] += 3;
  for (std::size_t v = 0; v < nv; ++v) offset[v + 1] += offset[v];
  std::vector<std::int32_t> all(offset[nv]);
  std::vector<std::int64_t> fill(offset.begin(), offset.end() - 1);
  for (std::size_t v = 0; v < nv; ++v) all[fill[v]++] = static_cast<std::int32_t>(v);
  for (std::size_t t = 0; t < mesh.tet_count(); ++t)
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 4; ++b)
        if (a != b) all[fill[mesh.tets[4 * t + a]]++] = mesh.tets[4 * t + b];
  Rings rings;
  rings.offset.assign(nv + 1, 0);
  rings.member.reserve(all.size() / 3);
  for (std::size_t v = 0; v < nv; ++v) {
    const auto begin = all.begin() + offset[v], end = all.begin() + offset[v + 1];
    std::sort(begin, end);
    rings.member.insert(rings.member.end(), begin, std::unique(begin, end));
    rings.offset[v + 1] = static_cast<std::int64_t>(rings.member.size());
  }
  return rings;
}

// The pseudo-inverse of a symmetric positive semi-definite Gram matrix (P7): eigenvalues below
// 1e-20 of the largest (σ < 1e-10 σ_max) or below 1e-20 (stretch differences under 1e-10, which
// only round-off makes) count as zero.
MatX gram_pinv(const MatX& gram) {
  if (gram.size() == 0) return gram;
  Eigen::SelfAdjointEigenSolver<MatX> eigen(gram);
  const auto& lambda = eigen.eigenvalues();
  const Real floor = 1e-20 * std::max<Real>(1, lambda.maxCoeff());
  Eigen::Matrix<Real, Eigen::Dynamic, 1> inverse(lambda.size());
  for (int k = 0; k < lambda.size(); ++k) inverse[k] = lambda[k] > floor ? 1 / lambda[k] : 0;
  return eigen.eigenvectors() * inverse.asDiagonal() * eigen.eigenvectors().transpose();
}

// A4: the weights of the 6 descriptor entries in the least squares (Eq. 6).
std::array<Real, 6> descriptor_scale(const ShapeMatchingSettings& settings) {
  const Real off = settings.descriptor == "frobenius" ? std::sqrt(Real(2)) : 1;
  return {1, 1, 1, off, off, off};
}

// One body as its vertices' set-up reads it: this rank's share of the mesh and examples, 1-rings,
// lumped masses (P2: m_i = Σ ρ V_t / 4, m̃_i = m_i / |ℜ_i| with ℜ_i = N_i for 1-rings, A1) and the
// slabs' extent. Indices are the share's (BodyShare::local), ids the whole body's.
struct BodySetup {
  const BodySettings& settings;
  const ShapeMatchingBody& keys;  // the shape_matching keys of the body
  std::string where;              // "scene.yaml: bodies[b]" for errors
  BodyShare shape;
  Rings rings;
  Real density;
  std::vector<Real> mass, share;

  BodySetup(MPI_Comm comm, const Scene& scene, std::size_t b, Real density_)
      : settings(scene.bodies[b]),
        keys(settings.method_keys.get<ShapeMatchingBody>()),
        where(fmt::format("{}: bodies[{}]", scene.source_path, b)),
        shape(load_body_share(comm, settings, scene.grid.dx / settings.particles_per_cell)),
        rings(rings_of(shape.part.mesh)),
        density(density_) {
    const TetMesh& mesh = shape.part.mesh;
    if (scene.grid.dx < 1.2 * shape.longest_edge)
      throw Error(
          fmt::format("{}: its mesh has edges up to {:.4g} m, but grid.dx = {:.4g} m must exceed 1.2 times "
                      "that (the particle halo is one cell: every region member must be in it); raise "
                      "grid.dx or particles_per_cell",
                      where, shape.longest_edge, scene.grid.dx));
    mass.assign(mesh.vertex_count(), 0.0);
    for (std::size_t t = 0; t < mesh.tet_count(); ++t)
      for (int a = 0; a < 4; ++a) mass[mesh.tets[4 * t + a]] += density * std::fabs(mesh.volume(t)) / 4;
    share.resize(mass.size());
    for (std::size_t v = 0; v < mass.size(); ++v) share[v] = mass[v] / static_cast<Real>(rings.size(v));
  }

  std::int64_t vertices() const { return shape.vertex_count; }
  int examples() const { return static_cast<int>(shape.examples.size()); }
  const Real* rest(std::size_t v) const { return shape.part.mesh.vertex(v); }
  // P6: the group of region v given the body's first group (−1: per-region groups).
  int group_of(std::size_t v, int base) const {
    if (base < 0 || keys.groups != "slabs") return base;
    const Real lo = shape.lo[keys.group_axis], hi = shape.hi[keys.group_axis];
    const int slab = static_cast<int>((rest(v)[keys.group_axis] - lo) / (hi - lo) * keys.group_slabs);
    return base + std::clamp(slab, 0, keys.group_slabs - 1);
  }
  bool held(std::size_t v) const {
    if (!keys.fixed) return false;
    for (int a = 0; a < 3; ++a)
      if (rest(v)[a] < keys.fixed_min[a] || rest(v)[a] > keys.fixed_max[a]) return false;
    return true;
  }
};

// P4 for region v: M_r, c_r^0 and A_qq^-1 (A11: ill-conditioned regions are refused).
struct RegionRest {
  const std::int32_t* member;
  std::size_t count;
  Real mass = 0;
  Real c0[3] = {0, 0, 0};
  Mat3 aqq_inv;

  // Σ m̃_j (x_j − centre) q_j^T over the region, q_j = x_j^0 − c_r^0.
  Mat3 moment(const BodySetup& body, const Real* x, const Real* centre) const {
    Mat3 s = Mat3::Zero();
    for (std::size_t k = 0; k < count; ++k) {
      const std::size_t j = member[k];
      const Real* x0 = body.rest(j);
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) s(a, b) += body.share[j] * (x[3 * j + a] - centre[a]) * (x0[b] - c0[b]);
    }
    return s;
  }
  // m̃-weighted centroid of the region in positions x.
  void centroid(const BodySetup& body, const Real* x, Real* c) const {
    c[0] = c[1] = c[2] = 0;
    for (std::size_t k = 0; k < count; ++k)
      for (int a = 0; a < 3; ++a) c[a] += body.share[member[k]] * x[3 * member[k] + a];
    for (int a = 0; a < 3; ++a) c[a] /= mass;
  }

  // The region of the vertex at index l of the share, id v.
  RegionRest(const BodySetup& body, std::size_t l, std::int64_t v)
      : member(&body.rings.member[body.rings.offset[l]]), count(body.rings.size(l)) {
    for (std::size_t k = 0; k < count; ++k) mass += body.share[member[k]];
    const Real* rest = body.shape.part.mesh.vertices.data();
    centroid(body, rest, c0);
    const Mat3 aqq = moment(body, rest, c0);
    const Eigen::Vector3d lambda = Eigen::SelfAdjointEigenSolver<Mat3>(aqq).eigenvalues();
    if (!(lambda[0] > 1e-8 * lambda[2]))
      throw Error(
          fmt::format("{}: the region of vertex {} is degenerate (cond(A_qq) = {:.3g} > 1e8, spec A11): "
                      "its vertices are nearly coplanar",
                      body.where, v, lambda[2] / lambda[0]));
    aqq_inv = aqq.inverse();
  }

  // P5: vec6(S_r^k − I) of example e (positions x^k), with the run's polar decomposition.
  void example_stretch(const BodySetup& body, int e, bool from_apq, std::int64_t v, Real* out) const {
    const Real* xe = body.shape.examples[e].data();
    Real ce[3];
    centroid(body, xe, ce);
    const Mat3 apq = moment(body, xe, ce);
    const Mat3 A = apq * aqq_inv;
    if (!(A.determinant() > 0))
      throw Error(fmt::format("{}: example {} inverts the region of vertex {}", body.where, e + 1, v));
    shape_matching::vec6(shape_matching::region_polar(A, apq, from_apq).S - Mat3::Identity(), out);
  }
};

}  // namespace shape_matching

using shape_matching::BodySetup;
using shape_matching::descriptor_scale;
using shape_matching::gram_pinv;
using shape_matching::MatX;
using shape_matching::RegionRest;
using shape_matching::RowMat3;

// The particle of vertex v of a body at index p, with its region's rest data and example
// stretches (P3-P5); returns the region's lifted stretches L'_r (6 × n, column-major).
std::vector<Real> ShapeMatching::seed_vertex(const BodySetup& body, std::size_t b, std::size_t v,
                                             ParticleId id_base, ParticleSet& ps, std::size_t p) const {
  const int capacity = settings_.max_ring, n = body.examples();
  const std::size_t l = body.shape.local(static_cast<std::int64_t>(v));
  const RegionRest region(body, l, static_cast<std::int64_t>(v));
  if (region.count > static_cast<std::size_t>(capacity))
    throw Error(
        fmt::format("{}: vertex {} has {} vertices in its region, more than shape_matching.max_ring = {}",
                    body.where, v, region.count, capacity));
  ps.ids()[p] = id_base + v;
  const Real* start = body.keys.initial_example > 0
                          ? &body.shape.examples[body.keys.initial_example - 1][3 * l]
                          : body.rest(l);
  std::copy_n(start, 3, ps.positions() + 3 * p);
  std::copy_n(body.rest(l), 3, ps.real("rest") + 3 * p);
  std::copy_n(body.settings.velocity.data(), 3, ps.real("velocity") + 3 * p);
  ps.real("mass")[p] = body.mass[l];
  ps.real("volume")[p] = body.mass[l] / body.density;
  ps.real("mass_share")[p] = body.share[l];
  ps.int32("body")[p] = static_cast<std::int32_t>(b);
  ps.int32("group")[p] = body.group_of(l, group_base_[b]);
  ps.int32("fixed")[p] = body.held(l) ? 1 : 0;
  std::int32_t* ring = ps.int32("ring") + capacity * p;
  const std::vector<std::int64_t>& ids = body.shape.part.vertex_ids;
  for (int k = 0; k < capacity; ++k)
    ring[k] =
        k < static_cast<int>(region.count) ? static_cast<std::int32_t>(id_base + ids[region.member[k]]) : -1;
  std::copy_n(region.c0, 3, ps.real("rest_centroid") + 3 * p);
  const Real identity[4] = {1, 0, 0, 0};  // the rotations the first step starts from
  std::copy_n(identity, 4, ps.real("rotation") + 4 * p);
  if (fits_rotation()) std::copy_n(identity, 4, ps.real("fit_rotation") + 4 * p);
  Eigen::Map<RowMat3>{ps.real("aqq_inv") + 9 * p} = region.aqq_inv;
  Real* stretch = ps.real("example_stretch") + components_ * p;
  std::fill_n(stretch, components_, 0.0);
  const std::array<Real, 6> scale = descriptor_scale(settings_);
  std::vector<Real> lifted(6 * n);
  for (int e = 0; e < n; ++e) {
    region.example_stretch(body, e, rotation_kind_ == kFromApq, v, stretch + 6 * e);
    for (int c = 0; c < 6; ++c) lifted[6 * e + c] = scale[c] * stretch[6 * e + c];
  }
  return lifted;
}

void ShapeMatching::seed(MPI_Comm comm, const Scene& scene, ParticleSet& ps) {
  struct Local {  // this rank's vertices of one body
    std::size_t body, first, count;
    std::vector<Real> lifted;  // L'_r of each, 6 × n
  };
  std::vector<Local> locals;
  std::vector<std::vector<double>> gram_terms(static_cast<std::size_t>(groups_) * n_max_ * n_max_);
  ParticleId id_base = 0;
  for (std::size_t b = 0; b < examples_.size(); ++b) {
    const BodySetup body(comm, scene, b, densities_.at(material_index(scene, scene.bodies[b].material)));
    const auto nv = static_cast<std::size_t>(body.vertices());
    if (id_base + nv > static_cast<ParticleId>(INT32_MAX))
      throw Error(
          fmt::format("{}: shape_matching meshes have at most 2^31 - 1 vertices in all", scene.source_path));
    const int n = body.examples();
    const auto first = static_cast<std::size_t>(body.shape.first),
               last = static_cast<std::size_t>(body.shape.last);
    const std::size_t at = ps.size();
    ps.resize(at + (last - first));
    std::fill_n(ps.int32("material") + at, last - first, material_index(scene, scene.bodies[b].material));
    Local local{b, at, last - first, {}};
    for (std::size_t v = first; v < last; ++v) {
      const std::vector<Real> lifted = seed_vertex(body, b, v, id_base, ps, at + v - first);
      local.lifted.insert(local.lifted.end(), lifted.begin(), lifted.end());
      const int g = ps.int32("group")[at + v - first];
      if (g < 0) continue;
      // P7: this region's terms of its group's Gram matrix L_G^T L_G.
      for (int k = 0; k < n; ++k)
        for (int e = 0; e < n; ++e) {
          Real dot = 0;
          for (int c = 0; c < 6; ++c) dot += lifted[6 * k + c] * lifted[6 * e + c];
          gram_terms[(static_cast<std::size_t>(g) * n_max_ + k) * n_max_ + e].push_back(dot);
        }
    }
    locals.push_back(std::move(local));
    id_base += nv;
  }
  // P7: P_G = (L_G^T L_G)^+ L_G^T per group, each region keeping its n × 6 block (with the A4
  // scale folded in, so that a step multiplies the plain descriptor); per-region groups alone.
  const std::vector<double> gram = groups_ > 0 ? reproducible_sums(comm, gram_terms) : std::vector<double>{};
  std::vector<MatX> group_pinv(groups_);
  for (int g = 0; g < groups_; ++g) {
    MatX G(n_max_, n_max_);
    for (int k = 0; k < n_max_; ++k)
      for (int e = 0; e < n_max_; ++e)
        G(k, e) = gram[(static_cast<std::size_t>(g) * n_max_ + k) * n_max_ + e];
    group_pinv[g] = gram_pinv(G);  // zero rows and columns beyond the body's examples stay zero
  }
  const std::array<Real, 6> scale = descriptor_scale(settings_);
  Real* projection = ps.real("projection");
  const std::int32_t* group = ps.int32("group");
  for (const Local& local : locals) {
    const int n = examples_[local.body];
    for (std::size_t i = 0; i < local.count; ++i) {
      const std::size_t p = local.first + i;
      std::fill_n(&projection[components_ * p], components_, 0.0);
      if (n == 0) continue;
      const Eigen::Map<const MatX> lifted(&local.lifted[6 * n * i], 6, n);
      MatX pinv;
      if (group[p] >= 0)
        pinv = group_pinv[group[p]].topLeftCorner(n, n);
      else
        pinv = gram_pinv(lifted.transpose() * lifted);
      const MatX rows = pinv * lifted.transpose();  // n × 6
      for (int k = 0; k < n; ++k)
        for (int c6 = 0; c6 < 6; ++c6) projection[components_ * p + 6 * k + c6] = rows(k, c6) * scale[c6];
    }
  }
}

}  // namespace nendo
