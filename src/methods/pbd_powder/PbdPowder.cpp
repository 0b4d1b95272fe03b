#include "methods/pbd_powder/PbdPowder.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "bodies/BodySeeder.hpp"
#include "core/Error.hpp"
#include "core/Mpi.hpp"
#include "core/ReproducibleSum.hpp"

namespace nendo {
namespace {

enum Stage { kEmit, kNeighbours, kConstraints, kVelocities, kHalo, kTransitions };

Real norm3(const Real* a) { return std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]); }

}  // namespace

PbdPowder::PbdPowder(const Scene& scene)
    : settings_(scene.sections.get<PbdPowderSettings>()),
      dimension_(scene.dimension),
      gravity_(scene.gravity),
      radius_(0.5 * scene.sections.get<PbdPowderSettings>().spacing),
      kernel_(
          scene.sections.get<PbdPowderSettings>().support * scene.sections.get<PbdPowderSettings>().spacing,
          scene.dimension),
      reference_(
          pbd::lattice_reference(kernel_, scene.sections.get<PbdPowderSettings>().spacing, scene.dimension)),
      colliders_(scene.colliders, scene.dimension),
      clock_({"emit", "neighbours", "constraints", "velocities", "halo", "transitions"}) {
  const Real spacing = settings_.spacing, h = kernel_.h();
  speed_threshold_ = settings_.speed_factor * std::sqrt(norm3(gravity_.data()) * h);  // §5.5
  params_.kernel = kernel_;
  params_.rest_density = reference_.rest_density;
  params_.epsilon = settings_.relaxation * reference_.denominator;
  params_.rest_distance = settings_.rest_distance == "contact" ? spacing : reference_.mean_distance;
  params_.unilateral = settings_.unilateral;
  params_.contact_distance = settings_.contact ? spacing : 0;
  pairs_mode_ = settings_.rest_constraint == "pairs";
  rule_.density_rate = settings_.density_rate;
  rule_.magnitude = settings_.density_change == "magnitude";
  rule_.speed = speed_threshold_;
  rule_.rest_when = settings_.rest_when == "above"   ? pbd::RestWhen::kAbove
                    : settings_.rest_when == "below" ? pbd::RestWhen::kBelow
                                                     : pbd::RestWhen::kStopped;
  rule_.friction = settings_.friction;
  rule_.gravity = norm3(gravity_.data());
  // Macklin and Müller 2013: k = 0.1, n = 4, |Δq| = 0.2 h. With m = 1, λ has units (λ = −F/D,
  // D ~ D_0); k is a constraint value (dimensionless), so it enters next to λ as k / D_0.
  if (settings_.scorr) {
    params_.scorr_k = 0.1 / reference_.denominator;
    params_.scorr_inverse_w = 1 / kernel_.w(0.04 * h * h);
  }
  for (const auto& [name, material] : scene.materials)
    material_mass_.push_back(material.params.at("density") * std::pow(spacing, dimension_));
  const auto& emitters = scene.sections.get<std::vector<EmitterSettings>>();
  for (std::size_t e = 0; e < emitters.size(); ++e) {
    emitters_.emplace_back(emitters[e], static_cast<int>(e), spacing, dimension_);
    emitter_material_.push_back(material_index(scene, emitters[e].material));
  }
}

void PbdPowder::register_fields(ParticleSet& particles) const {
  particles.add_field("mass", FieldType::Real,
                      1);  // density Δx^D: diagnostics only (the constraints use m = 1)
  particles.add_field("material", FieldType::Int32, 1);
  particles.add_field("state", FieldType::Int32, 1);    // kFlow or kRest
  particles.add_field("changed", FieldType::Int32, 1);  // frames since the last state change
  particles.add_field("density", FieldType::Real, 1);   // ρ/ρ_0 at the end of the last frame; −1 before
  if (measures_support())  // Σ over the frame's substeps of the support push / Δt_s (transient)
    particles.add_field("support", FieldType::Real, dimension_);
  if (pairs_mode_) {  // ids of the resting neighbours held at fixed distances, kNoBond in free slots
    particles.add_field("bond", FieldType::UInt64, kMaxBonds);
    particles.add_field("bond_length", FieldType::Real, kMaxBonds);
  }
}

// Bodies are lattices of spacing Δx: the body seeder with a cell of Δx and one particle per cell.
void PbdPowder::seed(MPI_Comm comm, const Scene& scene, ParticleSet& particles) {
  Scene lattice = scene;
  lattice.grid.dx = settings_.spacing;
  for (BodySettings& body : lattice.bodies) body.particles_per_cell = 1;
  const std::size_t first = particles.size();
  seed_bodies(comm, lattice, particles);
  const std::int32_t state = settings_.initial_state == "rest" ? kRest : kFlow;
  for (std::size_t p = first; p < particles.size(); ++p) {
    particles.int32("state")[p] = state;
    particles.int32("changed")[p] = kNeverChanged;
    particles.real("density")[p] = -1;
    if (pairs_mode_) std::fill_n(particles.uint64("bond") + kMaxBonds * p, kMaxBonds, kNoBond);
  }
}

StateRecord PbdPowder::save_state() const {
  StateRecord state;
  std::vector<std::int64_t> emitted, last;
  for (const pbd::Emitter& e : emitters_) {
    emitted.push_back(static_cast<std::int64_t>(e.emitted));
    last.push_back(static_cast<std::int64_t>(e.last_count));
  }
  state.integers["emitted"] = emitted;
  state.integers["emitted_last"] = last;
  state.reals["list_step_move"] = {step_move_};
  return state;
}

void PbdPowder::restore(Space& /*space*/, const StateRecord& state) {
  const auto emitted = state.integers.find("emitted"), last = state.integers.find("emitted_last");
  if (emitted == state.integers.end() || last == state.integers.end() ||
      emitted->second.size() != emitters_.size() || last->second.size() != emitters_.size())
    throw Error("pbd_powder: the checkpoint's emitter progress does not match the scene's " +
                std::to_string(emitters_.size()) + " emitters");
  for (std::size_t e = 0; e < emitters_.size(); ++e) {
    emitters_[e].emitted = static_cast<std::uint64_t>(emitted->second[e]);
    emitters_[e].last_count = static_cast<std::uint64_t>(last->second[e]);
  }
  const auto step_move = state.reals.find("list_step_move");  // absent before issue 31
  step_move_ = step_move != state.reals.end() && step_move->second.size() == 1 ? step_move->second[0] : 0;
}

// ---------------------------------------------------------------------------------------------
// Emission (spec 003 §8): every rank makes the same lattice and keeps what falls in its blocks.

void PbdPowder::emit(Space& space, Real t, Real dt) {
  bool any = false;
  for (std::size_t e = 0; e < emitters_.size(); ++e) {
    pbd::Emitter& emitter = emitters_[e];
    const std::uint64_t count = emitter.due(t, dt);
    if (count == 0 || (emitter.is_disc() && emission_blocked(space, emitter))) continue;
    std::vector<Real> kept;  // positions (3 each) of the ones this rank owns
    std::vector<std::uint64_t> serials;
    for (std::size_t k = 0; k < count; ++k) {
      Real x[3];
      emitter.position(emitter.emitted, k, x);
      if (space.partition().owner(space.geometry().key_of(x)) != space.rank()) continue;
      kept.insert(kept.end(), x, x + 3);
      serials.push_back(emitter.emitted + k);
    }
    ParticleSet& ps = space.particles();
    const std::size_t first = ps.size();
    ps.resize(first + serials.size());
    const Real volume = std::pow(settings_.spacing, dimension_);
    for (std::size_t k = 0; k < serials.size(); ++k) {
      const std::size_t p = first + k;
      ps.ids()[p] = emitter.id(serials[k]);
      for (int a = 0; a < dimension_; ++a) {
        ps.positions()[dimension_ * p + a] = kept[3 * k + a];
        ps.real("velocity")[dimension_ * p + a] = emitter.settings().velocity[a];
      }
      ps.real("volume")[p] = volume;
      ps.real("mass")[p] = material_mass_[emitter_material_[e]];
      ps.int32("material")[p] = emitter_material_[e];
      ps.int32("state")[p] = kFlow;
      ps.int32("changed")[p] = kNeverChanged;
      ps.real("density")[p] = -1;
      if (pairs_mode_) std::fill_n(ps.uint64("bond") + kMaxBonds * p, kMaxBonds, kNoBond);
    }
    emitter.emitted += count;
    emitter.last_count = count;
    any = true;
  }
  if (any) space.migrate();  // the same on every rank: emission depends on t and the counters only
}

// §10 B12: a disc's next layer waits while the last one's centre is still within Δx/2 of the disc
// (the powder below has reached the emitter), so layers never spawn on top of each other. The
// centre, not the nearest particle: the two-sided density constraint draws a fresh layer into a
// ball within its first frame, which lifts some of its particles above the disc.
bool PbdPowder::emission_blocked(const Space& space, const pbd::Emitter& emitter) const {
  if (emitter.last_count == 0) return false;
  const Vec3& u = emitter.direction();
  if (u[0] == 0 && u[1] == 0 && u[2] == 0) return false;
  const ParticleId first = emitter.id(emitter.emitted - emitter.last_count),
                   end = emitter.id(emitter.emitted);
  const ParticleSet& ps = space.particles();
  std::vector<std::vector<Real>> terms(1);
  for (std::size_t p = 0; p < ps.size(); ++p) {
    if (ps.ids()[p] < first || ps.ids()[p] >= end) continue;
    Real along = 0;
    for (int a = 0; a < dimension_; ++a)
      along += (ps.positions()[dimension_ * p + a] - emitter.origin()[a]) * u[a];
    terms[0].push_back(along);
  }
  const Real progress = reproducible_sums(space.comm(), terms)[0] / static_cast<Real>(emitter.last_count);
  return progress < 0.5 * settings_.spacing;
}

// ---------------------------------------------------------------------------------------------
// The combined view (owned, then halo copies) and the neighbour lists.

void PbdPowder::gather(Space& space) {
  view_.assign(space.particles(), space.halo().particles());
  view_.gather("position", x_, 3);
  view_.gather("velocity", v_, 3);
  const std::int32_t* state = space.particles().int32("state");
  state_.assign(state, state + view_.owned());
}

// v += Δt_s g, clamped to 0.4 h/Δt_s (the cap that bounds a substep's motion), then p = x + Δt_s v:
// owned and halo copies alike, from the same bits.
void PbdPowder::predict(Real dt) {
  const Real cap = 0.4 * kernel_.h() / dt;
  p_.resize(3 * view_.size());
  for (std::size_t c = 0; c < view_.size(); ++c) {
    Real* v = &v_[3 * c];
    for (int a = 0; a < dimension_; ++a) v[a] += dt * gravity_[a];
    const Real speed = norm3(v);
    if (speed > cap)
      for (int a = 0; a < 3; ++a) v[a] *= cap / speed;
    for (int a = 0; a < 3; ++a) p_[3 * c + a] = x_[3 * c + a] + dt * v[a];
  }
}

// The exact neighbour lists at `at` (the predicted positions, or dt = 0 and the positions), from
// the Verlet lists, which are rebuilt first when stale: then the particles are migrated (unless the
// layout just changed) and the combined view gathered (and predicted) again, so that a list build
// always follows a layout. Collective.
void PbdPowder::neighbours_at(Space& space, std::vector<Real>& at, Real dt) {
  const Real moved = lists_moved(space, at);
  const bool worn = std::isfinite(moved) && moved > 0.5 * skin_;
  // Measured only where a run and its restart agree: not at a frame's start, which a restart sees
  // as a new layout.
  if (worn && !new_frame_ && uses_ > 0) step_move_ = moved / uses_;
  uses_ += dt > 0;
  if (worn || new_frame_ || !std::isfinite(moved)) {
    uses_ = dt > 0;
    if (space.layout_version() == verlet_layout_) {
      space.migrate();
      gather(space);
      if (dt > 0) predict(dt);
    }
    build_lists(space, at);
  }
  find_neighbours(at);
}

// How far the farthest particle anywhere is from where the lists were built (infinite when the
// layout changed): beyond skin/2 a pair within h might be missing. The same on every rank.
// Collective. The lists are also rebuilt at each frame's first substep: their rows are in (cell
// key, id) order at the build, so sums depend on when it was; a restart, which starts a frame,
// rebuilds there too.
Real PbdPowder::lists_moved(const Space& space, const std::vector<Real>& at) const {
  Real moved = 0;
  if (space.layout_version() != verlet_layout_ || built_at_.size() != 3 * view_.owned()) {
    moved = std::numeric_limits<Real>::infinity();
  } else {
    for (std::size_t i = 0; i < view_.owned(); ++i) {
      const Real d[3] = {at[3 * i] - built_at_[3 * i], at[3 * i + 1] - built_at_[3 * i + 1],
                         at[3 * i + 2] - built_at_[3 * i + 2]};
      moved = std::max(moved, d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, &moved, 1, mpi::datatype<Real>(), MPI_MAX, space.comm());
  return std::sqrt(moved);
}

// Right after a layout the halo holds every copy whose x is within one block cell of an owned
// particle's x. A pair within h + skin at `at`, each at most D from its x (D: the largest such
// displacement anywhere), is within h + skin + 2D at x: the skin is what the cell leaves, capped at
// kMaxSkin h (longer lists cost more to filter than the rebuilds they save).
void PbdPowder::build_lists(Space& space, const std::vector<Real>& at) {
  Real drift = 0;
  for (std::size_t i = 0; i < view_.owned(); ++i) {
    const Real d[3] = {at[3 * i] - x_[3 * i], at[3 * i + 1] - x_[3 * i + 1], at[3 * i + 2] - x_[3 * i + 2]};
    drift = std::max(drift, norm3(d));
  }
  MPI_Allreduce(MPI_IN_PLACE, &drift, 1, mpi::datatype<Real>(), MPI_MAX, space.comm());
  const Real h = kernel_.h();
  const Real room = std::clamp(space.geometry().dx - h - 2 * drift, Real(0), kMaxSkin * h);
  // A skin s lasts about s/2 per step_move_ substeps and makes a build cost (1 + s/h)³ ≈ 2.2
  // times one without (s = 0.3 h): worth it when it lasts 2 substeps or more (a falling stream
  // moves 0.4 h per substep, a compacting block 0.05 h). The skin sets the cell list's cells and
  // so the rows' order: step_move_ is kept in checkpoints.
  skin_ = step_move_ > 0 && room < 4 * step_move_ ? 0 : room;
  std::vector<std::uint32_t> rows(view_.owned()), candidates(view_.size());
  std::iota(rows.begin(), rows.end(), 0u);
  std::iota(candidates.begin(), candidates.end(), 0u);
  verlet_.build(at.data(), view_.ids().data(), rows, candidates, h + skin_, VerletList::Order::kCell);
  new_frame_ = false;
  built_at_.assign(at.begin(), at.begin() + 3 * view_.owned());
  if (pairs_mode_) find_bonds(space.particles());
  verlet_layout_ = space.layout_version();
  ++list_builds_;
}

// Each row's neighbours within h at `at` moved to the row's front, both parts keeping their order
// (a stable partition: the order follows from the frame's build and the positions since, the same
// on any rank count); near_end(r) marks the end of the part within h.
void PbdPowder::find_neighbours(const std::vector<Real>& at) {
  const Real h2 = kernel_.h2();
  near_count_.resize(verlet_.rows());
  for (std::size_t r = 0; r < verlet_.rows(); ++r) {
    const Real* xi = &at[3 * verlet_.row(r)];
    std::uint32_t* near = verlet_.begin(r);
    far_.clear();
    for (const std::uint32_t* k = verlet_.begin(r); k != verlet_.end(r); ++k) {
      const Real* xj = &at[3 * *k];
      const Real d[3] = {xi[0] - xj[0], xi[1] - xj[1], xi[2] - xj[2]};
      if (d[0] * d[0] + d[1] * d[1] + d[2] * d[2] < h2)
        *near++ = *k;
      else
        far_.push_back(*k);
    }
    near_count_[r] = static_cast<std::uint32_t>(near - verlet_.begin(r));
    std::copy(far_.begin(), far_.end(), near);
  }
}

// ---------------------------------------------------------------------------------------------
// One PBD substep (spec §6 lines 3-18).

void PbdPowder::substep(Space& space, Real t, Real dt) {
  clock_.time(kNeighbours, [&] {
    gather(space);
    predict(dt);
    neighbours_at(space, p_, dt);
    if (pairs_mode_) select_bonds();
  });
  clock_.time(kConstraints, [&] {
    project_constraints(space, t + dt, dt);
    if (measures_support() || settings_.friction > 0) measure_support(dt);
    if (settings_.friction > 0) particle_friction(space, t + dt, dt);
  });
  clock_.time(kVelocities, [&] {
    update_velocities(space, dt);
    if (settings_.xsph > 0 || settings_.vorticity > 0) viscosity_and_vorticity(space, dt);
  });
  // The layout is kept until the lists go stale (neighbours_at): the halo copies get the new
  // positions and velocities along the kept pattern.
  clock_.time(kHalo, [&] { space.halo().update(space.particles(), {"position", "velocity"}); });
}

// Lines 5-15: Jacobi rounds of λ (Eq. 4) and the rest constraint (Eqs. 5, 7), the corrections
// (Eqs. 3, 6) and the collisions, inside the iteration as in PBF's Algorithm 1.
void PbdPowder::project_constraints(Space& space, Real t, Real dt) {
  ParticleHalo& halo = space.halo();
  const std::size_t rows = verlet_.rows();
  weights_.assign(kWeights * view_.size(), 0.0);
  dp_.assign(3 * view_.owned(), 0.0);
  pushed_.assign(3 * view_.owned(), 0.0);
  for (int it = 0; it < settings_.iterations; ++it) {
    // λ_i, and the contact and bond counts that scale the pair corrections (kWeights per particle)
    for (std::size_t r = 0; r < rows; ++r) {
      const std::uint32_t i = verlet_.row(r);
      pbd::RestConstraint rest;
      const bool summed = state_[i] == kRest && !pairs_mode_;
      int contacts = 0;
      Real* weights = &weights_[kWeights * i];
      weights[0] = pbd::density_constraint(params_, p_.data(), i, near_begin(r), near_end(r),
                                           summed ? &rest : nullptr, &contacts)
                       .lambda;
      weights[1] = contacts;
      weights[2] = pairs_mode_ ? static_cast<Real>(active_offset_[i + 1] - active_offset_[i]) : 0;
      Real* dp = &dp_[3 * i];
      for (int a = 0; a < 3; ++a) dp[a] = summed ? rest.scale * rest.gradient[a] : 0;  // Eq. (6)
    }
    halo.update_values(weights_.data(), kWeights, weights_.data() + kWeights * view_.owned());
    for (std::size_t r = 0; r < rows; ++r) {
      const std::uint32_t i = verlet_.row(r);
      Real* dp = &dp_[3 * i];
      pbd::pair_corrections(params_, p_.data(), weights_.data(), kWeights, i, near_begin(r), near_end(r), dp);
      if (weights_[kWeights * i + 2] > 0) bond_correction(i, dp);
    }
    for (std::size_t i = 0; i < view_.owned(); ++i) {
      for (int a = 0; a < 3; ++a) p_[3 * i + a] += dp_[3 * i + a];
      collide(i, t, dt);
    }
    const bool last = it + 1 == settings_.iterations;
    if (!last || settings_.xsph > 0 || settings_.vorticity > 0 || settings_.friction > 0)
      halo.update_values(p_.data(), 3, p_.data() + 3 * view_.owned());
  }
}

// Keeps owned particle i at least r_p outside every collider (§10 B9), with Coulomb friction at
// the position level (Macklin et al. 2014 §6.1) rather than on the velocity after the substep: each
// push of depth δ removes up to μ δ of the substep's tangential displacement relative to the
// collider (all of it when that is less: static friction). Done inside the iterations, the
// constraints carry the friction of the particles in contact to those they hold, so a resting
// block sticks below arctan μ and slides above it at g (sin θ − μ cos θ). A box is one distance
// field: in its corners the push off the nearest face can leave the particle within r_p of the
// next, hence up to three pushes.
void PbdPowder::collide(std::size_t i, Real t, Real dt) {
  Real* p = &p_[3 * i];
  const Real* x = &x_[3 * i];
  for (std::size_t o = 0; o < colliders_.size(); ++o) {
    const Collider& collider = colliders_[o];
    for (int push = 0; push < 3; ++push) {
      const Real phi = dimension_ == 3 ? collider.phi<3>(p, t) : collider.phi<2>(p, t);
      if (phi >= radius_) break;
      Real n[3] = {0, 0, 0};
      if (dimension_ == 3)
        collider.normal<3>(p, t, n);
      else
        collider.normal<2>(p, t, n);
      const Real depth = radius_ - phi;
      for (int a = 0; a < 3; ++a) p[a] += depth * n[a], pushed_[3 * i + a] += depth * n[a];
      if (collider.boundary() == Boundary::Slip) continue;
      Real slide[3];
      for (int a = 0; a < 3; ++a) slide[a] = p[a] - x[a] - dt * collider.velocity()[a];
      const Real along = slide[0] * n[0] + slide[1] * n[1] + slide[2] * n[2];
      for (int a = 0; a < 3; ++a) slide[a] -= along * n[a];
      const Real length = norm3(slide);
      const Real limit = collider.boundary() == Boundary::Sticky ? length : collider.friction() * depth;
      const Real removed = length <= limit ? 1 : limit / length;
      for (int a = 0; a < 3; ++a) p[a] -= removed * slide[a];
    }
  }
}

// What held each owned particle up in this substep: the push its constraints and collisions gave
// it, p − (x + Δt_s v) with v the predicted velocity, before friction between particles.
void PbdPowder::measure_support(Real dt) {
  support_.resize(3 * view_.owned());
  for (std::size_t k = 0; k < 3 * view_.owned(); ++k) support_[k] = p_[k] - x_[k] - dt * v_[k];
}

// Coulomb friction between particles (an extension, issue 28; the paper's powder has "high
// inter-particle friction", §1), in the position-level form the collisions use (Macklin et al. 2014
// §6.1), per flowing particle against its neighbourhood: the particle's push from its neighbours
// this substep, N (its support less the collisions' pushes, which have their own friction), is the
// normal impulse (times Δt_s); its displacement relative to the W-weighted mean displacement of its
// neighbours loses its part across N up to μ |N| (all of it when that is less: static friction),
// and the neighbours take the opposite correction in proportion to their weights, so momentum is
// conserved. A grain on a slope of angle θ is pushed g cos θ Δt_s² along the slope's normal and
// gains g sin θ Δt_s² along it: it sticks below arctan μ and slides above at g (sin θ − μ cos θ). The
// net push is what friction can lean on: exact for a grain on a surface, an underestimate in a
// loaded bulk (which rests). Resting particles are held by their bonds instead (friction between
// bonded grains would only damp the lag of the constraints within a substep). Jacobi: every
// correction from this substep's p, one halo exchange, then applied.
void PbdPowder::particle_friction(Space& space, Real t, Real dt) {
  // W_poly6 at this substep's p (the same on both sides of a pair, so momentum is conserved)
  auto pair_weight = [&](std::uint32_t i, std::uint32_t j) {
    const Real d[3] = {p_[3 * i] - p_[3 * j], p_[3 * i + 1] - p_[3 * j + 1], p_[3 * i + 2] - p_[3 * j + 2]};
    const Real r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    return r2 < kernel_.h2() ? kernel_.w(r2) : Real(0);
  };
  friction_.assign(3 * view_.size(), 0.0);  // q_i = correction / Σ_j w_ij, owned then halo
  for (std::size_t r = 0; r < verlet_.rows(); ++r) {
    const std::uint32_t i = verlet_.row(r);
    if (state_[i] == kRest) continue;
    Real normal[3], relative[3] = {0, 0, 0}, weight = 0;
    for (int a = 0; a < 3; ++a) normal[a] = support_[3 * i + a] - pushed_[3 * i + a];
    const Real push = norm3(normal);
    if (push <= 0) continue;
    for (const std::uint32_t* k = near_begin(r); k != near_end(r); ++k) {
      const std::uint32_t j = *k;
      const Real w = pair_weight(i, j);
      for (int a = 0; a < 3; ++a) relative[a] -= w * (p_[3 * j + a] - x_[3 * j + a]);
      weight += w;
    }
    if (weight <= 0) continue;
    for (int a = 0; a < 3; ++a) relative[a] = relative[a] / weight + p_[3 * i + a] - x_[3 * i + a];
    Real along = 0;
    for (int a = 0; a < 3; ++a) along += relative[a] * normal[a] / push;
    for (int a = 0; a < 3; ++a) relative[a] -= along * normal[a] / push;
    const Real slip = norm3(relative);
    if (slip <= 0) continue;
    const Real removed = std::min(Real(1), settings_.friction * push / slip);
    for (int a = 0; a < 3; ++a) friction_[3 * i + a] = -removed * relative[a] / weight;
  }
  space.halo().update_values(friction_.data(), 3, friction_.data() + 3 * view_.owned());
  dp_.assign(3 * view_.owned(), 0.0);
  for (std::size_t r = 0; r < verlet_.rows(); ++r) {
    const std::uint32_t i = verlet_.row(r);
    Real weight = 0, reaction[3] = {0, 0, 0};
    for (const std::uint32_t* k = near_begin(r); k != near_end(r); ++k) {
      const Real w = pair_weight(i, *k);
      weight += w;
      for (int a = 0; a < 3; ++a) reaction[a] += w * friction_[3 * *k + a];
    }
    for (int a = 0; a < 3; ++a) dp_[3 * i + a] = weight * friction_[3 * i + a] - reaction[a];
  }
  for (std::size_t i = 0; i < view_.owned(); ++i) {
    for (int a = 0; a < 3; ++a) p_[3 * i + a] += dp_[3 * i + a];
    collide(i, t, dt);
  }
  if (settings_.xsph > 0 || settings_.vorticity > 0)  // their pair terms read the halo's p
    space.halo().update_values(p_.data(), 3, p_.data() + 3 * view_.owned());
}

// Lines 16-18: v = (p − x)/Δt_s (friction is in the positions), x = p.
void PbdPowder::update_velocities(Space& space, Real dt) {
  ParticleSet& ps = space.particles();
  Real* x = ps.positions();
  Real* v = ps.real("velocity");
  for (std::size_t i = 0; i < view_.owned(); ++i) {
    for (int a = 0; a < 3; ++a)
      v_[3 * i + a] = (p_[3 * i + a] - x_[3 * i + a]) / dt, x_[3 * i + a] = p_[3 * i + a];
    for (int a = 0; a < dimension_; ++a) {
      x[dimension_ * i + a] = p_[3 * i + a];
      v[dimension_ * i + a] = v_[3 * i + a];
    }
  }
  if (measures_support()) {
    Real* support = ps.real("support");
    for (std::size_t i = 0; i < view_.owned(); ++i)
      for (int a = 0; a < dimension_; ++a) support[dimension_ * i + a] += support_[3 * i + a] / dt;
  }
}

// PBF's optional velocity terms (Macklin and Müller 2013 §5, spec §3.3), in SPH form with the
// volume 1/ρ_0 of a particle: XSPH v_i += c Σ_j (v_j − v_i) W_ij / ρ_0, and vorticity confinement
// ω_i = Σ_j (v_j − v_i) × ∇_{p_j} W_ij / ρ_0, f_i = ε (N × ω_i), N = η/|η|, η = Σ_j |ω_j| ∇W_ij / ρ_0.
void PbdPowder::viscosity_and_vorticity(Space& space, Real dt) {
  ParticleHalo& halo = space.halo();
  halo.update_values(v_.data(), 3, v_.data() + 3 * view_.owned());
  const Real inv_rho0 = 1 / params_.rest_density;
  const std::size_t rows = verlet_.rows();
  dv_.assign(3 * view_.owned(), 0.0);
  omega_.assign(3 * view_.size(), 0.0);
  auto pairs = [&](std::size_t r, auto&& body) {
    const std::uint32_t i = verlet_.row(r);
    for (const std::uint32_t* k = near_begin(r); k != near_end(r); ++k) {
      const std::uint32_t j = *k;
      const Real d[3] = {p_[3 * i] - p_[3 * j], p_[3 * i + 1] - p_[3 * j + 1], p_[3 * i + 2] - p_[3 * j + 2]};
      const Real r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
      if (r2 < kernel_.h2()) body(i, j, d, r2);
    }
  };
  for (std::size_t r = 0; r < rows; ++r)
    pairs(r, [&](std::uint32_t i, std::uint32_t j, const Real* d, Real r2) {
      Real vij[3];
      for (int a = 0; a < 3; ++a) vij[a] = v_[3 * j + a] - v_[3 * i + a];
      const Real w = kernel_.w(r2) * inv_rho0, f = -kernel_.gradient_factor(std::sqrt(r2)) * inv_rho0;
      for (int a = 0; a < 3; ++a) dv_[3 * i + a] += settings_.xsph * vij[a] * w;
      const Real g[3] = {f * d[0], f * d[1], f * d[2]};  // ∇_{p_j} W_ij
      Real* w_i = &omega_[3 * i];
      w_i[0] += vij[1] * g[2] - vij[2] * g[1];
      w_i[1] += vij[2] * g[0] - vij[0] * g[2];
      w_i[2] += vij[0] * g[1] - vij[1] * g[0];
    });
  if (settings_.vorticity > 0) {
    halo.update_values(omega_.data(), 3, omega_.data() + 3 * view_.owned());
    for (std::size_t r = 0; r < rows; ++r) {
      Real eta[3] = {0, 0, 0};
      pairs(r, [&](std::uint32_t, std::uint32_t j, const Real* d, Real r2) {
        const Real f = kernel_.gradient_factor(std::sqrt(r2)) * inv_rho0 * norm3(&omega_[3 * j]);
        for (int a = 0; a < 3; ++a) eta[a] += f * d[a];
      });
      const Real length = norm3(eta);
      if (length == 0) continue;
      const std::uint32_t i = verlet_.row(r);
      const Real N[3] = {eta[0] / length, eta[1] / length, eta[2] / length};
      const Real* w = &omega_[3 * i];
      const Real f[3] = {N[1] * w[2] - N[2] * w[1], N[2] * w[0] - N[0] * w[2], N[0] * w[1] - N[1] * w[0]};
      for (int a = 0; a < 3; ++a) dv_[3 * i + a] += dt * settings_.vorticity * f[a];
    }
  }
  Real* v = space.particles().real("velocity");
  for (std::size_t i = 0; i < view_.owned(); ++i)
    for (int a = 0; a < dimension_; ++a) v[dimension_ * i + a] += dv_[3 * i + a];
}

// ---------------------------------------------------------------------------------------------
// Lines 20-28: the once-per-frame state transitions on the end-of-frame positions and velocities.

// Owned particle i's support over the frame and its free-surface normal o = Σ_j |∇W_ij| (x_i − x_j),
// each split along −g and across it. o is zero inside and points out of the powder at its surface;
// a grain on a plane surface of any slope has the |o| of a flat top (in the continuum limit), grains
// under it less, in a direction that is mostly noise. The surface is where |o| ≥ kSurfaceFraction of
// a flat top's and o points up: below the powder lies the floor (which o does not see) or an
// overhang, which nothing slides down. Both choices measured (docs/methods/pbd-powder.md): counting
// the floor layer as a steep surface kept it flowing under the heap, which crept flat; fractions
// 0.5 / 0.7 / 0.9 give 26.8° / 30.3° / 43.5° at μ = 0.6 (arctan μ = 31.0°).
pbd::Support PbdPowder::support_of(const Space& space, std::uint32_t i, const std::uint32_t* begin,
                                   const std::uint32_t* end, Real dt) const {
  const Real* push = space.particles().real("support") + dimension_ * i;
  Real outward[3] = {0, 0, 0}, mean[3] = {0, 0, 0};
  for (int a = 0; a < dimension_; ++a) mean[a] = push[a] / dt;
  for (const std::uint32_t* k = begin; k != end; ++k) {
    Real d[3];
    for (int a = 0; a < 3; ++a) d[a] = x_[3 * i + a] - x_[3 * *k + a];
    const Real g = std::fabs(kernel_.gradient_factor(norm3(d)));
    for (int a = 0; a < 3; ++a) outward[a] += g * d[a];
  }
  auto split = [&](const Real* a, Real* up, Real* across) {
    *up = 0, *across = norm3(a);
    if (rule_.gravity == 0) return;  // no up: nothing is on a slope, a stopped grain rests
    for (int c = 0; c < 3; ++c) *up -= a[c] * gravity_[c] / rule_.gravity;
    Real sq = 0;
    for (int c = 0; c < 3; ++c)
      sq += (a[c] + *up * gravity_[c] / rule_.gravity) * (a[c] + *up * gravity_[c] / rule_.gravity);
    *across = std::sqrt(sq);
  };
  pbd::Support out;
  split(mean, &out.up, &out.across);
  split(outward, &out.normal_up, &out.normal_across);
  out.surface = out.normal_up > 0 && norm3(outward) >= kSurfaceFraction * reference_.surface;
  return out;
}

void PbdPowder::transitions(Space& space, Real dt) {
  gather(space);
  neighbours_at(space, x_, 0);
  ParticleSet& ps = space.particles();
  std::int32_t* state = ps.int32("state");
  std::int32_t* changed = ps.int32("changed");
  Real* density = ps.real("density");
  std::uint64_t counts[3] = {0, 0, 0};
  for (std::size_t r = 0; r < verlet_.rows(); ++r) {
    const std::uint32_t i = verlet_.row(r);
    const std::uint32_t* begin = near_begin(r);
    const std::uint32_t* end = near_end(r);
    const Real ratio =
        pbd::density_constraint(params_, x_.data(), i, begin, end).density / params_.rest_density;
    Real relative_speed = -1;  // Eq. (9), self excluded
    if (begin != end) {
      Real mean[3] = {0, 0, 0};
      for (const std::uint32_t* k = begin; k != end; ++k)
        for (int a = 0; a < 3; ++a) mean[a] += v_[3 * *k + a];
      const Real n = static_cast<Real>(end - begin);
      const Real rel[3] = {mean[0] / n - v_[3 * i], mean[1] / n - v_[3 * i + 1], mean[2] / n - v_[3 * i + 2]};
      relative_speed = norm3(rel);
    }
    pbd::Support held;
    if (measures_support()) held = support_of(space, i, begin, end, dt);
    const std::int32_t next =
        settings_.transitions ? pbd::next_state(rule_, state[i], ratio, density[i], dt, relative_speed, held)
                              : state[i];
    density[i] = ratio;
    if (next != state[i]) {
      state[i] = next, changed[i] = 0, ++counts[2];
    } else if (changed[i] < kNeverChanged) {
      ++changed[i];
    }
    ++counts[next == kRest ? 1 : 0];
  }
  MPI_Allreduce(MPI_IN_PLACE, counts, 3, MPI_UINT64_T, MPI_SUM, space.comm());
  census_ = {counts[0], counts[1], counts[2]};
  if (pairs_mode_) update_bonds(space);
}

// ---------------------------------------------------------------------------------------------
// rest_constraint: pairs (§10 B5): a resting particle holds up to kMaxBonds resting neighbours at
// the distances they had when the bond formed; bonds are made and broken once per frame, after
// the transitions, and projected in every iteration in the per-particle Jacobi form of Eq. (6).

// The bonds of each owned particle as combined indices (CSR, in slot order), looked up in its
// Verlet row once per build (bonds change only between frames, and every frame builds): partners
// beyond the row's reach are left out — they cannot come within h before the next build.
void PbdPowder::find_bonds(const ParticleSet& owned) {
  bond_offset_.assign(view_.owned() + 1, 0), bond_partner_.clear(), bond_length_.clear();
  const ParticleId* bond = owned.uint64("bond");
  const Real* length = owned.real("bond_length");
  std::vector<std::size_t> row_of(view_.owned());
  for (std::size_t r = 0; r < verlet_.rows(); ++r) row_of[verlet_.row(r)] = r;
  std::vector<ParticleId> row_ids;  // the row's neighbour ids, contiguous for the searches
  for (std::size_t i = 0; i < view_.owned(); ++i) {
    if (state_[i] == kRest) {
      const std::size_t r = row_of[i];
      row_ids.clear();
      for (const std::uint32_t* k = verlet_.begin(r); k != verlet_.end(r); ++k)
        row_ids.push_back(view_.id(*k));
      for (int b = 0; b < kMaxBonds; ++b) {
        const ParticleId partner = bond[kMaxBonds * i + b];
        if (partner == kNoBond) continue;
        const auto at = std::find(row_ids.begin(), row_ids.end(), partner);
        if (at != row_ids.end())
          bond_partner_.push_back(verlet_.begin(r)[at - row_ids.begin()]),
              bond_length_.push_back(length[kMaxBonds * i + b]);
      }
    }
    bond_offset_[i + 1] = bond_partner_.size();
  }
}

// This substep's bonds: those whose partner is within h at the predicted positions.
void PbdPowder::select_bonds() {
  active_offset_.assign(view_.owned() + 1, 0), active_bond_.clear();
  const Real h2 = kernel_.h2();
  for (std::size_t i = 0; i < view_.owned(); ++i) {
    for (std::size_t b = bond_offset_[i]; b < bond_offset_[i + 1]; ++b) {
      const std::uint32_t j = bond_partner_[b];
      const Real d[3] = {p_[3 * i] - p_[3 * j], p_[3 * i + 1] - p_[3 * j + 1], p_[3 * i + 2] - p_[3 * j + 2]};
      if (d[0] * d[0] + d[1] * d[1] + d[2] * d[2] < h2) active_bond_.push_back(b);
    }
    active_offset_[i + 1] = active_bond_.size();
  }
}

// Each bond moves i by half its error along n_ij (a lone bond is exact after one round), scaled by
// 1/max(b_i, b_j), b the bond counts: symmetric, so bonds conserve momentum.
void PbdPowder::bond_correction(std::uint32_t i, Real* dp) const {
  const Real* pi = &p_[3 * i];
  for (std::size_t a = active_offset_[i]; a < active_offset_[i + 1]; ++a) {
    const std::size_t b = active_bond_[a];
    const std::uint32_t j = bond_partner_[b];
    const Real* pj = &p_[3 * j];
    const Real d[3] = {pi[0] - pj[0], pi[1] - pj[1], pi[2] - pj[2]};
    const Real length = norm3(d);
    const Real count = std::max(weights_[kWeights * i + 2], weights_[kWeights * j + 2]);
    if (length < 1e-9 * kernel_.h() || count <= 0) continue;
    const Real f = -0.5 * (length - bond_length_[b]) / length / count;
    for (int c = 0; c < 3; ++c) dp[c] += f * d[c];
  }
}

// After the transitions (the halo's states refreshed): a flowing particle lets go of its bonds; a
// resting one keeps those to resting neighbours still within h and fills free slots with its
// nearest unbonded resting neighbours within kBondReach Δx (ties by id) at their current distances.
void PbdPowder::update_bonds(Space& space) {
  ParticleSet& own = space.particles();
  space.halo().update(own, {"state"});
  const std::int32_t* state = own.int32("state");
  const std::int32_t* halo_state = space.halo().particles().int32("state");
  auto resting = [&](std::uint32_t c) {
    return (c < view_.owned() ? state[c] : halo_state[c - view_.owned()]) == kRest;
  };
  ParticleId* bond = own.uint64("bond");
  Real* length = own.real("bond_length");
  std::vector<std::pair<Real, std::uint32_t>> candidates;
  for (std::size_t r = 0; r < verlet_.rows(); ++r) {
    const std::uint32_t i = verlet_.row(r);
    ParticleId* mine = bond + kMaxBonds * i;
    Real* lengths = length + kMaxBonds * i;
    if (state[i] != kRest) {
      std::fill_n(mine, kMaxBonds, kNoBond);
      continue;
    }
    candidates.clear();
    for (const std::uint32_t* k = near_begin(r); k != near_end(r); ++k) {
      const std::uint32_t j = *k;
      if (!resting(j)) continue;
      const Real d[3] = {x_[3 * i] - x_[3 * j], x_[3 * i + 1] - x_[3 * j + 1], x_[3 * i + 2] - x_[3 * j + 2]};
      if (norm3(d) < kBondReach * settings_.spacing) candidates.push_back({norm3(d), j});
    }
    // Kept bonds: partners still resting and within h.
    for (int b = 0; b < kMaxBonds; ++b) {
      if (mine[b] == kNoBond) continue;
      const auto held = std::find_if(candidates.begin(), candidates.end(),
                                     [&](const auto& c) { return view_.id(c.second) == mine[b]; });
      if (held == candidates.end())
        mine[b] = kNoBond;
      else
        candidates.erase(held);
    }
    std::sort(candidates.begin(), candidates.end(), [&](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : view_.id(a.second) < view_.id(b.second);
    });
    auto next = candidates.begin();
    for (int b = 0; b < kMaxBonds && next != candidates.end(); ++b)
      if (mine[b] == kNoBond) {  // held no closer than the contact distance, which would fight it
        mine[b] = view_.id(next->second), lengths[b] = std::max(next->first, params_.contact_distance);
        ++next;
      }
  }
}

void PbdPowder::advance(Space& space, Real t, Real dt) {
  clock_.time(kEmit, [&] {
    emit(space, t, dt);
    ParticleSet& ps = space.particles();
    if (measures_support()) std::fill_n(ps.real("support"), dimension_ * ps.size(), Real(0));
  });
  const Real substep_dt = dt / settings_.substeps;
  new_frame_ = true;
  for (int s = 0; s < settings_.substeps; ++s) substep(space, t + s * substep_dt, substep_dt);
  clock_.time(kTransitions, [&] { transitions(space, dt); });
}

GlobalDiagnostics PbdPowder::diagnostics(const Space& space) const { return particle_diagnostics(space); }

int PbdPowder::derived_field_components(const std::string& name) const {
  return name == "display_state" ? 1 : 0;
}

// Fig. 3's colours: 0 flowing (cyan), 1 resting (pink), 2 changed in the last transition_frames
// frames (yellow).
void PbdPowder::derive_field(const Space& space, const std::string& name, Real* out) const {
  if (name != "display_state") return;
  const ParticleSet& ps = space.particles();
  for (std::size_t p = 0; p < ps.size(); ++p)
    out[p] = ps.int32("changed")[p] < settings_.transition_frames ? 2 : ps.int32("state")[p];
}

}  // namespace nendo
