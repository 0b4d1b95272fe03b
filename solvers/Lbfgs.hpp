#pragma once
// The limited-memory BFGS direction (Nocedal & Wright, Numerical Optimization, 2nd ed., Alg. 7.4:
// the two-loop recursion) with a preconditioner as the initial inverse Hessian H₀, as HOT (Wang et
// al. 2020) uses its multigrid: d = −H g, H the BFGS update of H₀ by the last pairs
// (s = v_{k+1} − v_k, y = g_{k+1} − g_k). Vectors are a rank's owned unknowns; dot products are
// summed over the communicator.
#include <mpi.h>

#include <cmath>
#include <cstddef>
#include <deque>
#include <functional>
#include <numeric>
#include <vector>

#include "core/Types.hpp"

namespace nendo {

class Lbfgs {
 public:
  // out = H₀ in.
  using InitialInverse = std::function<void(const std::vector<Real>& in, std::vector<Real>& out)>;

  explicit Lbfgs(MPI_Comm comm, std::size_t memory = 8) : comm_(comm), memory_(memory) {}

  void clear() { pairs_.clear(); }
  bool empty() const { return pairs_.empty(); }

  // Keeps (s, y) when its curvature s·y is positive (else H would lose definiteness).
  void push(std::vector<Real> s, std::vector<Real> y) {
    const Real sy = dot(s, y), ss = dot(s, s), yy = dot(y, y);
    if (!(sy > 1e-12 * std::sqrt(ss * yy))) return;
    if (pairs_.size() == memory_) pairs_.pop_front();
    pairs_.push_back({std::move(s), std::move(y), 1 / sy});
  }

  // direction = −H gradient.
  void direction(const std::vector<Real>& gradient, const InitialInverse& initial,
                 std::vector<Real>& direction) {
    std::vector<Real>& q = scratch_;
    q = gradient;
    alpha_.resize(pairs_.size());
    for (std::size_t i = pairs_.size(); i-- > 0;) {
      alpha_[i] = pairs_[i].rho * dot(pairs_[i].s, q);
      axpy(-alpha_[i], pairs_[i].y, q);
    }
    initial(q, direction);
    for (std::size_t i = 0; i < pairs_.size(); ++i) {
      const Real beta = pairs_[i].rho * dot(pairs_[i].y, direction);
      axpy(alpha_[i] - beta, pairs_[i].s, direction);
    }
    for (Real& d : direction) d = -d;
  }

 private:
  struct Pair {
    std::vector<Real> s, y;
    Real rho;
  };
  Real dot(const std::vector<Real>& a, const std::vector<Real>& b) const {
    Real local = std::inner_product(a.begin(), a.end(), b.begin(), Real(0)), global = 0;
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, comm_);
    return global;
  }
  static void axpy(Real a, const std::vector<Real>& x, std::vector<Real>& y) {
    for (std::size_t i = 0; i < y.size(); ++i) y[i] += a * x[i];
  }

  MPI_Comm comm_;
  std::size_t memory_;
  std::deque<Pair> pairs_;
  std::vector<Real> alpha_, scratch_;
};

}  // namespace nendo
