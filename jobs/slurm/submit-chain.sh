#!/usr/bin/env bash
# Submits the first link of a chain of Slurm jobs that runs one nendo scene to its end, each
# link resuming from the latest checkpoint (jobs/slurm/nendo-chain.sbatch describes a link).
#
#   jobs/slurm/submit-chain.sh [SBATCH_OPTION ... --] SCENE [NENDO_RUN_ARG ...]
#
# Everything before `--` goes to sbatch, for every link of the chain (the #SBATCH lines of
# nendo-chain.sbatch are the defaults: 2 tasks, 1 h, SIGUSR1 120 s before the limit); everything
# after it to `nendo run`. Prints the first link's job id. Examples:
#
#   # 8 ranks, 4 h per link, checkpoints in ckpt/dam, at most 10 links
#   NENDO=$PWD/build/src/app/nendo NENDO_CHECKPOINT_DIR=ckpt/dam NENDO_CHAIN_MAX_LINKS=10 \
#     jobs/slurm/submit-chain.sh --ntasks=8 --time=04:00:00 -- jobs/scenes/mpm/dam-break.yaml
#
#   # a fixed 15-minute wall-time budget per link instead of the one derived from --time
#   NENDO=$PWD/build/src/app/nendo jobs/slurm/submit-chain.sh --time=30 -- scene.yaml \
#     --set checkpoint.dir=ckpt/s --walltime 900
#
# Environment (see nendo-chain.sbatch): NENDO, NENDO_CHECKPOINT_DIR, NENDO_CHAIN_MAX_LINKS,
# NENDO_CHAIN_MARGIN, NENDO_WALLTIME, NENDO_CHAIN_LOG, MPIRUN, NENDO_MPIRUN_ARGS; and
# NENDO_CHAIN_SCRIPT to submit another copy of nendo-chain.sbatch.
# Do not pass --export to sbatch: the chain's settings travel in the exported environment.
set -euo pipefail

die() {
  echo "submit-chain.sh: error: $*" >&2
  exit 2
}

SBATCH_OPTS=()
has_sep=0
for a in "$@"; do [ "$a" != "--" ] || has_sep=1; done
if [ "$has_sep" = 1 ]; then
  while [ "$1" != "--" ]; do
    SBATCH_OPTS+=("$1")
    shift
  done
  shift
fi
[ $# -ge 1 ] || die "usage: submit-chain.sh [SBATCH_OPTION ... --] SCENE [NENDO_RUN_ARG ...]"
for o in "${SBATCH_OPTS[@]}"; do
  [[ $o != --export* ]] || die "--export is not supported: the chain's settings travel in the environment"
done
[ -f "$1" ] || die "scene file not found: $1"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
export NENDO_CHAIN_SCRIPT=${NENDO_CHAIN_SCRIPT:-$here/nendo-chain.sbatch}
[ -f "$NENDO_CHAIN_SCRIPT" ] || die "no $NENDO_CHAIN_SCRIPT"

# The binary by absolute path, so that every link finds the same one.
NENDO=${NENDO:-nendo}
if [[ $NENDO != */* ]]; then
  NENDO=$(command -v "$NENDO") || die "'nendo' is not on PATH; set NENDO=/path/to/nendo"
fi
[ -x "$NENDO" ] || die "NENDO=$NENDO is not an executable"
export NENDO=$(cd "$(dirname "$NENDO")" && pwd -P)/$(basename "$NENDO")

if [ ${#SBATCH_OPTS[@]} -gt 0 ]; then
  NENDO_CHAIN_SBATCH_ARGS=$(printf '%q ' "${SBATCH_OPTS[@]}")
else
  NENDO_CHAIN_SBATCH_ARGS=
fi
export NENDO_CHAIN_SBATCH_ARGS
export NENDO_CHAIN_LINK=1

sbatch --parsable "${SBATCH_OPTS[@]}" "$NENDO_CHAIN_SCRIPT" "$@" | sed 's/;.*//'
