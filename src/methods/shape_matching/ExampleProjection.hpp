#pragma once
// The example projection of spec 001 §4.3 on one group's weights: the pieces that do not touch
// particles, so that tests can check them on the spec's unit cases.
#include <Eigen/Core>

#include "core/Types.hpp"

namespace nendo::shape_matching {

using Mat3 = Eigen::Matrix<Real, 3, 3>;

// A symmetric 3×3 as (S00, S11, S22, S01, S02, S12) (spec §2, vec6).
inline void vec6(const Mat3& s, Real* out) {
  out[0] = s(0, 0), out[1] = s(1, 1), out[2] = s(2, 2);
  out[3] = s(0, 1), out[4] = s(0, 2), out[5] = s(1, 2);
}

// I + Σ_k w_k D_k for the vec6 deltas D_k = vec6(S_r^k − I) (spec §4.3, "target stretch").
inline Mat3 stretch_from(const Real* weights, const Real* deltas, int n) {
  Real e[6] = {0, 0, 0, 0, 0, 0};
  for (int k = 0; k < n; ++k)
    for (int c = 0; c < 6; ++c) e[c] += weights[k] * deltas[6 * k + c];
  Mat3 s;
  s << 1 + e[0], e[3], e[4], e[3], 1 + e[1], e[5], e[4], e[5], 1 + e[2];
  return s;
}

// The paper's negative-weight removal over W[0..count), in the active-set form of spec §6 (§9 A5):
// the smallest negative weight becomes 0 and its magnitude is taken evenly from the weights still
// active; repeats until none is negative. Keeps Σ W; at most count − 1 passes.
inline void remove_negative_weights(Real* w, int count) {
  bool active[64];
  for (int k = 0; k < count; ++k) active[k] = true;
  int remaining = count;
  while (remaining > 1) {
    int j = -1;
    for (int k = 0; k < count; ++k)
      if (active[k] && (j < 0 || w[k] < w[j])) j = k;
    if (w[j] >= 0) break;
    const Real a = -w[j];
    w[j] = 0, active[j] = false, --remaining;
    for (int k = 0; k < count; ++k)
      if (active[k]) w[k] -= a / remaining;
  }
}

// Return-to-rest blending (§4.3): W'_0 = W_0 + (1 − β) Σ_{k≥1} W_k, W'_k = β W_k.
inline void blend_toward_rest(Real* w, int count, Real beta) {
  Real moved = 0;
  for (int k = 1; k < count; ++k) moved += (1 - beta) * w[k], w[k] *= beta;
  w[0] += moved;
}

// W = [1 − Σ w, w] from the least-squares weights w of examples 1..n (Eq. 7), negatives removed and
// blended toward rest: the weights the goal uses. `out` has n + 1 entries.
inline void example_weights(const Real* w, int n, Real beta, Real* out) {
  Real sum = 0;
  for (int k = 0; k < n; ++k) out[k + 1] = w[k], sum += w[k];
  out[0] = 1 - sum;
  remove_negative_weights(out, n + 1);
  blend_toward_rest(out, n + 1, beta);
}

}  // namespace nendo::shape_matching
