#!/usr/bin/env bash
# Two builds of the MPM benchmark, interleaved: A, B, A, B, ... one repeat each, so that the
# machine's drift (about 10 % within minutes on a shared VM) falls on both alike; prints every
# run and the median of each. For before/after figures of a change under 5 %.
#   bash jobs/bench/mpm/compare.sh BENCH_A BENCH_B [STEPS] [ROUNDS] [-- extra bench options]
#   e.g. bash jobs/bench/mpm/compare.sh /tmp/base/build/jobs/bench/nendo_mpm_bench build/jobs/bench/nendo_mpm_bench 60 5
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
a=${1:?BENCH_A}
b=${2:?BENCH_B}
steps=${3:-60}
rounds=${4:-5}
shift $(($# < 4 ? $# : 4))
[[ ${1:-} == -- ]] && shift
rate() {
  flock /tmp/nendo-bench.lock "$1" "$here/collision.yaml" --steps "$steps" --repeat 1 "${@:2}" |
    grep -oP 'particle-steps/s: \K\S+'
}
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
ra=() rb=()
for ((r = 1; r <= rounds; ++r)); do
  ra+=("$(rate "$a" "$@")")
  rb+=("$(rate "$b" "$@")")
  echo "round $r: A ${ra[-1]}  B ${rb[-1]} particle-steps/s"
done
ma=$(printf '%s\n' "${ra[@]}" | median)
mb=$(printf '%s\n' "${rb[@]}" | median)
awk -v a="$ma" -v b="$mb" 'BEGIN {printf "median: A %.4g  B %.4g  B/A %.3f\n", a, b, b / a}'
