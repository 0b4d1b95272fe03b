#include "methods/shape_matching/ShapeMatching.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/Mpi.hpp"
#include "core/ReproducibleSum.hpp"
#include "methods/shape_matching/ExampleProjection.hpp"
#include "methods/shape_matching/RegionPolar.hpp"

namespace nendo {
namespace {

using shape_matching::Mat3;
using RowMat3 = Eigen::Matrix<Real, 3, 3, Eigen::RowMajor>;

enum Stage { kHalo, kFit, kProject, kExchange, kIntegrate, kMigrate };

// Vertices never need a new layout for having moved (gather_local): the spine's own migrations
// (the first step's, re-balancing, restarts) are the only ones.
constexpr Real kKeptLayoutSlack = std::numeric_limits<Real>::infinity();

}  // namespace

ShapeMatching::ShapeMatching(const Scene& scene)
    : settings_(scene.sections.get<ShapeMatchingSettings>()),
      gravity_(scene.gravity),
      colliders_(scene.colliders, 3),
      clock_({"halo", "fit", "projection", "exchange", "integrate", "migrate"}) {
  for (const auto& [name, material] : scene.materials) densities_.push_back(material.params.at("density"));
  for (const BodySettings& body : scene.bodies)
    examples_.push_back(static_cast<int>(body.method_keys.get<ShapeMatchingBody>().examples.size()));
  n_max_ = *std::max_element(examples_.begin(), examples_.end());
  if (n_max_ > 63) throw Error(scene.source_path + ": shape_matching takes at most 63 examples per body");
  components_ = 6 * std::max(1, n_max_);
  count_groups(scene);
  rotation_kind_ = settings_.rotation == "A" ? kFromA : settings_.rotation == "Apq" ? kFromApq : kMatched;
}

void ShapeMatching::count_groups(const Scene& scene) {
  for (const BodySettings& settings : scene.bodies) {
    const ShapeMatchingBody& body = settings.method_keys.get<ShapeMatchingBody>();
    if (body.groups == "per_region") {
      group_base_.push_back(-1);
      continue;
    }
    group_base_.push_back(groups_);
    groups_ += body.groups == "slabs" ? body.group_slabs : 1;
  }
}

void ShapeMatching::register_fields(ParticleSet& particles) const {
  particles.add_field("mass", FieldType::Real, 1);
  particles.add_field("material", FieldType::Int32, 1);
  particles.add_field("body", FieldType::Int32, 1);
  particles.add_field("rest", FieldType::Real, 3);           // x_i^0
  particles.add_field("mass_share", FieldType::Real, 1);     // m̃_i = m_i / |ℜ_i|
  particles.add_field("fixed", FieldType::Int32, 1);         // held in place (spec A10)
  particles.add_field("group", FieldType::Int32, 1);         // −1: the region is its own group
  particles.add_field("rest_centroid", FieldType::Real, 3);  // c_r^0 of the region centred here
  particles.add_field("aqq_inv", FieldType::Real, 9);        // (Σ m̃ q q^T)^-1, row-major
  // N_r in id order, −1 after: ids as 32-bit numbers (meshes of up to 2^31 − 1 vertices in all).
  particles.add_field("ring", FieldType::Int32, settings_.max_ring);
  // vec6(S_r^k − I) of each example, and the region's n × 6 block of the projection P_G (Eq. 7).
  particles.add_field("example_stretch", FieldType::Real, components_);
  particles.add_field("projection", FieldType::Real, components_);
  particles.add_field("weights", FieldType::Real, std::max(1, n_max_) + 1);  // W' of the last step
  particles.add_field("stretch", FieldType::Real, 6);  // d_r = vec6(S_r − I) of the last step
  // The last step's rotations as unit quaternions (w, x, y, z), where this step's polar
  // decompositions start (RegionPolar.hpp, polar_from): R_r of the goals, and for the matched
  // rotation with examples also the rotation of A_r that gives S_r.
  particles.add_field("rotation", FieldType::Real, 4);
  if (fits_rotation()) particles.add_field("fit_rotation", FieldType::Real, 4);
}

// A step reads of the halo copies only what gather_local gathers (and their ids).
void ShapeMatching::initialize(Space& space) {
  space.set_halo_fields({"rest", "rest_centroid", "mass_share"});
}
void ShapeMatching::restore(Space& space, const StateRecord& /*state*/) { initialize(space); }

GlobalDiagnostics ShapeMatching::diagnostics(const Space& space) const { return particle_diagnostics(space); }

void ShapeMatching::advance(Space& space, Real t, Real dt) {
  clock_.time(kHalo, [&] {
    gather_local(space);
    build_rings(space);
  });
  clock_.time(kFit, [&] {
    fit_regions(space);
    check_reach(space);
  });
  clock_.time(kProject, [&] { project(space); });
  clock_.time(kExchange, [&] {
    space.halo().update_values(frames_.data(), kFrame, frames_.data() + kFrame * view_.owned());
  });
  clock_.time(kIntegrate, [&] { integrate(space, t, dt); });
  clock_.time(kMigrate, [&] { space.migrate_if_moved(kKeptLayoutSlack); });
}

// ---------------------------------------------------------------------------------------------
// The combined view: owned particles, then the halo copies.
//
// A layout (owners, order, halo copies) is kept however far vertices move (advance:
// Space::migrate_if_moved with kKeptLayoutSlack): region members stay in it, because the halo
// keeps the same copies and the rings are fixed, and so do the vertex counts per rank, on which
// the work depends (not on where the vertices are). Only positions change, so only they are sent
// to the copies; the rest data stays from the layout's halo build. Whatever the layout,
// check_reach stops a run at the first step where a member is a cell or more from its region, as
// with a migration every step, so that every new layout (re-balance, restart) finds every member.

void ShapeMatching::gather_local(Space& space) {
  if (space.layout_version() == layout_) {
    space.halo().update(space.particles(), {"position"});
    view_.gather("position", x_);
    kept_layout_ = true;
    return;
  }
  layout_ = space.layout_version();
  kept_layout_ = false;
  view_.assign(space.particles(), space.halo().particles());
  view_.gather("position", x_);
  view_.gather("rest", rest_);
  view_.gather("rest_centroid", centroid0_);
  view_.gather("mass_share", share_);
  frames_.resize(kFrame * view_.size());
}

// Members of each owned region as combined indices, in the ring's id order. Particles keep their
// order from step to step unless they changed blocks, so the lookups are usually skipped. Members
// that are not here are counted in beyond_ (see check_reach).
void ShapeMatching::build_rings(const Space& space) {
  beyond_ = 0;
  if (kept_layout_) return;
  // The same ids may be split differently into owned and halo (after a re-balance): compare both.
  if (view_.ids() == ring_built_for_ && view_.owned() == ring_built_own_) return;
  const std::int32_t* ring = space.particles().int32("ring");
  const int capacity = settings_.max_ring;
  ring_offset_.assign(1, 0);
  ring_member_.clear();
  for (std::size_t r = 0; r < view_.owned(); ++r) {
    for (int k = 0; k < capacity && ring[capacity * r + k] >= 0; ++k) {
      const std::uint32_t c = view_.find(static_cast<ParticleId>(ring[capacity * r + k]));
      if (c == IdIndex::kAbsent)
        ++beyond_;
      else
        ring_member_.push_back(c);
    }
    ring_offset_.push_back(static_cast<std::uint32_t>(ring_member_.size()));
  }
  ring_built_for_ = beyond_ == 0 ? view_.ids() : std::vector<ParticleId>{};
  ring_built_own_ = view_.owned();
}

// The halo holds every particle within one cell of the owned blocks, so a member is certain to be
// found only while it is less than grid.dx from its region's centre on every axis. A member
// farther than that (counted by fit_regions) or missing stops every rank, whether or not this
// partition happened to find it, so that a run fails or succeeds alike on any rank count.
void ShapeMatching::check_reach(const Space& space) {
  MPI_Allreduce(MPI_IN_PLACE, &beyond_, 1, MPI_LONG, MPI_SUM, space.comm());
  if (beyond_ > 0)
    throw Error("shape_matching: " + std::to_string(beyond_) +
                " region members are a cell (grid.dx) or more from their region's centre: mesh edges "
                "stretched beyond the particle halo's reach; raise grid.dx");
}

// Eq. (1) and the polar decomposition A_r = R_r S_r (spec §6 lines 1-6).
void ShapeMatching::fit_regions(Space& space) {
  const Real* aqq_inv = space.particles().real("aqq_inv");
  Real* descriptor = space.particles().real("stretch");
  const std::int32_t* body = space.particles().int32("body");
  const Real reach = space.geometry().dx;
  Real* last_rotation = space.particles().real("rotation");
  Real* fit_rotation = fits_rotation() ? space.particles().real("fit_rotation") : nullptr;
  rotation_.resize(9 * view_.owned());
  for (std::size_t r = 0; r < view_.owned(); ++r) {
    const std::uint32_t* member = &ring_member_[ring_offset_[r]];
    const std::size_t count = ring_offset_[r + 1] - ring_offset_[r];
    Real mass = 0, c[3] = {0, 0, 0};
    for (std::size_t k = 0; k < count; ++k) {
      const std::uint32_t j = member[k];
      mass += share_[j];
      for (int a = 0; a < 3; ++a) c[a] += share_[j] * x_[3 * j + a];
      const Real d = std::max({std::fabs(x_[3 * j] - x_[3 * r]), std::fabs(x_[3 * j + 1] - x_[3 * r + 1]),
                               std::fabs(x_[3 * j + 2] - x_[3 * r + 2])});
      beyond_ += !(d < reach);
    }
    for (int a = 0; a < 3; ++a) c[a] /= mass;
    const Real* c0 = &centroid0_[3 * r];
    Mat3 apq = Mat3::Zero();
    for (std::size_t k = 0; k < count; ++k) {
      const std::uint32_t j = member[k];
      const Real p[3] = {x_[3 * j] - c[0], x_[3 * j + 1] - c[1], x_[3 * j + 2] - c[2]};
      const Real q[3] = {rest_[3 * j] - c0[0], rest_[3 * j + 1] - c0[1], rest_[3 * j + 2] - c0[2]};
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) apq(a, b) += share_[j] * p[a] * q[b];
    }
    const Mat3 A = apq * Eigen::Map<const RowMat3>(aqq_inv + 9 * r);
    if (rotation_kind_ == kMatched) {
      // R_r waits for S̃_r (project); S_r is only needed to project onto examples.
      Eigen::Map<RowMat3>{&rotation_[9 * r]} = apq;
      if (examples_[body[r]] > 0)
        shape_matching::vec6(shape_matching::polar_from(A, fit_rotation + 4 * r).S - Mat3::Identity(),
                             descriptor + 6 * r);
      else
        std::fill_n(descriptor + 6 * r, 6, 0.0);
    } else {
      shape_matching::Polar polar;
      if (rotation_kind_ == kFromApq) {
        polar.R = shape_matching::rotation_from(apq, last_rotation + 4 * r);
        polar.S = 0.5 * (polar.R.transpose() * A + A.transpose() * polar.R);
      } else {
        polar = shape_matching::polar_from(A, last_rotation + 4 * r);
      }
      Eigen::Map<RowMat3>{&rotation_[9 * r]} = polar.R;
      shape_matching::vec6(polar.S - Mat3::Identity(), descriptor + 6 * r);
    }
    std::copy_n(c, 3, &frames_[kFrame * r + 9]);
  }
}

// Eq. (7) per group, the weight rules of §4.3, S̃_r and T_r = R_r S̃_r (spec §6 lines 7-14).
void ShapeMatching::project(Space& space) {
  ParticleSet& ps = space.particles();
  const std::int32_t* group = ps.int32("group");
  const std::int32_t* body = ps.int32("body");
  const Real* projection = ps.real("projection");
  const Real* stretch = ps.real("example_stretch");
  Real* weights = ps.real("weights");
  const int wc = ps.field("weights").components();
  const Real* descriptor = ps.real("stretch");
  Real* last_rotation = ps.real("rotation");
  auto least_squares = [&](std::size_t r, int n, Real* w) {  // P_r d_r
    for (int k = 0; k < n; ++k) {
      w[k] = 0;
      for (int c = 0; c < 6; ++c) w[k] += projection[components_ * r + 6 * k + c] * descriptor[6 * r + c];
    }
  };
  std::vector<double> group_w;
  if (groups_ > 0) {
    terms_.resize(static_cast<std::size_t>(groups_) * n_max_);
    for (auto& column : terms_) column.clear();
    Real w[64];
    for (std::size_t r = 0; r < view_.owned(); ++r) {
      if (group[r] < 0) continue;
      const int n = examples_[body[r]];
      least_squares(r, n, w);
      for (int k = 0; k < n; ++k) terms_[group[r] * n_max_ + k].push_back(w[k]);
    }
    group_w = reproducible_sums(space.comm(), terms_);
  }
  for (std::size_t r = 0; r < view_.owned(); ++r) {
    const int n = examples_[body[r]];
    Real w[64], W[65];
    if (group[r] >= 0)
      std::copy_n(group_w.data() + group[r] * n_max_, n, w);  // empty without examples
    else
      least_squares(r, n, w);
    shape_matching::example_weights(w, n, settings_.beta, W);
    std::fill_n(weights + wc * r, wc, 0.0);
    std::copy_n(W, n + 1, weights + wc * r);
    const Mat3 target = shape_matching::stretch_from(W + 1, stretch + components_ * r, n);  // S̃_r
    const Eigen::Map<const RowMat3> stored(&rotation_[9 * r]);
    // matched: the rotation that best fits the distorted rest shape S̃_r q to the current positions,
    // polar(A_pq S̃_r); with S̃_r = I it is Müller's R. Its goals exert no torque on the region.
    const Mat3 R = rotation_kind_ == kMatched
                       ? shape_matching::rotation_from(stored * target, last_rotation + 4 * r)
                       : Mat3(stored);
    Eigen::Map<RowMat3>{&frames_[kFrame * r]} = R * target;
  }
}

// The averaged goal (Eq. 3), Eqs. (4)-(5) and the collisions (spec §6 lines 15-22).
void ShapeMatching::integrate(Space& space, Real t, Real dt) {
  ParticleSet& ps = space.particles();
  Real* x = ps.positions();
  Real* v = ps.real("velocity");
  const std::int32_t* fixed = ps.int32("fixed");
  const Real alpha = settings_.alpha, keep = 1 - settings_.damping;
  for (std::size_t i = 0; i < view_.owned(); ++i) {
    if (fixed[i]) {
      std::fill_n(v + 3 * i, 3, 0.0);
      continue;
    }
    Real g[3] = {0, 0, 0};
    const std::size_t begin = ring_offset_[i], end = ring_offset_[i + 1];
    for (std::size_t k = begin; k < end; ++k) {
      const std::uint32_t r = ring_member_[k];
      const Real* T = &frames_[kFrame * r];
      const Real q[3] = {rest_[3 * i] - centroid0_[3 * r], rest_[3 * i + 1] - centroid0_[3 * r + 1],
                         rest_[3 * i + 2] - centroid0_[3 * r + 2]};
      for (int a = 0; a < 3; ++a)
        g[a] += T[3 * a] * q[0] + T[3 * a + 1] * q[1] + T[3 * a + 2] * q[2] + T[9 + a];
    }
    const Real inv = Real(1) / static_cast<Real>(end - begin);
    for (int a = 0; a < 3; ++a) {
      Real& va = v[3 * i + a];
      va = keep * (va + alpha * (g[a] * inv - x[3 * i + a]) / dt + dt * gravity_[a]);
      x[3 * i + a] += dt * va;
    }
    collide(x + 3 * i, v + 3 * i, t + dt);
  }
}

// Spec §9 A8: out of every collider, the velocity by the collider's boundary rule (separate with
// Coulomb friction is the spec's default).
void ShapeMatching::collide(Real* x, Real* v, Real t) const {
  for (std::size_t o = 0; o < colliders_.size(); ++o) {
    const Collider& collider = colliders_[o];
    const Real phi = collider.phi<3>(x, t);
    if (phi > 0) continue;
    Real n[3];
    collider.normal<3>(x, t, n);
    collider.project<3>(x, v, t);
    for (int a = 0; a < 3; ++a) x[a] -= phi * n[a];
  }
}

}  // namespace nendo
