// The precomputation of spec 001 §5 (P1-P7): meshes and examples, lumped masses, 1-rings, each
// region's rest data and example stretches, and the projections of the groups. Rank 0 meshes the
// bodies and makes the examples, every rank receives them and sets up its share of the vertices
// (vertex indices [rN/P, (r+1)N/P) of each body, as the particle seeder splits lattices); the
// group Gram matrices L_G^T L_G are summed over ranks as integers, so the setup, like the steps,
// does not depend on the rank count.
#include <fmt/format.h>

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <climits>
#include <cmath>

#include "bodies/BodySeeder.hpp"
#include "bodies/TetMesher.hpp"
#include "core/Mpi.hpp"
#include "core/ReproducibleSum.hpp"
#include "methods/shape_matching/ExampleProjection.hpp"
#include "methods/shape_matching/ExampleShapes.hpp"
#include "methods/shape_matching/RegionPolar.hpp"
#include "methods/shape_matching/ShapeMatching.hpp"

namespace nendo {
namespace {

using shape_matching::Mat3;
using RowMat3 = Eigen::Matrix<Real, 3, 3, Eigen::RowMajor>;
using MatX = Eigen::Matrix<Real, Eigen::Dynamic, Eigen::Dynamic>;

// A body's mesh and examples, the same on every rank.
struct BodyMesh {
  TetMesh mesh;
  std::vector<std::vector<Real>> examples;  // x^1..x^n
};

template <class T>
void broadcast(MPI_Comm comm, std::vector<T>& values) {
  std::uint64_t count = values.size();
  MPI_Bcast(&count, 1, MPI_UINT64_T, 0, comm);
  values.resize(count);
  auto* bytes = reinterpret_cast<unsigned char*>(values.data());
  const std::size_t total = count * sizeof(T);
  for (std::size_t at = 0; at < total; at += INT_MAX / 2)
    MPI_Bcast(bytes + at, static_cast<int>(std::min<std::size_t>(INT_MAX / 2, total - at)), MPI_BYTE, 0,
              comm);
}

// P1: meshed (or read) on rank 0 and sent to every rank; an error there stops every rank.
BodyMesh load_body(MPI_Comm comm, const BodySettings& body, Real spacing) {
  BodyMesh b;
  std::string error;
  if (mpi::rank(comm) == 0) try {
      b.mesh = body_tet_mesh(body, spacing);
      for (const ExampleSettings& example : body.examples)
        b.examples.push_back(example_shape(example, b.mesh));
    } catch (const Error& e) {
      error = e.what();
    }
  std::vector<char> text(error.begin(), error.end());
  broadcast(comm, text);
  if (!text.empty()) throw Error(std::string(text.begin(), text.end()));
  broadcast(comm, b.mesh.vertices);
  broadcast(comm, b.mesh.tets);
  b.examples.resize(body.examples.size());
  for (auto& x : b.examples) broadcast(comm, x);
  return b;
}

// P3: N_r = {r} ∪ 1-ring(r) of every vertex, sorted (CSR).
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

Real longest_edge(const TetMesh& mesh) {
  Real longest = 0;
  for (std::size_t t = 0; t < mesh.tet_count(); ++t)
    for (int a = 0; a < 4; ++a)
      for (int b = a + 1; b < 4; ++b) {
        const Real *p = mesh.vertex(mesh.tets[4 * t + a]), *q = mesh.vertex(mesh.tets[4 * t + b]);
        longest = std::max(longest, std::hypot(p[0] - q[0], p[1] - q[1], p[2] - q[2]));
      }
  return longest;
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

}  // namespace

void ShapeMatching::seed(MPI_Comm comm, const Scene& scene, ParticleSet& ps) {
  const int rank = mpi::rank(comm), ranks = mpi::size(comm);
  const int capacity = settings_.max_ring;
  const std::array<Real, 6> scale = descriptor_scale(settings_);
  // What this rank's vertices of every body need before the groups' projections are known.
  struct Local {
    std::size_t body, first, count;
    ParticleId id_base;
    std::vector<Real> lifted;  // L'_r = diag(scale) (vec6(S^k_r − I)), 6 × n per vertex
  };
  std::vector<Local> locals;
  std::vector<std::vector<double>> gram_terms(static_cast<std::size_t>(groups_) * n_max_ * n_max_);
  ParticleId id_base = 0;
  for (std::size_t b = 0; b < bodies_.size(); ++b) {
    const BodySettings& body = bodies_[b];
    const BodyMesh bm = load_body(comm, body, scene.grid.dx / body.particles_per_cell);
    const TetMesh& mesh = bm.mesh;
    const std::size_t nv = mesh.vertex_count();
    const int n = static_cast<int>(bm.examples.size());
    const Real edge = longest_edge(mesh);
    if (scene.grid.dx < 1.2 * edge)
      throw Error(
          fmt::format("{}: bodies[{}]: its mesh has edges up to {:.4g} m, but grid.dx = {:.4g} m must exceed "
                      "1.2 times that (the particle halo is one cell: every region member must be "
                      "in it); raise grid.dx or particles_per_cell",
                      scene.source_path, b, edge, scene.grid.dx));
    if (id_base + nv > static_cast<ParticleId>(INT32_MAX))
      throw Error(
          fmt::format("{}: shape_matching meshes have at most 2^31 - 1 vertices in all", scene.source_path));
    const Rings rings = rings_of(mesh);
    // P2: lumped masses; m̃_i = m_i / |ℜ_i| with ℜ_i = N_i for 1-rings (A1).
    const Real density = densities_.at(material_index(scene, body.material));
    std::vector<Real> mass(nv, 0.0), share(nv);
    for (std::size_t t = 0; t < mesh.tet_count(); ++t)
      for (int a = 0; a < 4; ++a) mass[mesh.tets[4 * t + a]] += density * std::fabs(mesh.volume(t)) / 4;
    for (std::size_t v = 0; v < nv; ++v) share[v] = mass[v] / static_cast<Real>(rings.size(v));
    // Group of each region (P6): slabs of the rest bounding box along group_axis.
    Real lo = INFINITY, hi = -INFINITY;
    for (std::size_t v = 0; v < nv; ++v)
      lo = std::min(lo, mesh.vertex(v)[body.group_axis]), hi = std::max(hi, mesh.vertex(v)[body.group_axis]);
    auto group_of = [&](std::size_t v) {
      if (group_base_[b] < 0) return -1;
      if (body.groups != "slabs") return group_base_[b];
      const int slab =
          static_cast<int>((mesh.vertex(v)[body.group_axis] - lo) / (hi - lo) * body.group_slabs);
      return group_base_[b] + std::clamp(slab, 0, body.group_slabs - 1);
    };

    const std::size_t first = nv * rank / ranks, last = nv * (rank + 1) / ranks;
    const std::size_t at = ps.size();
    ps.resize(at + (last - first));
    Real* x = ps.positions();
    Real *velocity = ps.real("velocity"), *pmass = ps.real("mass"), *volume = ps.real("volume");
    Real *rest = ps.real("rest"), *pshare = ps.real("mass_share"), *c0 = ps.real("rest_centroid");
    Real *aqq_inv = ps.real("aqq_inv"), *stretch = ps.real("example_stretch");
    std::int32_t *material = ps.int32("material"), *pbody = ps.int32("body"), *fixed = ps.int32("fixed");
    std::int32_t* group = ps.int32("group");
    ParticleId* ids = ps.ids();
    std::int32_t* ring = ps.int32("ring");
    Local local{b, at, last - first, id_base, std::vector<Real>(6 * n * (last - first))};
    for (std::size_t v = first; v < last; ++v) {
      const std::size_t p = at + v - first;
      const std::int32_t* member = &rings.member[rings.offset[v]];
      const std::size_t count = rings.size(v);
      if (count > static_cast<std::size_t>(capacity))
        throw Error(
            fmt::format("{}: bodies[{}]: vertex {} has {} vertices in its region, more than "
                        "shape_matching.max_ring = {}",
                        scene.source_path, b, v, count, capacity));
      ids[p] = id_base + v;
      const Real* start =
          body.initial_example > 0 ? &bm.examples[body.initial_example - 1][3 * v] : mesh.vertex(v);
      for (int a = 0; a < 3; ++a) x[3 * p + a] = start[a], rest[3 * p + a] = mesh.vertex(v)[a];
      for (int a = 0; a < 3; ++a) velocity[3 * p + a] = body.velocity[a];
      pmass[p] = mass[v], volume[p] = mass[v] / density, pshare[p] = share[v];
      material[p] = material_index(scene, body.material), pbody[p] = static_cast<std::int32_t>(b);
      group[p] = group_of(v);
      fixed[p] = 0;
      if (body.fixed) {
        fixed[p] = 1;
        for (int a = 0; a < 3; ++a)
          if (mesh.vertex(v)[a] < body.fixed_min[a] || mesh.vertex(v)[a] > body.fixed_max[a]) fixed[p] = 0;
      }
      for (int k = 0; k < capacity; ++k)
        ring[capacity * p + k] =
            k < static_cast<int>(count) ? static_cast<std::int32_t>(id_base + member[k]) : -1;
      // P4: c_r^0, A_qq^-1 (A11: refuse ill-conditioned regions).
      Real m = 0, c[3] = {0, 0, 0};
      for (std::size_t k = 0; k < count; ++k) {
        m += share[member[k]];
        for (int a = 0; a < 3; ++a) c[a] += share[member[k]] * mesh.vertex(member[k])[a];
      }
      for (int a = 0; a < 3; ++a) c0[3 * p + a] = c[a] / m;
      auto moment = [&](const Real* xs, const Real* centre) {  // Σ m̃ (x_j − centre) q_j^T
        Mat3 s = Mat3::Zero();
        for (std::size_t k = 0; k < count; ++k) {
          const std::size_t j = member[k];
          const Real* q0 = mesh.vertex(j);
          for (int a = 0; a < 3; ++a)
            for (int bb = 0; bb < 3; ++bb)
              s(a, bb) += share[j] * (xs[3 * j + a] - centre[a]) * (q0[bb] - c0[3 * p + bb]);
        }
        return s;
      };
      const Mat3 aqq = moment(mesh.vertices.data(), &c0[3 * p]);
      const Eigen::Vector3d lambda = Eigen::SelfAdjointEigenSolver<Mat3>(aqq).eigenvalues();
      if (!(lambda[0] > 1e-8 * lambda[2]))
        throw Error(
            fmt::format("{}: bodies[{}]: the region of vertex {} is degenerate (cond(A_qq) = {:.3g} "
                        "> 1e8, spec A11): its vertices are nearly coplanar",
                        scene.source_path, b, v, lambda[2] / lambda[0]));
      const Mat3 inverse = aqq.inverse();
      Eigen::Map<RowMat3>{&aqq_inv[9 * p]} = inverse;
      // P5: S_r^k of every example, stored as vec6(S_r^k − I).
      std::fill_n(&stretch[components_ * p], components_, 0.0);
      for (int e = 0; e < n; ++e) {
        const Real* xe = bm.examples[e].data();
        Real ce[3] = {0, 0, 0};
        for (std::size_t k = 0; k < count; ++k)
          for (int a = 0; a < 3; ++a) ce[a] += share[member[k]] * xe[3 * member[k] + a];
        for (int a = 0; a < 3; ++a) ce[a] /= m;
        const Mat3 apq = moment(xe, ce);
        const Mat3 A = apq * inverse;
        if (!(A.determinant() > 0))
          throw Error(fmt::format("{}: bodies[{}]: example {} inverts the region of vertex {}",
                                  scene.source_path, b, e + 1, v));
        const Mat3 S = shape_matching::region_polar(A, apq, settings_.rotation == "Apq").S;
        Real* d = &stretch[components_ * p + 6 * e];
        shape_matching::vec6(S - Mat3::Identity(), d);
        for (int c6 = 0; c6 < 6; ++c6) local.lifted[6 * n * (v - first) + 6 * e + c6] = scale[c6] * d[c6];
      }
      // P7: this region's terms of its group's Gram matrix L_G^T L_G.
      if (group[p] >= 0) {
        const Real* l = &local.lifted[6 * n * (v - first)];
        for (int k = 0; k < n; ++k)
          for (int e = 0; e < n; ++e) {
            Real dot = 0;
            for (int c6 = 0; c6 < 6; ++c6) dot += l[6 * k + c6] * l[6 * e + c6];
            gram_terms[(static_cast<std::size_t>(group[p]) * n_max_ + k) * n_max_ + e].push_back(dot);
          }
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
  Real* projection = ps.real("projection");
  const std::int32_t* group = ps.int32("group");
  for (const Local& local : locals) {
    const int n = static_cast<int>(bodies_[local.body].examples.size());
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
