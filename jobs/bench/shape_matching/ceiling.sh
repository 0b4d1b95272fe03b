#!/bin/bash
# The node's 2-core ceiling for the 1 M-vertex box of run.py (docs/performance.md, issue 31): two
# independent 1-rank runs started together; each prints its loop time. Run under
# `flock /tmp/nendo-bench.lock` like every benchmark.
#   jobs/bench/shape_matching/ceiling.sh [BUILD=build] [OUT=/tmp/nendo-sm-ceiling]
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
out=${2:-/tmp/nendo-sm-ceiling}
mkdir -p "$out"
for run in a b; do
  mpirun -np 1 --bind-to none "$build/src/app/nendo" run "$here/bar.yaml" --output "$out/$run" --steps 20 \
    --set "bodies.0.max=[0.99, 0.99, 0.99]" --set grid.dx=0.03 >"$out/$run.log" 2>&1 &
done
wait
grep -h "steps to t\|time per stage" "$out/a.log" "$out/b.log"
