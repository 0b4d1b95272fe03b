#!/usr/bin/env bash
# Submits the first link of a chain of Slurm jobs that runs one nendo scene to its end, each
# link resuming from the latest checkpoint (jobs/slurm/nendo-chain.sbatch describes a link).
#
#   jobs/slurm/submit-chain.sh [SBATCH_OPTION ... --] SCENE [NENDO_RUN_ARG ...]
#
# Everything before `--` goes to sbatch, for every link of the chain (the #SBATCH lines of
# nendo-chain.sbatch are the defaults: 2 tasks, 1 h, SIGUSR1 120 s before the limit); everything
# after it to `nendo run`. A --dependency (-d) applies to the first link only (the later ones
# depend on their predecessor). Prints the first link's job id. Examples:
#
#   # 8 ranks, 4 h per link, outputs in out/dam (checkpoints in out/dam/checkpoints unless the
#   # scene says otherwise), at most 10 links, after job 1234 ended well
#   NENDO=$PWD/build/src/app/nendo NENDO_CHAIN_MAX_LINKS=10 \
#     jobs/slurm/submit-chain.sh --ntasks=8 --time=04:00:00 --dependency=afterok:1234 -- \
#     jobs/scenes/mpm/dam-break.yaml --output out/dam
#
#   # nendo from the site's modules
#   NENDO_MODULES="openmpi nendo" jobs/slurm/submit-chain.sh --ntasks=8 -- scene.yaml
#
#   # a fixed 15-minute wall-time budget per link instead of the one derived from --time
#   NENDO=$PWD/build/src/app/nendo jobs/slurm/submit-chain.sh --time=30 -- scene.yaml \
#     --set checkpoint.dir=ckpt/s --walltime 900
#
# Environment (see nendo-chain.sbatch): NENDO, NENDO_SETUP, NENDO_MODULES, NENDO_CHECKPOINT_DIR,
# NENDO_CHAIN_MAX_LINKS, NENDO_CHAIN_MARGIN, NENDO_WALLTIME, NENDO_CHAIN_LOG, NENDO_LAUNCHER,
# NENDO_SRUN_ARGS, MPIRUN, NENDO_MPIRUN_ARGS; and
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

# The options of every link, and the first link's dependency, which the later ones must not repeat.
LINK_OPTS=()
FIRST_OPTS=()
for ((i = 0; i < ${#SBATCH_OPTS[@]}; i++)); do
  o=${SBATCH_OPTS[i]}
  case "$o" in
    --export*) die "--export is not supported: the chain's settings travel in the environment" ;;
    --dependency=* | -d?*) FIRST_OPTS+=("$o") ;;
    --dependency | -d)
      [ $((i + 1)) -lt ${#SBATCH_OPTS[@]} ] || die "$o needs a value"
      FIRST_OPTS+=("$o" "${SBATCH_OPTS[i + 1]}")
      i=$((i + 1)) ;;
    *) LINK_OPTS+=("$o") ;;
  esac
done
[ -f "$1" ] || die "scene file not found: $1"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
export NENDO_CHAIN_SCRIPT=${NENDO_CHAIN_SCRIPT:-$here/nendo-chain.sbatch}
[ -f "$NENDO_CHAIN_SCRIPT" ] || die "no $NENDO_CHAIN_SCRIPT"

# The binary by absolute path, so that every link finds the same one; a plain `nendo` that only
# the site setup (NENDO_SETUP, NENDO_MODULES) puts on PATH is looked up by each link.
NENDO=${NENDO:-nendo}
if [[ $NENDO != */* ]] && command -v "$NENDO" >/dev/null; then
  NENDO=$(command -v "$NENDO")
elif [[ $NENDO != */* ]]; then
  [ -n "${NENDO_SETUP:-}${NENDO_MODULES:-}" ] ||
    die "'$NENDO' is not on PATH; set NENDO=/path/to/nendo, or NENDO_MODULES / NENDO_SETUP to put it there"
fi
if [[ $NENDO == */* ]]; then
  [ -x "$NENDO" ] || die "NENDO=$NENDO is not an executable"
  NENDO=$(cd "$(dirname "$NENDO")" && pwd -P)/$(basename "$NENDO")
fi
export NENDO

if [ ${#LINK_OPTS[@]} -gt 0 ]; then
  NENDO_CHAIN_SBATCH_ARGS=$(printf '%q ' "${LINK_OPTS[@]}")
else
  NENDO_CHAIN_SBATCH_ARGS=
fi
export NENDO_CHAIN_SBATCH_ARGS
export NENDO_CHAIN_LINK=1

sbatch --parsable "${LINK_OPTS[@]}" "${FIRST_OPTS[@]}" "$NENDO_CHAIN_SCRIPT" "$@" | sed 's/;.*//'
