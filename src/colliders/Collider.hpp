#pragma once
// Analytic collision objects shared by every method (spec 002 §11.1): MPM grid velocities, and
// particle velocities of the particle methods. A Collider holds one shape by value (a variant,
// so the per-node call is a switch, never a virtual call), its boundary type, μ_f and its
// constant velocity: the shape at time t is the shape at 0 moved by velocity·t.
//
// Shape contract (PlaneCollider.hpp is the smallest example): kName, the scene's `shape` value;
// scene_keys(), its keys of a `colliders` item bound to ColliderSettings (registered for the scene
// loader and the reference by Collider.cpp); from_settings(ColliderSettings, dimension), which
// validates and throws nendo::Error;
// phi<D>(x), the signed distance of the free region (φ ≤ 0: in collision), 1-Lipschitz;
// normal<D>(x, n), the outward unit normal ∇φ/|∇φ| of the free region. Only the first D
// components of x and n are read or written: in 2D, z is ignored.
#include <cmath>
#include <cstddef>
#include <utility>
#include <variant>
#include <vector>

#include "colliders/BoxCollider.hpp"
#include "colliders/CylinderCollider.hpp"
#include "colliders/PlaneCollider.hpp"
#include "colliders/SphereCollider.hpp"
#include "core/Types.hpp"
#include "scene/Scene.hpp"

namespace nendo {

// The registration list: a new shape is its header, its include above and one line here.
// clang-format off
using ColliderShape = std::variant<
    PlaneCollider,
    BoxCollider,
    SphereCollider,
    CylinderCollider>;
// clang-format on

enum class Boundary { Sticky, Slip, Separate };

class Collider {
 public:
  Collider(ColliderShape shape, Boundary boundary, Real friction, const Vec3& velocity)
      : shape_(std::move(shape)), boundary_(boundary), friction_(friction), velocity_(velocity) {}

  const ColliderShape& shape() const { return shape_; }
  Boundary boundary() const { return boundary_; }
  Real friction() const { return friction_; }
  const Vec3& velocity() const { return velocity_; }

  // φ at x and time t.
  template <int D>
  Real phi(const Real* x, Real time) const {
    Real at_rest[D];
    shape_position<D>(x, time, at_rest);
    return std::visit([&](const auto& shape) { return shape.template phi<D>(at_rest); }, shape_);
  }

  // n at x and time t.
  template <int D>
  void normal(const Real* x, Real time, Real* n) const {
    Real at_rest[D];
    shape_position<D>(x, time, at_rest);
    std::visit([&](const auto& shape) { shape.template normal<D>(at_rest, n); }, shape_);
  }

  // Spec 002 §11.1 on the velocity v (D components) of material at x, time t. Returns whether a
  // response was applied (φ ≤ 0 and, for separate, approaching): such a node is a constraint of
  // the implicit solve (§10.6). Otherwise v is left untouched, bit for bit.
  template <int D>
  bool project(const Real* x, Real* v, Real time) const {
    Real at_rest[D], n[D];
    shape_position<D>(x, time, at_rest);
    const bool contact = std::visit(
        [&](const auto& shape) {
          if (shape.template phi<D>(at_rest) > 0) return false;
          shape.template normal<D>(at_rest, n);
          return true;
        },
        shape_);
    if (!contact) return false;
    if (boundary_ == Boundary::Sticky) {
      for (int a = 0; a < D; ++a) v[a] = velocity_[a];  // v_rel' = 0
      return true;
    }
    Real v_rel[D], v_n = 0;
    for (int a = 0; a < D; ++a) {
      v_rel[a] = v[a] - velocity_[a];
      v_n += v_rel[a] * n[a];
    }
    if (boundary_ == Boundary::Slip) {
      for (int a = 0; a < D; ++a) v[a] -= v_n * n[a];  // v_rel' = v_rel − n v_n, always
      return true;
    }
    if (v_n >= 0) return false;  // separating
    Real v_t[D], v_t_squared = 0;
    for (int a = 0; a < D; ++a) {
      v_t[a] = v_rel[a] - n[a] * v_n;
      v_t_squared += v_t[a] * v_t[a];
    }
    const Real scale = friction_scale(std::sqrt(v_t_squared), -v_n);
    if (scale == 0) {  // static friction: v_rel' = 0
      for (int a = 0; a < D; ++a) v[a] = velocity_[a];
      return true;
    }
    for (int a = 0; a < D; ++a) v[a] = v_t[a] * scale + velocity_[a];
    return true;
  }

  // Coulomb's law at a contact whose normal velocity the collider changed by dv_n ≥ 0 (its normal
  // impulse per unit mass): the factor on the tangential relative velocity, of norm v_t_norm,
  // 1 − μ_f dv_n / ‖v_t‖ while sliding and 0 when static friction holds (and for v_t = 0).
  Real friction_scale(Real v_t_norm, Real dv_n) const {
    if (v_t_norm == 0 || v_t_norm <= friction_ * dv_n) return 0;
    return 1 - friction_ * dv_n / v_t_norm;
  }

 private:
  template <int D>
  void shape_position(const Real* x, Real time, Real* at_rest) const {
    for (int a = 0; a < D; ++a) at_rest[a] = x[a] - velocity_[a] * time;
  }

  ColliderShape shape_;
  Boundary boundary_;
  Real friction_;  // μ_f
  Vec3 velocity_;  // v_co
};

// A block of edge^D grid nodes, numbered i + edge (j + edge k). Node (i, j, k) is the global node
// first + (i, j, k), at origin + dx (first + (i, j, k)): a node's position depends on its global
// index only, so every rank and every ghost copy computes the same bits.
struct NodeBlock {
  Vec3 origin{};  // position of global node 0
  Real dx = 0;
  Int3 first{};
  int edge = 0;
};

// The scene's colliders in scene order; each point sees them one after the other.
class ColliderSet {
 public:
  ColliderSet() = default;
  // Throws nendo::Error naming colliders[i] for an unknown shape or boundary or invalid values.
  ColliderSet(const std::vector<ColliderSettings>& settings, int dimension);

  void add(const Collider& collider) { colliders_.push_back(collider); }
  bool empty() const { return colliders_.empty(); }
  std::size_t size() const { return colliders_.size(); }
  const Collider& operator[](std::size_t i) const { return colliders_[i]; }

  // Every collider in order on the velocity v (D components) at x, time t (spec 002 §11.1).
  // Returns whether any of them applied a response.
  template <int D>
  bool project(const Real* x, Real* v, Real time) const {
    bool any = false;
    for (const Collider& collider : colliders_) any |= collider.template project<D>(x, v, time);
    return any;
  }

  // project() on count points: x[D p + a], v[D p + a].
  template <int D>
  void project_points(const Real* x, Real* v, std::size_t count, Real time) const {
    for (std::size_t p = 0; p < count; ++p) project<D>(x + D * p, v + D * p, time);
  }

  // project() on the nodes of one grid block, skipping nodes of mass exactly 0 (spec 002 §6.3):
  // node i has mass mass[i mass_stride] and velocity velocity[i velocity_stride + a]. Each node
  // gets exactly what project() gives it; a collider whose φ at the block center exceeds the
  // block's half diagonal (plus dx, for rounding) cannot reach any node and is skipped.
  template <int D>
  void project_block(const NodeBlock& block, const Real* mass, std::size_t mass_stride, Real* velocity,
                     std::size_t velocity_stride, Real time) const {
    const int edge = block.edge, edge_k = D == 3 ? edge : 1;
    const Real half = 0.5 * (edge - 1) * block.dx;
    Real center[D];
    for (int a = 0; a < D; ++a)
      center[a] = block.origin[a] + block.dx * static_cast<Real>(block.first[a]) + half;
    const Real reach = half * std::sqrt(Real(D)) + block.dx;
    for (const Collider& collider : colliders_) {
      if (collider.template phi<D>(center, time) > reach) continue;
      std::size_t node = 0;
      for (int k = 0; k < edge_k; ++k) {
        for (int j = 0; j < edge; ++j) {
          for (int i = 0; i < edge; ++i, ++node) {
            if (mass[node * mass_stride] == 0.0) continue;
            const int local[3] = {i, j, k};
            Real x[D];
            for (int a = 0; a < D; ++a)
              x[a] = static_cast<Real>(block.first[a] + local[a]) * block.dx + block.origin[a];
            collider.template project<D>(x, velocity + node * velocity_stride, time);
          }
        }
      }
    }
  }

 private:
  std::vector<Collider> colliders_;
};

}  // namespace nendo
