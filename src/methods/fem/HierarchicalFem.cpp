#include "methods/fem/HierarchicalFem.hpp"

#include <fmt/format.h>
#include <malloc.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <numeric>

#include "core/CollectiveError.hpp"
#include "core/Mpi.hpp"
#include "core/ReproducibleSum.hpp"
#include "core/SplitMix.hpp"

namespace nendo {

using fem::Index;
using fem::NodeStatus;

namespace {

enum Stage { kView, kSelect, kForces, kIntegrate, kMigrate };

void put_list(Bytes& out, const std::vector<Index>& list) {
  put(out, static_cast<Index>(list.size()));
  for (Index t : list) put(out, t);
}
std::vector<Index> take_list(ByteReader& in) {
  std::vector<Index> list(static_cast<std::size_t>(in.get<Index>()));
  for (Index& t : list) t = in.get<Index>();
  return list;
}

// An upper bound of a tet's largest principal stretch from its Green strain E (engineering shear):
// λ² = 1 + 2 e with e at most E's largest Gershgorin row sum.
Real stretch_bound(const fem::Voigt& E) {
  const Real e = std::max({E[0] + 0.5 * (std::abs(E[3]) + std::abs(E[4])),
                           E[1] + 0.5 * (std::abs(E[3]) + std::abs(E[5])),
                           E[2] + 0.5 * (std::abs(E[4]) + std::abs(E[5]))});
  return std::sqrt(std::max(1 + 2 * e, 0.0));
}

// The longest edge of the level-0 tets: the scale of the balance reach.
Real longest_level0_edge(const TetMesh& mesh) {
  Real longest = 0;
  for (std::size_t t = 0; t < mesh.tet_count(); ++t)
    for (const auto& e : fem::kEdges) {
      const Real* a = &mesh.vertices[3 * static_cast<std::size_t>(mesh.tets[4 * t + e[0]])];
      const Real* b = &mesh.vertices[3 * static_cast<std::size_t>(mesh.tets[4 * t + e[1]])];
      longest = std::max(longest, std::sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                                            (a[2] - b[2]) * (a[2] - b[2])));
    }
  return longest;
}

// ‖E_a − E_b‖_F from Voigt vectors with engineering shear (§4.4 agree).
Real green_distance(const fem::Voigt& a, const fem::Voigt& b) {
  const fem::Voigt d = a - b;
  return std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + 0.5 * (d[3] * d[3] + d[4] * d[4] + d[5] * d[5]));
}

// Spec §4.4 cond(T, κ): the Biot strain of F inside κ times the tet's linear ranges.
bool within_linear_range(const fem::TetConstants& c, const fem::Voigt& biot, Real kappa) {
  for (int m = 0; m < 6; ++m)
    if (biot[m] < kappa * c.alpha_min[m] || biot[m] > kappa * c.alpha_max[m]) return false;
  return true;
}

// A sufficient condition for cond(T, κ) from the Green strain E alone, which spares the eigen
// decomposition of the Biot strain: for |E|_F < 3/8 every stretch λ − 1 is within 4/3 of its
// ½(λ² − 1), so |U − I|_F ≤ 4/3 |E|_F, and a component with engineering shear is at most
// √2 |U − I|_F: no Biot component reaches the nearest bound while 1.9 |E|_F is below it.
bool surely_within_linear_range(const fem::TetConstants& c, const fem::Voigt& green, Real kappa) {
  Real nearest = std::numeric_limits<Real>::infinity();
  for (int m = 0; m < 6; ++m) nearest = std::min({nearest, -c.alpha_min[m], c.alpha_max[m]});
  const Real size = green_distance(green, fem::Voigt::Zero());
  return size < 0.375 && 1.9 * size < kappa * nearest;
}

// A parent is merged only where its error indicator is below this fraction of τ_err: the
// indicator of a coarse tet beside finer ones exceeds what its parent shows over its children
// (the coarse tet is stiffer, its strain lower), and a narrower band let the swinging cantilever
// of issue 28 (E = 2.3e6 Pa, τ_err = 0.0025) refine and merge the same tets every few steps:
// 0.8 made 73 761 level changes in 10 000 steps, 0.5 2 083 in 3 000 (500 merges), 0.25 1 107
// (9 merges).
constexpr Real kErrorCoarsening = 0.25;

// The rings of roots a model holds beyond what its view needs, so that it is built again only when
// the view has moved a root's width.
constexpr int kSlackRings = 1;

std::uint64_t hash_ids(const ParticleId* ids, std::size_t count) {  // the same for any order
  std::uint64_t set = count;
  for (std::size_t i = 0; i < count; ++i) set += splitmix64(ids[i]);
  return set;
}

std::uint64_t hash_sequence(const std::vector<ParticleId>& ids) {  // of the ids in their order
  std::uint64_t sequence = ids.size();
  for (ParticleId n : ids) sequence = splitmix64(sequence ^ n);
  return sequence;
}

}  // namespace

HierarchicalFem::HierarchicalFem(const Scene& scene)
    : scene_(scene),
      colliders_(scene.colliders, 3),
      gravity_(scene.gravity),
      adaptive_(scene.sections.get<FemSettings>().max_level > scene.sections.get<FemSettings>().min_level),
      implicit_(scene.time.integrator == "implicit"),
      clock_({"view", "select", "forces", "integrate", "migrate"}) {}

HierarchicalFem::~HierarchicalFem() = default;

void HierarchicalFem::register_fields(ParticleSet& particles) const {
  particles.add_field("mass", FieldType::Real, 1);
  particles.add_field("status", FieldType::Int32, 1);  // 1 regular, 2 hanging (spec §6.1)
  particles.add_field("level", FieldType::Int32, 1);   // the level the node appears on
  particles.add_field("fixed", FieldType::Int32, 1);
}

void HierarchicalFem::make_level0(MPI_Comm comm) {
  level0_ = fem::make_level0_mesh(comm, scene_);
  level0_roots_ =
      std::make_unique<fem::Level0Roots>(level0_.mesh, scene_.sections.get<FemSettings>().max_level);
}

// A fresh run: the active set starts at min_level (spec §6.3 "initial active set"); each rank makes
// the particles of the nodes whose smallest root is in its share of the roots, from a model of
// those roots without constants, which Space::distribute() then sends to their owners.
void HierarchicalFem::seed(MPI_Comm comm, const Scene& /*scene*/, ParticleSet& particles) {
  const FemSettings& fs = scene_.sections.get<FemSettings>();
  make_level0(comm);
  const auto roots = static_cast<std::size_t>(root_count()), rank = static_cast<std::size_t>(mpi::rank(comm)),
             ranks = static_cast<std::size_t>(mpi::size(comm));
  const auto first = static_cast<Index>(rank * roots / ranks),
             end = static_cast<Index>((rank + 1) * roots / ranks);
  std::vector<Index> share(static_cast<std::size_t>(end - first));
  std::iota(share.begin(), share.end(), first);
  const fem::FemModel model = fem::build_fem_model(comm, scene_, level0_, share, {false, false});
  const fem::TetHierarchy& h = model.hierarchy;
  const fem::ActiveSet active(h, fs.min_level);
  for (std::size_t n = 0; n < h.node_count(); ++n) {
    const NodeStatus status = active.status(static_cast<Index>(n));
    const Index id = h.global_node(static_cast<Index>(n)), home = level0_roots_->home_root(id);
    if (status == NodeStatus::Inactive || home < first || home >= end) continue;
    const std::size_t p = particles.size();
    particles.resize(p + 1);
    particles.ids()[p] = static_cast<ParticleId>(id);
    std::copy_n(h.rest_position(static_cast<Index>(n)), 3, particles.positions() + 3 * p);
    const Vec3& v = model.body_velocity[model.node_body[n]];
    std::copy_n(v.data(), 3, particles.real("velocity") + 3 * p);
    particles.real("mass")[p] = 0;  // lumped once the particles are distributed
    particles.int32("status")[p] = static_cast<std::int32_t>(status);
    particles.int32("level")[p] = h.node_level[n];
    particles.int32("fixed")[p] = model.fixed[n];
    if (model.fixed[n]) std::fill_n(particles.real("velocity") + 3 * p, 3, 0.0);
  }
}

std::vector<Index> HierarchicalFem::roots_needed(const ParticleId* ids, std::size_t count) const {
  std::vector<Index> roots;
  if (scene_.sections.get<FemSettings>().model == "whole") {
    roots.resize(static_cast<std::size_t>(root_count()));
    std::iota(roots.begin(), roots.end(), 0);
    return roots;
  }
  std::vector<std::uint8_t> seen(static_cast<std::size_t>(root_count()), 0);
  const fem::TetHierarchy* h = model_ ? &model_->hierarchy : nullptr;
  for (std::size_t i = 0; i < count; ++i) {
    // A held node lies in a root only if its parent edge does, so in a root around the level-0
    // vertex reached through first parents; of another, the roots around its numbering root.
    Index n = h ? h->local_node(static_cast<Index>(ids[i])) : -1;
    if (n < 0) {
      level0_roots_->add_holders(static_cast<Index>(ids[i]), seen, roots);
      continue;
    }
    while (h->node_level[n] > 0) n = h->node_edge[n][0];
    level0_roots_->add_roots_at(h->global_node(n), seen, roots);
  }
  std::sort(roots.begin(), roots.end());
  return level0_roots_->rings_around(roots, 1 + (adaptive_ ? hold_rings_ : 0));
}

bool HierarchicalFem::outgrown(const std::vector<Index>& needs) const {
  return !model_ || !std::includes(model_->hierarchy.roots.begin(), model_->hierarchy.roots.end(),
                                   needs.begin(), needs.end());
}

void HierarchicalFem::cover(MPI_Comm comm, const std::vector<Index>& needs) {
  int any = outgrown(needs);
  MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, comm);
  if (any) rebuild(comm, needs);
}

// A rank keeps the roots it holds up to date in its new model, to answer for them until this
// round's fetch (a migration or re-balance can take a region far away); the next build leaves
// those it then no longer holds out. A model larger than its needs is not built again on its
// own: every build costs all ranks.
void HierarchicalFem::rebuild(MPI_Comm comm, const std::vector<Index>& needs) {
  const std::vector<Index> wanted = level0_roots_->rings_around(needs, kSlackRings);
  std::vector<Index> roots = wanted;
  if (model_ && adaptive_) {
    const std::vector<Index>& held = model_->hierarchy.roots;
    std::vector<Index> answered;
    for (std::size_t r = 0; r < held.size(); ++r)
      if (accurate_[r]) answered.push_back(held[r]);
    roots.clear();
    std::set_union(wanted.begin(), wanted.end(), answered.begin(), answered.end(), std::back_inserter(roots));
  }
  build_model(comm, roots);
  // The build's many small temporaries (the shared-node tables, the old model) are freed between
  // the blocks that stay: give their pages back, or the resident set keeps them (12 MiB of the
  // busiest rank's peak on the 1.18 M-tet slab).
  malloc_trim(0);
}

// The model of `roots` (collective). The active set keeps the states of the roots held up to date
// before; a fresh run's are all at min_level, a restart's the checkpoint's. The view is located
// again and the incidence will be rebuilt.
void HierarchicalFem::build_model(MPI_Comm comm, const std::vector<Index>& roots) {
  const int min_level = scene_.sections.get<FemSettings>().min_level;
  // The states worth keeping, by global numbers, so that the old model is gone before the new
  // one is built. Without level changes every root stays at min_level.
  const bool fresh = !model_;
  std::vector<std::pair<Index, std::vector<Index>>> kept;  // (root, its active tets)
  if (!fresh && adaptive_ && !restored_)
    for (std::size_t r = 0; r < accurate_.size(); ++r)
      if (accurate_[r])
        kept.emplace_back(model_->hierarchy.roots[r],
                          global_tets(active_->active_tets({static_cast<Index>(r)})));
  active_.reset();
  model_.reset();
  accurate_ = {}, status_ = {}, slot_ = {};
  // The stable step is the whole mesh's: found at the first build, kept by the others.
  model_ = std::make_unique<fem::FemModel>(
      fem::build_fem_model(comm, scene_, level0_, roots, {true, model_builds_ == 0}));
  if (model_builds_ == 0) stable_dt_ = model_->stable_dt;
  ++model_builds_;
  const fem::TetHierarchy& h = model_->hierarchy;
  const auto held = static_cast<std::size_t>(h.level_begin[1]);
  if (restored_) {
    active_ = std::make_unique<fem::ActiveSet>(h, local_tets(restored_active_), min_level);
    accurate_.assign(held, 1);
    restored_ = false;
    restored_active_ = {};
  } else {
    active_ = std::make_unique<fem::ActiveSet>(h, min_level);
    accurate_.assign(held, fresh || !adaptive_ ? 1 : 0);  // a fresh run's roots are all at min_level
    for (const auto& [root, state] : kept)
      if (const Index r = h.local_root(root); r >= 0) {
        active_->set_root(r, local_tets(state));
        accurate_[static_cast<std::size_t>(r)] = 1;
      }
  }
  status_.resize(h.node_count());
  for (std::size_t n = 0; n < status_.size(); ++n) status_[n] = active_->status(static_cast<Index>(n));
  slot_.assign(h.node_count(), -1);
  located_ = false;
  view_node_.clear();
  locate_view();
  topology_changed_ = true;
  held_known_ = false;
}

void HierarchicalFem::locate_view() {
  const fem::TetHierarchy& h = model_->hierarchy;
  const std::uint64_t sequence = hash_sequence(view_.ids());
  if (view_node_.size() != view_.size() || !located_ || sequence != located_for_) {
    view_node_.resize(view_.size());
    for (std::size_t i = 0; i < view_.size(); ++i)
      view_node_[i] = h.local_node(static_cast<Index>(view_.id(i)));
    located_for_ = sequence;
    located_ = true;
  }
  for (std::size_t i = 0; i < view_.size(); ++i)
    if (view_node_[i] >= 0) slot_[view_node_[i]] = static_cast<std::int32_t>(i);
}

std::vector<Index> HierarchicalFem::global_tets(const std::vector<Index>& local) const {
  std::vector<Index> global(local.size());
  for (std::size_t i = 0; i < local.size(); ++i) global[i] = model_->hierarchy.global_tet(local[i]);
  return global;
}

std::vector<Index> HierarchicalFem::local_tets(const std::vector<Index>& global) const {
  std::vector<Index> local;
  for (Index t : global)
    if (const Index l = model_->hierarchy.local_tet(t); l >= 0) local.push_back(l);
  return local;
}

// The exchanges of level changes (issue 34). A refinement forces refinements of coarser tets at
// most max_level − 1 roots away (each forced tet is coarser and shares a vertex with the last), so
// a rank that keeps its view's roots and 1 + 2 (max_level − 1) rings beyond up to date sees every
// change that reaches its view's statuses and every state such a change reads.
void HierarchicalFem::start_exchanges(Space& space) {
  comm_ = space.comm();
  if (!exchange_) exchange_ = std::make_unique<SparseExchange>(comm_);
  held_known_ = false;  // every held root is up to date now: the next view drops those far from it
  hold_rings_ = 1 + 2 * std::max(scene_.sections.get<FemSettings>().max_level - 1, 0);
  longest_edge_ = longest_level0_edge(level0_.mesh);
  stretch_allowance_ = 2;
  reach_distance_ = stretch_allowance_ * (hold_rings_ + 3) * longest_edge_ + space.geometry().dx;
}

// A mesh stretched beyond stretch_allowance_ spans more than the reach: the marks and states must
// go further. The allowance grows to 1.25 times the largest stretch of any rank's tets, and the
// neighbours are found again before this step's marks go out.
void HierarchicalFem::widen_reach(const Space& space) {
  Real stretch = stretch_;
  MPI_Allreduce(MPI_IN_PLACE, &stretch, 1, MPI_DOUBLE, MPI_MAX, space.comm());
  stretch_allowance_ = std::max(stretch_allowance_, 1.25 * stretch);
  reach_distance_ = stretch_allowance_ * (hold_rings_ + 3) * longest_edge_ + space.geometry().dx;
  neighbours_for_.clear();
  update_neighbours(space);
}

void HierarchicalFem::initialize(Space& space) {
  start_exchanges(space);
  gather_view(space);
  build_incidence(space);
  check_reach(space.comm(), "nodes of the tets at owned nodes");
}

StateRecord HierarchicalFem::save_state() const {
  StateRecord state;
  const std::vector<Index> active = active_tets();
  state.integers["active_tets"].assign(active.begin(), active.end());
  return state;
}

std::vector<Index> HierarchicalFem::active_tets() const {
  std::vector<Index> roots;
  for (Index r = 0; r < model_->hierarchy.level_begin[1]; ++r)
    if (owns_root(r)) roots.push_back(r);
  std::vector<Index> all = mpi::all_gather(global_tets(active_->active_tets(roots)), comm_);
  std::sort(all.begin(), all.end());
  return all;
}

std::size_t HierarchicalFem::held_roots() const {
  return static_cast<std::size_t>(std::count(accurate_.begin(), accurate_.end(), 1));
}

// The model is built for the restored view, with the checkpoint's active tets of its roots.
void HierarchicalFem::restore(Space& space, const StateRecord& state) {
  const auto it = state.integers.find("active_tets");
  if (it == state.integers.end()) throw InputError("checkpoint: no active_tets record for the fem method");
  if (!level0_roots_) make_level0(space.comm());
  restored_active_.assign(it->second.begin(), it->second.end());
  restored_ = true;
  model_.reset();
  active_.reset();
  slot_.clear();
  view_node_.clear();
  located_ = false;
  needs_known_ = false;
  start_exchanges(space);
  gather_view(space);
  build_incidence(space);
  check_reach(space.comm(), "nodes of the tets at owned nodes");
}

Real HierarchicalFem::stable_dt(const Space& /*space*/) const { return stable_dt_; }

void HierarchicalFem::advance(Space& space, Real t, Real dt) {
  clock_.time(kView, [&] {
    gather_view(space);
    check_reach(space.comm(), "masters of hanging nodes");
    place_hanging_nodes();
  });
  bool selected = false;  // marks were applied: measure what they did to the kinetic energy
  if (adaptive_) clock_.time(kSelect, [&] { selected = select_levels(space); });
  clock_.time(kForces, [&] {
    build_incidence(space);
    check_reach(space.comm(), "corners of the tets at owned nodes");
    // Spec §10 C9: level changes are not energy-exact (new nodes interpolated, masses re-lumped).
    if (selected) level_energy_change_ += kinetic_energy(space);
    if (!implicit_) compute_forces(x_, v_);
  });
  clock_.time(kIntegrate, [&] { implicit_ ? solve_implicit(space, t, dt) : integrate(space, t, dt); });
  clock_.time(kMigrate, [&] {
    follow_masters(space);
    space.migrate();
  });
}

// ---------------------------------------------------------------------------------------------
// The view: owned particles, then the halo copies.

void HierarchicalFem::gather_view(Space& space) {
  for (Index n : view_node_)
    if (n >= 0) slot_[n] = -1;
  for (Index n : made_in_view_) slot_[n] = -1;
  made_in_view_.clear();
  view_.assign(space.particles(), space.halo().particles());
  view_.gather("position", x_);
  view_.gather("velocity", v_);
  // The same owned nodes in any order need the same roots.
  const std::uint64_t set = hash_ids(view_.ids().data(), view_.owned());
  if (!needs_known_ || set != needs_for_) {
    needs_ = roots_needed(view_.ids().data(), view_.owned());
    needs_for_ = set;
    needs_known_ = true;
  }
  // A first view builds the model (every rank has none: initialize, restore); a later one that
  // outgrew it tells check_reach, whose allreduce follows every view.
  if (!model_)
    cover(space.comm(), needs_);
  else
    outgrown_ = outgrown(needs_);
  locate_view();
  wanted_.clear();
  if (adaptive_) {
    update_neighbours(space);                            // the marks of this step go to these
    if (!held_known_ || set != held_for_) hold_needs();  // fetched by the next check_reach
  }
  find_hanging();
}

// The hanging nodes of the view and their masters.
void HierarchicalFem::find_hanging() {
  hanging_.clear();
  hanging_masters_.clear();
  std::vector<fem::Master> masters;
  for (std::size_t i = 0; i < view_.size(); ++i) {
    const Index n = view_node_[i];
    if (n < 0 || status_[n] != NodeStatus::Hanging) continue;
    active_->masters(n, masters);
    if (masters.size() != 2 || slot_[masters[0].node] < 0 || slot_[masters[1].node] < 0) {
      beyond_ += i < view_.owned();  // an owned hanging node must follow its masters; a halo copy may not
      continue;
    }
    hanging_.push_back(n);
    hanging_masters_.insert(hanging_masters_.end(), masters.begin(), masters.end());
  }
}

// Every rank stops, naming what did not fit, if a rank found data it needs beyond its halo (a
// deformation the halo's one cell cannot hold: grid.dx too small for the level-0 mesh).
// The same allreduce also tells every rank whether any rank wants roots it does not hold yet
// (want_roots): if so they are fetched and the hanging nodes found again before the check; and
// `any`, if given, becomes whether it is set on any rank.
void HierarchicalFem::check_reach(MPI_Comm comm, const char* what, int* any, int* stretched) {
  const long beyond = beyond_;
  beyond_ = 0;
  int values[5] = {beyond == 0 ? INT_MAX : mpi::rank(comm), wanted_.empty() ? 0 : -1, any && *any ? -1 : 0,
                   stretched && *stretched ? -1 : 0, outgrown_ ? -1 : 0};
  MPI_Allreduce(MPI_IN_PLACE, values, 5, MPI_INT, MPI_MIN, comm);
  if (any) *any = values[2] < 0;
  if (stretched) *stretched = values[3] < 0;
  if (values[4] < 0) {  // a view outgrew its model: every rank builds its own again
    outgrown_ = false;
    rebuild(comm, needs_);
    if (adaptive_) hold_needs();
    find_hanging();
    check_reach(comm, what);
    return;
  }
  if (values[1] < 0) {  // the view's statuses were not all up to date: the check is made again
    fetch_wanted();
    drop_unheld();
    find_hanging();
    check_reach(comm, what);
    return;
  }
  drop_unheld();
  if (values[0] == INT_MAX) return;
  std::string message = "fem: " + std::to_string(beyond) + " " + what +
                        " reach beyond the particle halo; raise grid.dx (at least 2.5 times the longest "
                        "level-0 edge, more for large stretches)";
  mpi::broadcast(message, values[0], comm);
  throw CollectiveError(message);
}

// Spec §6.2 step 2: x_n, v_n of every hanging node in the view from its masters (owned hanging
// particles too, so output and checkpoints hold them on their edges).
void HierarchicalFem::place_hanging_nodes() {
  interpolate_hanging(x_);
  interpolate_hanging(v_);
}

// values (`components` per view entry) of each hanging node from its two masters'.
void HierarchicalFem::interpolate_hanging(std::vector<Real>& values, int components) const {
  const auto n = static_cast<std::size_t>(components);
  for (std::size_t k = 0; k < hanging_.size(); ++k) {
    const auto s = static_cast<std::size_t>(slot_[hanging_[k]]);
    const fem::Master& a = hanging_masters_[2 * k];
    const fem::Master& b = hanging_masters_[2 * k + 1];
    const auto sa = static_cast<std::size_t>(slot_[a.node]), sb = static_cast<std::size_t>(slot_[b.node]);
    for (std::size_t c = 0; c < n; ++c)
      values[n * s + c] = a.weight * values[n * sa + c] + b.weight * values[n * sb + c];
  }
}

fem::RestShape HierarchicalFem::rest_shape(Index t) const {
  const auto found = std::lower_bound(needed_.begin(), needed_.end(), t);
  if (found != needed_.end() && *found == t)
    return needed_rest_[static_cast<std::size_t>(found - needed_.begin())];
  return fem::tet_rest_shape(model_->hierarchy, t);
}

bool HierarchicalFem::gather_corners(Index t, Real (&x)[4][3]) const {
  const fem::Corners c = model_->hierarchy.corners(t);
  for (int a = 0; a < 4; ++a) {
    const std::int32_t s = slot_[c[a]];
    if (s < 0) return false;
    std::copy_n(&x_[3 * static_cast<std::size_t>(s)], 3, x[a]);
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Level selection (spec §6.2 step 1).

void HierarchicalFem::mark(std::vector<Index>& refine, std::vector<Index>& coarsen) {
  const fem::TetHierarchy& h = model_->hierarchy;
  const FemSettings& fs = scene_.sections.get<FemSettings>();
  const auto evaluated_here = [&](Index t) {
    const std::int32_t s = slot_[h.corners(t)[0]];
    return s >= 0 && static_cast<std::size_t>(s) < view_.owned();
  };
  Real x[4][3];
  const auto deformation_of = [&](Index t) {
    if (!gather_corners(t, x))
      throw CollectiveError("fem: tet " + std::to_string(h.global_tet(t)) + " reaches beyond the halo");
    return fem::deformation_gradient(rest_shape(t), x);
  };
  // The Green strain of a tet, as recover_strains found it if it did.
  const auto green_of = [&](Index t) {
    const auto found = std::lower_bound(needed_.begin(), needed_.end(), t);
    const auto i = static_cast<std::size_t>(found - needed_.begin());
    if (found != needed_.end() && *found == t && strain_known_[i]) return fem::Voigt(&tet_strains_[6 * i]);
    return fem::green_strain(deformation_of(t));
  };
  const auto in_range = [&](Index t, const fem::Voigt& green, Real kappa) {
    return surely_within_linear_range(model_->constants[t], green, kappa) ||
           within_linear_range(model_->constants[t], fem::biot_strain(deformation_of(t)), kappa);
  };
  // The error indicator: how far the tet's constant strain is from the recovered strain at its
  // corners (within the view: the tet's corners are).
  const auto error_of = [&](Index t, const fem::Voigt& green) {
    Real error = 0;
    for (Index c : h.corners(t)) {
      const fem::Voigt recovered(&recovered_[6 * static_cast<std::size_t>(slot_[c])]);
      error = std::max(error, green_distance(recovered, green));
    }
    return error;
  };
  for (Index t : active_->active_tets(roots_)) {
    if (h.level[t] >= fs.max_level || !evaluated_here(t)) continue;
    const fem::Voigt green = green_of(t);
    if (error_of(t, green) > fs.error_tolerance || !in_range(t, green, 1)) refine.push_back(t);
  }
  for (Index p : active_->coarsening_candidates(roots_)) {
    if (h.level[p] < fs.min_level || !evaluated_here(p)) continue;
    const fem::Voigt parent_green = fem::green_strain(deformation_of(p));
    if (error_of(p, parent_green) > kErrorCoarsening * fs.error_tolerance ||
        !in_range(p, parent_green, fs.coarsen_factor))
      continue;
    bool agree = true;
    for (int k = 0; k < 8 && agree; ++k)
      agree = green_distance(green_of(h.child(p, k)), parent_green) <= fs.agree_tolerance;
    if (agree) coarsen.push_back(p);
  }
}

// The Green strain (Voigt) of needed tet i at the view positions, computed once per selection.
const Real* HierarchicalFem::needed_strain(std::size_t i) {
  if (!strain_known_[i]) {
    Real x[4][3];
    for (int a = 0; a < 4; ++a)
      std::copy_n(&x_[3 * static_cast<std::size_t>(needed_slots_[4 * i + a])], 3, x[a]);
    const fem::Voigt green = fem::green_strain(fem::deformation_gradient(needed_rest_[i], x));
    std::copy_n(green.data(), 6, &tet_strains_[6 * i]);
    strain_known_[i] = 1;
  }
  return &tet_strains_[6 * i];
}

// stretch_: a bound of the largest stretch of the active tets whose corner 0 is owned here. Their
// strains stay known for mark(), which tests these tets.
void HierarchicalFem::measure_stretch() {
  stretch_ = 0;
  for (std::size_t i = 0; i < needed_.size(); ++i)
    if (static_cast<std::size_t>(needed_slots_[4 * i]) < view_.owned())
      stretch_ = std::max(stretch_, stretch_bound(fem::Voigt(needed_strain(i))));
}

// Returns whether marks were applied (the same answer on every rank).
bool HierarchicalFem::select_levels(Space& space) {
  build_incidence(space);
  check_reach(space.comm(), "corners of the tets at owned nodes");
  recover_strains(space);
  measure_stretch();
  std::vector<Index> refine, coarsen;
  mark(refine, coarsen);
  int any = !refine.empty() || !coarsen.empty(), stretched = stretch_ > stretch_allowance_;
  check_reach(space.comm(), "tets tested for refinement or coarsening", &any, &stretched);
  if (stretched) widen_reach(space);
  if (!any) return false;
  level_energy_change_ -= kinetic_energy(space);  // before; the forces stage adds the after
  exchange_marks(refine, coarsen);
  fem::ActiveSet::StepChanges changes = active_->apply(refine, coarsen);
  const fem::TetHierarchy& h = model_->hierarchy;
  long counts[2] = {0, 0};  // each root's changes counted by its owner
  for (Index t : changes.refined) counts[0] += owns_root(h.root(t));
  for (Index p : changes.coarsened) counts[1] += owns_root(h.root(p));
  MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_LONG, MPI_SUM, space.comm());
  refinements_ += counts[0];
  coarsenings_ += counts[1];
  apply_changes(space, settle_roots(changes));
  return true;
}

// ---------------------------------------------------------------------------------------------
// The roots a rank keeps up to date, and the exchanges that keep them so (issue 34).

bool HierarchicalFem::owns_root(Index root) const {
  const std::int32_t s = slot_[model_->hierarchy.stored_corners[root][0]];
  return s >= 0 && static_cast<std::size_t>(s) < view_.owned();
}

// The ranks owning a block within reach_distance_ of one of this rank's blocks (any particle of
// theirs that a level change here can reach, or that holds a root this rank keeps, is there).
void HierarchicalFem::update_neighbours(const Space& space) {
  const std::vector<BlockKey>& keys = space.blocks().keys;
  const std::vector<BlockKey>& splitters = space.partition().splitters();
  if (keys == neighbours_for_ && splitters == neighbours_splitters_) return;
  const BlockGeometry& g = space.geometry();
  const auto reach = static_cast<int>(std::ceil(reach_distance_ / (g.dx * g.block)));
  std::vector<int> ranks;
  for (BlockKey key : keys) {
    const BlockCoord at = decode_block_key(key);
    for (int k = -reach; k <= reach; ++k)
      for (int j = -reach; j <= reach; ++j)
        for (int i = -reach; i <= reach; ++i) {
          const BlockCoord c{at[0] + i, at[1] + j, g.dimension == 3 ? at[2] + k : at[2]};
          if (g.dimension < 3 && k != 0) continue;
          bool inside = true;
          for (int a = 0; a < 3; ++a) inside = inside && c[a] >= kBlockCoordMin && c[a] <= kBlockCoordMax;
          if (inside) ranks.push_back(space.partition().owner(encode_block_key(c)));
        }
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  ranks.erase(std::remove(ranks.begin(), ranks.end(), space.rank()), ranks.end());
  neighbours_ = ranks;
  neighbours_for_ = keys;
  neighbours_splitters_ = splitters;
}

// Statuses of the nodes of these tets (corners, and the midpoints of tets below the finest).
void HierarchicalFem::refresh_status(const std::vector<Index>& tets) {
  const fem::TetHierarchy& h = model_->hierarchy;
  for (Index t : tets) {
    for (Index n : h.corners(t)) status_[n] = active_->status(n);
    if (h.level[t] < h.max_level)
      for (Index n : h.midpoints[t]) status_[n] = active_->status(n);
  }
}

// The view's needs become the roots to hold (those not up to date wanted, the others dropped).
void HierarchicalFem::hold_needs() {
  want_roots(needs_, true);
  held_for_ = needs_for_;
  held_known_ = true;
}

void HierarchicalFem::want_roots(const std::vector<Index>& needs, bool drop) {
  wanted_.clear();
  std::vector<Index> held;
  for (Index g : needs)
    if (const Index r = model_->hierarchy.local_root(g); r >= 0) held.push_back(r);  // else: outgrown_
  for (Index r : held)
    if (!accurate_[r]) wanted_.push_back(r);
  if (!drop) return;
  // Dropped only after this round's fetch: the rank that held a root before a migration or a
  // re-balance may be the one that answers for it.
  to_hold_ = held;
  drop_pending_ = true;
}

void HierarchicalFem::drop_unheld() {
  if (!drop_pending_) return;
  drop_pending_ = false;
  std::vector<std::uint8_t> keep(accurate_.size(), 0);
  for (Index r : to_hold_) keep[r] = 1;
  for (std::size_t r = 0; r < accurate_.size(); ++r) accurate_[r] = accurate_[r] && keep[r];
  to_hold_.clear();
}

// Roots and tets travel by their global numbers.
void HierarchicalFem::fetch_wanted() {
  const fem::TetHierarchy& h = model_->hierarchy;
  const auto put_state = [&](Bytes& out, Index r) {
    put(out, h.roots[r]);
    put_list(out, global_tets(active_->active_tets({r})));
  };
  std::vector<Index> wanted_ids;
  for (Index r : wanted_) wanted_ids.push_back(h.roots[r]);
  std::map<int, Bytes> requests;
  if (!wanted_.empty())
    for (int q : neighbours_) put_list(requests[q], wanted_ids);
  std::map<int, Bytes> replies;
  for (const Message& m : exchange_->discover(requests)) {
    ByteReader in(m.bytes);
    for (Index g : take_list(in))
      if (const Index r = h.local_root(g); r >= 0 && accurate_[r]) put_state(replies[m.rank], r);
  }
  std::vector<Index> touched;
  const auto take_states = [&](const std::vector<Message>& messages) {
    for (const Message& m : messages)
      for (ByteReader in(m.bytes); !in.done();) {
        const Index r = h.local_root(in.get<Index>());
        const std::vector<Index> state = local_tets(take_list(in));
        if (r < 0 || accurate_[r]) continue;
        const std::vector<Index> stale = active_->active_tets({r});
        touched.insert(touched.end(), stale.begin(), stale.end());
        active_->set_root(r, state);
        touched.insert(touched.end(), state.begin(), state.end());
        accurate_[r] = 1;
      }
  };
  take_states(exchange_->discover(replies));
  // A re-balance can move a region to a rank far from the one that held it: what no neighbour
  // had is asked of every rank (rare: the list is gathered everywhere).
  std::vector<Index> missing;
  for (Index r : wanted_)
    if (!accurate_[r]) missing.push_back(h.roots[r]);
  int any = !missing.empty();
  MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, comm_);
  if (any) {
    const std::vector<Index> counts =
        mpi::all_gather(std::vector<Index>{static_cast<Index>(missing.size())}, comm_);
    const std::vector<Index> all = mpi::all_gather(missing, comm_);
    std::map<int, Bytes> answers;
    std::size_t at = 0;
    for (int q = 0; q < static_cast<int>(counts.size()); at += static_cast<std::size_t>(counts[q++]))
      for (std::size_t i = at; i < at + static_cast<std::size_t>(counts[q]); ++i)
        if (const Index r = h.local_root(all[i]); r >= 0 && accurate_[r] && q != mpi::rank(comm_))
          put_state(answers[q], r);
    take_states(exchange_->discover(answers));
  }
  refresh_status(touched);
  long unanswered = 0;
  for (Index r : wanted_) unanswered += !accurate_[r];
  wanted_.clear();
  raise_collectively(comm_, unanswered == 0
                                ? std::string()
                                : "fem: " + std::to_string(unanswered) +
                                      " level-0 tets near this rank's nodes are up to date on no rank "
                                      "(an fem bug: please report it)");
}

// Each rank's marks to its neighbours (global numbers); keeps the marks of the roots it holds.
void HierarchicalFem::exchange_marks(std::vector<Index>& refine, std::vector<Index>& coarsen) {
  std::map<int, Bytes> outgoing;
  if (!refine.empty() || !coarsen.empty()) {
    Bytes marks;
    put_list(marks, global_tets(refine));
    put_list(marks, global_tets(coarsen));
    for (int q : neighbours_) outgoing[q] = marks;
  }
  for (const Message& m : exchange_->discover(outgoing)) {
    ByteReader in(m.bytes);
    for (Index t : local_tets(take_list(in))) refine.push_back(t);
    for (Index t : local_tets(take_list(in))) coarsen.push_back(t);
  }
  const fem::TetHierarchy& h = model_->hierarchy;
  const auto far = [&](Index t) { return !accurate_[h.root(t)]; };
  refine.erase(std::remove_if(refine.begin(), refine.end(), far), refine.end());
  coarsen.erase(std::remove_if(coarsen.begin(), coarsen.end(), far), coarsen.end());
}

HierarchicalFem::RootStates HierarchicalFem::settle_roots(fem::ActiveSet::StepChanges& changes) {
  const fem::TetHierarchy& h = model_->hierarchy;
  Bytes owned_states;
  RootStates changed;  // root → its state before the step
  for (auto& [r, before] : changes.before)
    if (owns_root(r)) {
      put(owned_states, h.roots[r]);
      put_list(owned_states, global_tets(active_->active_tets({r})));
      changed[r] = before;
    }
  std::map<int, Bytes> outgoing;
  if (!owned_states.empty())
    for (int q : neighbours_) outgoing[q] = owned_states;
  for (const Message& m : exchange_->discover(outgoing))
    for (ByteReader in(m.bytes); !in.done();) {
      const Index r = h.local_root(in.get<Index>());
      const std::vector<Index> state = local_tets(take_list(in));
      if (r < 0 || !accurate_[r] || owns_root(r)) continue;
      const auto was = changes.before.find(r);
      changed[r] = was != changes.before.end() ? was->second : active_->active_tets({r});
      active_->set_root(r, state);
    }
  // A root this rank changed that its owner did not: back to where it was.
  for (auto& [r, before] : changes.before)
    if (accurate_[r] && changed.count(r) == 0) active_->set_root(r, before);
  return changed;
}

// The recovered strain field (Zienkiewicz & Zhu 1987) of the error indicator: at a regular node
// the volume-weighted mean Green strain of the active tets whose forces reach it (the incidence:
// tets with it as a corner, and with a hanging corner it masters, at that weight), summed in the
// incidence's order; halo copies from their owners, hanging nodes from their masters. Linear tets
// have a constant strain each: where the true field varies across a tet (bending, locking) its
// strain departs from the recovered one at its corners. The paper's linear range sees only
// material and geometric nonlinearity, so a locked coarse level, whose own strain is small, never
// refined (issue 28).
// Only where mark() reads it: at the corners of tets that may refine (level < L_max) and of the
// parents that may merge (a node older than a tet it is a corner of), which include the masters
// of hanging nodes (corners of a coarser tet).
void HierarchicalFem::recover_strains(Space& space) {
  const fem::TetHierarchy& h = model_->hierarchy;
  tet_strains_.resize(6 * needed_.size());
  strain_known_.assign(needed_.size(), 0);
  recovered_.assign(6 * view_.size(), 0.0);
  for (std::size_t k = 0; k < view_.owned(); ++k) {
    const std::uint32_t begin = incidence_offset_[k], end = incidence_offset_[k + 1];
    const int node_level = h.node_level[view_node_[k]];
    bool read = false;
    for (std::uint32_t e = begin; e < end && !read; ++e) {
      const int level = h.level[needed_[incidence_corner_[e] / 4]];
      read = level < h.max_level || node_level < level;
    }
    if (!read) continue;
    Real volume = 0;
    Real* out = &recovered_[6 * k];
    for (std::uint32_t e = begin; e < end; ++e) {
      const std::uint32_t i = incidence_corner_[e] / 4;
      const Real* strain = needed_strain(i);
      const Real w = incidence_weight_[e] * needed_rest_[i].volume;
      for (int c = 0; c < 6; ++c) out[c] += w * strain[c];
      volume += w;
    }
    for (int c = 0; c < 6; ++c) out[c] /= volume;
  }
  space.halo().update_values(recovered_.data(), 6, recovered_.data() + 6 * view_.owned());
  interpolate_hanging(recovered_, 6);
}

// The particles follow the active set: nodes that became used are made at their parent edge's
// midpoint (spec §6.3 refine 3) by the rank owning the edge's first node (or making it, for a node
// made in this step), nodes no longer used are removed, the others change status. Then the
// particles migrate to their blocks and the view is gathered again.
void HierarchicalFem::apply_changes(Space& space, const RootStates& changed) {
  const fem::TetHierarchy& h = model_->hierarchy;
  std::vector<Index> touched;
  const auto touch_tet = [&](Index t) {
    for (Index n : h.corners(t)) touched.push_back(n);
    if (h.level[t] < h.max_level)
      for (Index n : h.midpoints[t]) touched.push_back(n);
  };
  for (const auto& [root, before] : changed) {
    for (Index t : before) touch_tet(t);
    for (Index t : active_->active_tets({root})) touch_tet(t);
  }
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());

  ParticleSet& own = space.particles();
  std::vector<bool> keep(own.size(), true);
  std::vector<std::uint8_t> made_here(0);
  std::vector<Index> made;  // nodes made in this step, increasing
  for (Index n : touched) {
    const NodeStatus now = active_->status(n), was = status_[n];
    if (now == was) continue;
    status_[n] = now;
    const std::int32_t s = slot_[n];
    if (now == NodeStatus::Inactive) {
      if (s >= 0 && static_cast<std::size_t>(s) < view_.owned()) keep[static_cast<std::size_t>(s)] = false;
      continue;
    }
    if (was != NodeStatus::Inactive) {
      if (s >= 0 && static_cast<std::size_t>(s) < view_.owned())
        own.int32("status")[s] = static_cast<std::int32_t>(now);
      continue;
    }
    // A new node: into the view if both edge ends are here, as a particle if its first end is ours.
    const Index a = h.node_edge[n][0], b = h.node_edge[n][1];
    const std::int32_t sa = slot_[a], sb = slot_[b];
    const auto owned_or_made_here = [&](Index e, std::int32_t se) {
      const auto found = std::lower_bound(made.begin(), made.end(), e);
      if (found != made.end() && *found == e) return made_here[found - made.begin()] != 0;
      return se >= 0 && static_cast<std::size_t>(se) < view_.owned();
    };
    const bool mine = owned_or_made_here(a, sa);
    made.push_back(n);
    made_here.push_back(mine);
    if (sa < 0 || sb < 0) {
      if (mine)
        throw CollectiveError("fem: the edge of new node " + std::to_string(h.global_node(n)) +
                              " reaches beyond the halo");
      continue;
    }
    const std::size_t slot = view_.size() + made_in_view_.size();
    made_in_view_.push_back(n);
    for (int c = 0; c < 3; ++c) {
      x_.push_back(0.5 *
                   (x_[3 * static_cast<std::size_t>(sa) + c] + x_[3 * static_cast<std::size_t>(sb) + c]));
      v_.push_back(0.5 *
                   (v_[3 * static_cast<std::size_t>(sa) + c] + v_[3 * static_cast<std::size_t>(sb) + c]));
    }
    slot_[n] = static_cast<std::int32_t>(slot);
    if (!mine) continue;
    const std::size_t p = own.size();
    own.resize(p + 1);
    keep.push_back(true);
    own.ids()[p] = static_cast<ParticleId>(h.global_node(n));
    std::copy_n(&x_[3 * slot], 3, own.positions() + 3 * p);
    std::copy_n(&v_[3 * slot], 3, own.real("velocity") + 3 * p);
    own.real("mass")[p] = 0;
    own.int32("status")[p] = static_cast<std::int32_t>(now);
    own.int32("level")[p] = h.node_level[n];
    own.int32("fixed")[p] = model_->fixed[n];
    if (model_->fixed[n]) {
      std::copy_n(h.rest_position(n), 3, own.positions() + 3 * p);
      std::fill_n(own.real("velocity") + 3 * p, 3, 0.0);
    }
  }
  check_reach(space.comm(), "new nodes");
  own.compact(keep);
  space.migrate();
  topology_changed_ = true;
  gather_view(space);
  check_reach(space.comm(), "masters of hanging nodes");
  place_hanging_nodes();
}

// ---------------------------------------------------------------------------------------------
// Forces (spec §6.2 steps 3, 4).

// For each owned regular node k: the (tet, corner, weight) through which its force and mass come,
// in increasing (tet, corner) order, over the active tets with k as a corner (weight 1) or with a
// hanging corner that k masters (its weight). The tets involved are the "needed" tets.
void HierarchicalFem::build_incidence(Space& space) {
  // The same ids may be split differently into owned and halo (after a re-balance): compare both.
  if (!topology_changed_ && view_.ids() == incidence_built_for_ && view_.owned() == incidence_built_own_)
    return;
  const fem::TetHierarchy& h = model_->hierarchy;
  std::vector<std::uint32_t> count(view_.owned() + 1, 0);
  struct Entry {
    std::uint32_t node, corner;
    Real weight;
  };
  std::vector<Entry> entries;
  needed_.clear();
  needed_slots_.clear();
  needed_rest_.clear();
  std::vector<fem::Master> masters;
  // A tet reaches an owned node through a corner or a master of one, which its root holds.
  roots_ = fem::roots_around(h, view_node_.data(), view_.owned());
  for (Index t : active_->active_tets(roots_)) {
    const std::size_t before = entries.size();
    const auto index = static_cast<std::uint32_t>(needed_.size());
    const fem::Corners corners = h.corners(t);
    for (int a = 0; a < 4; ++a) {
      const Index c = corners[a];
      if (status_[c] == NodeStatus::Regular) {
        masters.assign(1, {c, 1.0});
      } else {
        active_->masters(c, masters);
      }
      for (const fem::Master& m : masters) {
        const std::int32_t s = slot_[m.node];
        if (s >= 0 && static_cast<std::size_t>(s) < view_.owned())
          entries.push_back(
              {static_cast<std::uint32_t>(s), 4 * index + static_cast<std::uint32_t>(a), m.weight});
      }
    }
    if (entries.size() == before) continue;
    needed_.push_back(t);
    needed_rest_.push_back(fem::tet_rest_shape(h, t));
    for (Index c : h.corners(t)) {
      needed_slots_.push_back(slot_[c]);
      beyond_ += slot_[c] < 0;
    }
  }
  // Grown by push_back: up to twice the needed tets, held through the solve (issue 34).
  needed_.shrink_to_fit();
  needed_slots_.shrink_to_fit();
  needed_rest_.shrink_to_fit();
  for (const Entry& e : entries) ++count[e.node + 1];
  incidence_offset_.assign(view_.owned() + 1, 0);
  std::partial_sum(count.begin(), count.end(), incidence_offset_.begin());
  incidence_corner_.resize(entries.size());
  incidence_weight_.resize(entries.size());
  std::vector<std::uint32_t> fill(incidence_offset_.begin(), incidence_offset_.end() - 1);
  for (const Entry& e : entries) {  // stable: entries are in (tet, corner) order
    incidence_corner_[fill[e.node]] = e.corner;
    incidence_weight_[fill[e.node]++] = e.weight;
  }
  // Lumped masses (spec §6.3 "Masses"): ρ_T V_T / 4 per corner, hanging shares to the masters.
  Real* mass = space.particles().real("mass");
  for (std::size_t k = 0; k < view_.owned(); ++k) {
    Real m = 0;
    for (std::uint32_t i = incidence_offset_[k]; i < incidence_offset_[k + 1]; ++i) {
      const std::uint32_t tet = incidence_corner_[i] / 4;
      m += incidence_weight_[i] * model_->constants[needed_[tet]].density * needed_rest_[tet].volume / 4;
    }
    mass[k] = m;
  }
  tet_forces_.resize(12 * needed_.size());
  incidence_built_for_ = view_.ids();
  incidence_built_own_ = view_.owned();
  topology_changed_ = false;
  ++layout_;
}

void HierarchicalFem::compute_forces(const std::vector<Real>& x_view, const std::vector<Real>& v_view) {
  const FemSettings& fs = scene_.sections.get<FemSettings>();
  const bool viscous = fs.bulk_viscosity > 0 || fs.shear_viscosity > 0;
  const fem::TetHierarchy& h = model_->hierarchy;
  energies_.clear();
  Real x[4][3], v[4][3], f[4][3];
  for (std::size_t i = 0; i < needed_.size(); ++i) {
    const Index t = needed_[i];
    for (int a = 0; a < 4; ++a) {
      const std::size_t s = static_cast<std::size_t>(needed_slots_[4 * i + a]);
      std::copy_n(&x_view[3 * s], 3, x[a]);
      std::copy_n(&v_view[3 * s], 3, v[a]);
    }
    const fem::RestShape& rest = needed_rest_[i];
    const fem::Stiffness& D = model_->constants[t].D;
    const fem::Mat3 F = fem::deformation_gradient(rest, x);
    const fem::Voigt green = fem::green_strain(F);  // once, for the forces and the energy
    if (viscous)
      fem::element_forces(rest, D, fs.bulk_viscosity, fs.shear_viscosity, x, v, f);
    else
      fem::element_forces(rest, D, F, green, f);
    std::copy_n(&f[0][0], 12, &tet_forces_[12 * i]);
    const std::size_t s0 = static_cast<std::size_t>(needed_slots_[4 * i]);
    if (s0 < view_.owned() && slot_[h.corners(t)[0]] == static_cast<std::int32_t>(s0))
      energies_.push_back(fem::strain_energy(rest, D, green));
  }
  force_.assign(3 * view_.owned(), 0.0);
  for (std::size_t k = 0; k < view_.owned(); ++k)
    for (std::uint32_t e = incidence_offset_[k]; e < incidence_offset_[k + 1]; ++e) {
      const Real* fe = &tet_forces_[3 * incidence_corner_[e]];
      for (int c = 0; c < 3; ++c) force_[3 * k + c] += incidence_weight_[e] * fe[c];
    }
}

// Spec §6.2 step 5: f += m g; v += Δt f/m; v /= 1 + c_m Δt; x += Δt v, regular free nodes only;
// then the colliders.
void HierarchicalFem::integrate(Space& space, Real t, Real dt) {
  ParticleSet& own = space.particles();
  Real* x = own.positions();
  Real* v = own.real("velocity");
  const Real* mass = own.real("mass");
  const std::int32_t* status = own.int32("status");
  const std::int32_t* fixed = own.int32("fixed");
  const Real damping = 1 / (1 + scene_.sections.get<FemSettings>().damping * dt);
  for (std::size_t k = 0; k < view_.owned(); ++k) {
    if (status[k] != static_cast<std::int32_t>(NodeStatus::Regular) || fixed[k]) continue;
    for (int c = 0; c < 3; ++c) {
      v[3 * k + c] = (v[3 * k + c] + dt * (force_[3 * k + c] / mass[k] + gravity_[c])) * damping;
      x[3 * k + c] += dt * v[3 * k + c];
    }
  }
  collide(space, t, dt);
}

// Regular free nodes out of every collider, their velocity by the collider's boundary rule.
void HierarchicalFem::collide(Space& space, Real t, Real dt) {
  if (colliders_.empty()) return;
  ParticleSet& own = space.particles();
  Real* x = own.positions();
  Real* v = own.real("velocity");
  const std::int32_t* status = own.int32("status");
  const std::int32_t* fixed = own.int32("fixed");
  for (std::size_t k = 0; k < view_.owned(); ++k) {
    if (status[k] != static_cast<std::int32_t>(NodeStatus::Regular) || fixed[k]) continue;
    for (std::size_t o = 0; o < colliders_.size(); ++o) {
      const Collider& collider = colliders_[o];
      const Real phi = collider.phi<3>(x + 3 * k, t + dt);
      if (phi > 0) continue;
      Real n[3];
      collider.normal<3>(x + 3 * k, t + dt, n);
      collider.project<3>(x + 3 * k, v + 3 * k, t + dt);
      for (int c = 0; c < 3; ++c) x[3 * k + c] -= phi * n[c];
    }
  }
}

// Spec §6.2 step 6: the hanging particles back on their masters' new positions (the halo copies
// of the masters refreshed first), so that output and checkpoints hold a conforming mesh.
void HierarchicalFem::follow_masters(Space& space) {
  ParticleSet& own = space.particles();
  std::copy_n(own.positions(), 3 * view_.owned(), x_.begin());
  std::copy_n(own.real("velocity"), 3 * view_.owned(), v_.begin());
  space.halo().update_values(x_.data(), 3, x_.data() + 3 * view_.owned());
  space.halo().update_values(v_.data(), 3, v_.data() + 3 * view_.owned());
  place_hanging_nodes();
  for (fem::Index n : hanging_) {
    const auto s = static_cast<std::size_t>(slot_[n]);
    if (s >= view_.owned()) continue;
    std::copy_n(&x_[3 * s], 3, own.positions() + 3 * s);
    std::copy_n(&v_[3 * s], 3, own.real("velocity") + 3 * s);
  }
}

// ---------------------------------------------------------------------------------------------

// Collective: ½ Σ m |v|² over the regular nodes (hanging ones carry no mass).
Real HierarchicalFem::kinetic_energy(const Space& space) const {
  const ParticleSet& own = space.particles();
  const Real* v = own.real("velocity");
  const Real* m = own.real("mass");
  Real e = 0;
  for (std::size_t p = 0; p < own.size(); ++p)
    e += 0.5 * m[p] * (v[3 * p] * v[3 * p] + v[3 * p + 1] * v[3 * p + 1] + v[3 * p + 2] * v[3 * p + 2]);
  MPI_Allreduce(MPI_IN_PLACE, &e, 1, MPI_DOUBLE, MPI_SUM, space.comm());
  return e;
}

std::string HierarchicalFem::progress_note() const {
  if (!adaptive_) return "";
  return "levels +" + std::to_string(refinements_) + " -" + std::to_string(coarsenings_) + " dKE " +
         fmt::format("{:.2e}", level_energy_change_) + " J";
}

GlobalDiagnostics HierarchicalFem::diagnostics(const Space& space) const {
  GlobalDiagnostics d = particle_diagnostics(space);
  d.elastic_energy = reproducible_sums(space.comm(), {energies_})[0];
  return d;
}

// This rank's active tets (those whose corner 0 it owns) over its owned and halo nodes. Collective
// (the halo is rebuilt if the particles moved since it was built).
TetMeshView HierarchicalFem::mesh_view(const Space& space) const {
  const ParticleSet& own = space.particles();
  const ParticleSet& halo = const_cast<Space&>(space).halo().particles();
  mesh_vertices_ = own.empty_like();
  mesh_vertices_.resize(own.size() + halo.size());
  for (auto& field : mesh_vertices_.fields()) {
    const std::size_t bytes = field.bytes_per_particle();
    auto* out = static_cast<unsigned char*>(field.raw());
    std::copy_n(static_cast<const unsigned char*>(own.field(field.name()).raw()), bytes * own.size(), out);
    if (halo.has_field(field.name()))
      std::copy_n(static_cast<const unsigned char*>(halo.field(field.name()).raw()), bytes * halo.size(),
                  out + bytes * own.size());
  }
  // The particles that came here since the last view (a re-balance, a migration) may need roots
  // the model lacks, or whose state is not held yet.
  auto& self = *const_cast<HierarchicalFem*>(this);
  const std::vector<Index> mesh_needs = roots_needed(own.ids(), own.size());
  std::vector<Index> needs;  // the view's too: it stays located
  std::set_union(mesh_needs.begin(), mesh_needs.end(), needs_.begin(), needs_.end(),
                 std::back_inserter(needs));
  self.cover(space.comm(), needs);
  if (adaptive_) {
    self.update_neighbours(space);
    self.want_roots(needs, false);
    self.held_known_ = false;  // the next view drops what only this output needed
    int any = !wanted_.empty();
    MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, space.comm());
    if (any) self.fetch_wanted();
  }
  const fem::TetHierarchy& h = model_->hierarchy;
  std::vector<std::int32_t> local(h.node_count(), -1);
  std::vector<Index> own_nodes(own.size());
  const ParticleId* ids = mesh_vertices_.ids();
  for (std::size_t i = 0; i < mesh_vertices_.size(); ++i) {
    const Index n = h.local_node(static_cast<Index>(ids[i]));  // a halo copy beyond the model: −1
    if (n >= 0) local[n] = static_cast<std::int32_t>(i);
    if (i < own.size()) own_nodes[i] = n;
  }
  mesh_tets_.clear();
  std::vector<std::int32_t>& level = mesh_tet_fields_[0].values;
  level.clear();
  for (Index t : active_->active_tets(fem::roots_around(h, own_nodes.data(), own_nodes.size()))) {
    const fem::Corners c = h.corners(t);
    if (local[c[0]] < 0 || static_cast<std::size_t>(local[c[0]]) >= own.size()) continue;
    if (std::any_of(c.begin(), c.end(), [&](Index n) { return local[n] < 0; })) continue;
    for (Index n : c) mesh_tets_.push_back(local[n]);
    level.push_back(h.level[t]);
  }
  return {&mesh_vertices_, &mesh_tets_, &mesh_tet_fields_};
}

}  // namespace nendo
