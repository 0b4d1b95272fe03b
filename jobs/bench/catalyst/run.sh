#!/usr/bin/env bash
# The Catalyst overhead benchmark (issue 5; docs/performance.md records the figures): the MPM
# benchmark scene (jobs/bench/mpm/collision.yaml, 1 024 000 particles) without Catalyst, with a
# script that never triggers (every step asks it, jobs/bench/catalyst/idle.py), and with
# particle and block extracts written every 10 steps (jobs/catalyst/extracts.py).
#   bash jobs/bench/catalyst/run.sh [RANKS...]      (default: 1 2; build in ./build)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
BENCH=${NENDO_BUILD_DIR:-build}/jobs/bench/nendo_mpm_bench
STEPS=${STEPS:-100}
REPEAT=${REPEAT:-3}
for ranks in "${@:-1 2}"; do
  for mode in off idle extracts; do
    rm -rf /tmp/nendo-bench
    case $mode in
      off) extra=() ;;
      idle) extra=(--catalyst jobs/bench/catalyst/idle.py) ;;
      extracts) extra=(--catalyst jobs/catalyst/extracts.py --set catalyst.every_steps=10) ;;
    esac
    echo "== $ranks rank(s), Catalyst $mode"
    mpirun -np "$ranks" "$BENCH" jobs/bench/mpm/collision.yaml --steps "$STEPS" --repeat "$REPEAT" "${extra[@]}" |
      grep -E "^(repeat|particle-steps|bytes|catalyst)"
  done
done
