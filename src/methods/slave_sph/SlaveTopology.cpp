// The slave set's life: initial seeding (spec §3.14, §4.2), insertion where adjacent masters
// separate (§3.11) and the rest volumes and initial density that both rely on. Every decision is
// a function of positions and global ids only, so it is the same on any rank count.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/Mpi.hpp"
#include "methods/slave_sph/SlaveSph.hpp"

namespace nendo {
namespace {

Real distance2(const Real* a, const Real* b) {
  const Real dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
  return dx * dx + dy * dy + dz * dz;
}

struct SeedPoint {
  BlockKey block;
  std::int32_t body;
  std::int64_t i, j, k;
  bool operator<(const SeedPoint& o) const {
    if (block != o.block) return block < o.block;
    if (body != o.body) return body < o.body;
    if (k != o.k) return k < o.k;
    if (j != o.j) return j < o.j;
    return i < o.i;
  }
  bool operator==(const SeedPoint& o) const {
    return block == o.block && body == o.body && i == o.i && j == o.j && k == o.k;
  }
};

// An insertion candidate (§3.11), ordered as the spec processes them: by the unordered pair of
// master ids, then by which of the two departed.
struct Candidate {
  ParticleId low, high, id;
  std::int32_t direction, owner, body, pad;
  Real x[3];
  bool operator<(const Candidate& o) const {
    if (low != o.low) return low < o.low;
    if (high != o.high) return high < o.high;
    return direction < o.direction;
  }
};

}  // namespace

void SlaveSph::initialize(Space& space) {
  ParticleSet& ps = space.particles();
  for (std::size_t p = 0; p < ps.size(); ++p) {
    ps.int32("kind")[p] = kMaster;
    Eigen::Map<Eigen::Matrix<Real, 3, 3, Eigen::RowMajor>>(ps.real("F") + 9 * p).setIdentity();
    if (plastic_) {
      Eigen::Map<Eigen::Matrix<Real, 3, 3, Eigen::RowMajor>>(ps.real("Fp") + 9 * p).setIdentity();
      ps.real("Jp")[p] = 1;
    }
    std::fill_n(ps.uint64("adjacent") + kMaxAdjacent * p, kMaxAdjacent, kNone);
  }
  build_adjacency(space);
  if (settings_.slaves) seed_slaves(space);
  compute_rest_volumes(space);
}

// I3: the masters of the same body within γ r (r = d/2) of each owned master, by id.
void SlaveSph::build_adjacency(Space& space) {
  gather_local(space);
  std::vector<std::uint32_t> items(view_.size());
  for (std::uint32_t c = 0; c < view_.size(); ++c) items[c] = c;
  cells_.build(x_.data(), view_.ids().data(), items, kernel_.support());
  const Real reach = settings_.gamma * 0.5 * d_;
  ParticleId* adjacent = space.particles().uint64("adjacent");
  int overfull = 0;
  CellList::Range around[9];
  std::vector<ParticleId> found;
  for (std::uint32_t a = 0; a < view_.owned(); ++a) {
    cells_.around_point(&x_[3 * a], around);
    found.clear();
    for (const CellList::Range& r : around)
      for (std::uint32_t k = r.begin; k < r.end; ++k) {
        const std::uint32_t b = *cells_.item(k);
        if (b != a && body_[b] == body_[a] && distance2(&x_[3 * a], &x_[3 * b]) < reach * reach)
          found.push_back(view_.id(b));
      }
    std::sort(found.begin(), found.end());
    if (found.size() > std::size_t(kMaxAdjacent)) overfull = 1;
    std::copy_n(found.begin(), std::min<std::size_t>(found.size(), kMaxAdjacent),
                adjacent + kMaxAdjacent * a);
  }
  MPI_Allreduce(MPI_IN_PLACE, &overfull, 1, MPI_INT, MPI_MAX, space.comm());
  if (overfull)
    throw Error(
        fmt::format("slave_sph: a master has more than {} masters within gamma r = {} m; lower "
                    "slave_sph.gamma (the lattice's 6 face neighbours need gamma > 2)",
                    kMaxAdjacent, reach));
}

// I2: the master lattice shifted by half a spacing, where a master of the body lies within 2h.
// Each rank creates the points in the blocks it owns (its halo holds every master within 2h of
// them); ids follow the order (block key, body, point), numbered by one exclusive scan.
void SlaveSph::seed_slaves(Space& space) {
  const Real reach2 = kernel_.support_squared();
  const int me = space.rank();
  std::vector<SeedPoint> points;
  for (std::size_t c = 0; c < view_.size(); ++c) {
    const Real* x = &x_[3 * c];
    std::int64_t lo[3], hi[3];
    for (int a = 0; a < 3; ++a) {
      lo[a] = static_cast<std::int64_t>(std::ceil((x[a] - kernel_.support()) / d_));
      hi[a] = static_cast<std::int64_t>(std::floor((x[a] + kernel_.support()) / d_));
    }
    for (std::int64_t k = lo[2]; k <= hi[2]; ++k)
      for (std::int64_t j = lo[1]; j <= hi[1]; ++j)
        for (std::int64_t i = lo[0]; i <= hi[0]; ++i) {
          const Real p[3] = {Real(i) * d_, Real(j) * d_, Real(k) * d_};
          if (distance2(p, x) >= reach2) continue;
          const BlockKey key = space.geometry().key_of(p);
          if (space.partition().owner(key) != me) continue;
          points.push_back({key, body_[c], i, j, k});
        }
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());

  ParticleSet& ps = space.particles();
  std::uint64_t next = 0;
  for (std::size_t p = 0; p < ps.size(); ++p) next = std::max<std::uint64_t>(next, ps.ids()[p] + 1);
  MPI_Allreduce(MPI_IN_PLACE, &next, 1, MPI_UINT64_T, MPI_MAX, space.comm());
  std::uint64_t mine = points.size(), first = 0;
  MPI_Exscan(&mine, &first, 1, MPI_UINT64_T, MPI_SUM, space.comm());
  if (me == 0) first = 0;
  const std::size_t n0 = ps.size();
  ps.resize(n0 + points.size());
  for (std::size_t q = 0; q < points.size(); ++q) {
    const std::size_t p = n0 + q;
    ps.ids()[p] = next + first + q;
    const Real x[3] = {Real(points[q].i) * d_, Real(points[q].j) * d_, Real(points[q].k) * d_};
    std::copy_n(x, 3, ps.positions() + 3 * p);
    ps.int32("kind")[p] = kSlave;
    ps.int32("body")[p] = points[q].body;
    ps.real("volume")[p] = d_ * d_ * d_;  // V_s (A3)
    Eigen::Map<Eigen::Matrix<Real, 3, 3, Eigen::RowMajor>>(ps.real("F") + 9 * p).setIdentity();
    if (plastic_) {
      Eigen::Map<Eigen::Matrix<Real, 3, 3, Eigen::RowMajor>>(ps.real("Fp") + 9 * p).setIdentity();
      ps.real("Jp")[p] = 1;
    }
    std::fill_n(ps.uint64("adjacent") + kMaxAdjacent * p, kMaxAdjacent, kNone);
  }
  space.migrate();
}

// I4, I5: n_max, the largest slave number density Σ_t w over the initial slaves of a body (self
// included), and the masters' rest volumes V⁰ = m / Σ_s m_s W_sm with m_s = V_s Σ_m m_m W_sm,
// each body on its own particles. Without slaves the masters stand in for them (V_s = d³).
void SlaveSph::compute_rest_volumes(Space& space) {
  gather_local(space);
  const bool own_slaves = settings_.slaves;
  auto is_slave = [&](std::uint32_t c) { return own_slaves ? kind_[c] == kSlave : kind_[c] == kMaster; };
  std::vector<std::uint32_t> items(view_.size());
  for (std::uint32_t c = 0; c < view_.size(); ++c) items[c] = c;
  cells_.build(x_.data(), view_.ids().data(), items, kernel_.support());
  CellList::Range around[9];
  std::vector<Real> slave_mass(view_.size(), 0.0);
  Real density_max = 0;
  for (std::uint32_t s = 0; s < view_.owned(); ++s) {
    if (!is_slave(s)) continue;
    cells_.around_point(&x_[3 * s], around);
    Real m = 0, number = 0;
    for (const CellList::Range& r : around)
      for (std::uint32_t k = r.begin; k < r.end; ++k) {
        const std::uint32_t t = *cells_.item(k);
        if (body_[t] != body_[s]) continue;
        const Real w = kernel_.w(distance2(&x_[3 * s], &x_[3 * t]));
        if (kind_[t] == kMaster) m += mass_[t] * w;
        if (kind_[t] == kSlave) number += w;
      }
    slave_mass[s] = d_ * d_ * d_ * m;
    density_max = std::max(density_max, number);
  }
  MPI_Allreduce(&density_max, &n_max_, 1, MPI_DOUBLE, MPI_MAX, space.comm());
  space.halo().update_values(slave_mass.data(), 1, slave_mass.data() + view_.owned());
  Real* volume = space.particles().real("volume");
  for (std::uint32_t m = 0; m < view_.owned(); ++m) {
    if (kind_[m] != kMaster) continue;
    cells_.around_point(&x_[3 * m], around);
    Real rho = 0;
    for (const CellList::Range& r : around)
      for (std::uint32_t k = r.begin; k < r.end; ++k) {
        const std::uint32_t s = *cells_.item(k);
        if (is_slave(s) && body_[s] == body_[m])
          rho += slave_mass[s] * kernel_.w(distance2(&x_[3 * s], &x_[3 * m]));
      }
    volume[m] = mass_[m] / rho;
  }
  // The halo built above holds the seeded volumes, and the first step reads the halo masters'
  // rest volumes (the solve's Jacobi diagonal): they are sent now.
  space.halo().update(space.particles(), {"volume"});
}

// S11 (§3.11, A13): an adjacent pair farther apart than 2h is dropped, and each of its masters b,
// seen from the other a, gets a slave at (x_s + 2 x_b)/3, x_s the slave near a closest to b,
// unless the slave number density there (self term W(0) included) would exceed n_max.
// Candidates are decided in the spec's order on every rank alike: the pairs are found by their
// masters' owners, the density of the existing slaves by the owner of the new position, and the
// sequential test against the candidates accepted before is the same computation everywhere.
// A new slave's id is kInsertedBit | (id of a) << 3 | adjacency slot: unique, with no exchange.
void SlaveSph::insert_slaves(Space& space) {
  ParticleSet& ps = space.particles();
  space.halo().update(ps, {"position"});
  view_.gather("position", x_);

  // Every master, owned or halo, is a row of the candidate lists, which are in id order.
  auto master_with_id = [&](ParticleId id) -> std::int64_t {
    const auto it =
        std::lower_bound(candidate_rows_.begin(), candidate_rows_.end(), id,
                         [&](std::uint32_t r, ParticleId x) { return view_.id(candidates_.row(r)) < x; });
    return it != candidate_rows_.end() && view_.id(candidates_.row(*it)) == id ? candidates_.row(*it) : -1;
  };
  struct Pending {
    std::uint32_t a, b;
    int slot;
  };
  std::vector<Pending> pending;
  ParticleId* adjacent = ps.uint64("adjacent");
  const Real reach2 = kernel_.support_squared();
  for (std::size_t r = 0; r < row_master_.size(); ++r) {
    if (!owned_row(r)) continue;
    const std::uint32_t a = row_master_[r];
    for (int k = 0; k < kMaxAdjacent; ++k) {
      ParticleId& b_id = adjacent[kMaxAdjacent * a + k];
      if (b_id == kNone) continue;
      const std::int64_t b = master_with_id(b_id);
      if (b >= 0 && distance2(&x_[3 * a], &x_[3 * b]) <= reach2) continue;
      b_id = kNone;  // one-shot: the pair is no longer adjacent
      if (b >= 0) pending.push_back({a, static_cast<std::uint32_t>(b), k});
    }
  }
  std::uint64_t total = pending.size();
  MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_UINT64_T, MPI_SUM, space.comm());
  if (total == 0) return;

  std::vector<std::uint32_t> slaves;
  for (std::uint32_t c = 0; c < view_.size(); ++c)
    if (kind_[c] == kSlave && alive_[c] && !(c < view_.owned() && dead_owned_[c])) slaves.push_back(c);
  cells_.build(x_.data(), view_.ids().data(), slaves, kernel_.support());
  CellList::Range around[9];
  std::vector<Candidate> mine;
  for (const Pending& p : pending) {
    const Real* xa = &x_[3 * p.a];
    const Real* xb = &x_[3 * p.b];
    cells_.around_point(xa, around);
    std::int64_t nearest = -1;
    Real best = std::numeric_limits<Real>::infinity();
    for (const CellList::Range& r : around)
      for (std::uint32_t k = r.begin; k < r.end; ++k) {
        const std::uint32_t s = *cells_.item(k);
        if (distance2(&x_[3 * s], xa) >= reach2) continue;
        const Real d2 = distance2(&x_[3 * s], xb);
        if (d2 < best) best = d2, nearest = s;
      }
    if (nearest < 0) continue;
    Candidate c{};
    c.low = std::min(view_.id(p.a), view_.id(p.b));
    c.high = std::max(view_.id(p.a), view_.id(p.b));
    c.direction = view_.id(p.a) > view_.id(p.b);
    c.id = kInsertedBit | (view_.id(p.a) << 3) | ParticleId(p.slot);
    c.body = body_[p.b];
    for (int a = 0; a < 3; ++a) c.x[a] = (x_[3 * nearest + a] + 2 * xb[a]) / 3;  // (23), m = 2, n = 1
    c.owner = space.partition().owner(space.geometry().key_of(c.x));
    mine.push_back(c);
  }
  std::vector<Candidate> all = mpi::all_gather(mine, space.comm());
  std::sort(all.begin(), all.end());
  std::vector<Real> density(all.size(), 0.0);
  for (std::size_t q = 0; q < all.size(); ++q) {
    if (all[q].owner != space.rank()) continue;
    cells_.around_point(all[q].x, around);
    for (const CellList::Range& r : around)
      for (std::uint32_t k = r.begin; k < r.end; ++k)
        density[q] += kernel_.w(distance2(&x_[3 * *cells_.item(k)], all[q].x));
  }
  MPI_Allreduce(MPI_IN_PLACE, density.data(), static_cast<int>(density.size()), MPI_DOUBLE, MPI_SUM,
                space.comm());
  std::vector<std::size_t> accepted;
  for (std::size_t q = 0; q < all.size(); ++q) {
    Real rho = kernel_.w(0) + density[q];
    for (std::size_t earlier : accepted) rho += kernel_.w(distance2(all[earlier].x, all[q].x));
    if (rho <= n_max_) accepted.push_back(q);
  }
  for (std::size_t q : accepted) {
    if (all[q].owner != space.rank()) continue;
    const std::size_t p = ps.size();
    ps.resize(p + 1);
    ps.ids()[p] = all[q].id;
    std::copy_n(all[q].x, 3, ps.positions() + 3 * p);
    ps.int32("kind")[p] = kSlave;
    ps.int32("body")[p] = all[q].body;
    ps.real("volume")[p] = d_ * d_ * d_;
    Eigen::Map<Eigen::Matrix<Real, 3, 3, Eigen::RowMajor>>(ps.real("F") + 9 * p).setIdentity();
    std::fill_n(ps.uint64("adjacent") + kMaxAdjacent * p, kMaxAdjacent, kNone);
    ++events_.inserted;
  }
}

}  // namespace nendo
