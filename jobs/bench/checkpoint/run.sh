#!/usr/bin/env bash
# The checkpoint benchmark sweep of docs/performance.md: the disk's own bandwidth with dd, then
# checkpoint write and read of 1 M and 10 M particles on 1 and 2 ranks.
#
#   bash jobs/bench/checkpoint/run.sh [DIR]     # DIR: where the files go (default /var/tmp/nendo-ckbench)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
DIR=${1:-/var/tmp/nendo-ckbench}
BENCH=${NENDO_BUILD_DIR:-build}/jobs/bench/nendo_checkpoint_bench
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
mkdir -p "$DIR"
disk() {
  echo "== the disk: dd if=/dev/zero of=$DIR/dd.bin bs=1M count=2048 conv=fdatasync (3 times)"
  for _ in 1 2 3; do
    dd if=/dev/zero of="$DIR/dd.bin" bs=1M count=2048 conv=fdatasync 2>&1 | tail -1
    rm -f "$DIR/dd.bin"
  done
}
disk
for particles in 1000000 10000000; do
  for ranks in 1 2; do
    echo "== $particles particles, $ranks ranks"
    mpirun -np "$ranks" "$BENCH" --particles "$particles" --repeat 3 --dir "$DIR"
  done
done
disk  # again: the disk's speed drifts on shared machines
