# shellcheck shell=bash
# Shared by the batch scripts (jobs/slurm/nendo-chain.sbatch, jobs/slurm/nendo-sweep.sbatch,
# jobs/pbs/nendo-chain.pbs), which source it from their own folder's parent: the site setup
# hooks, the choice of launcher, and asking nendo what a scene resolves to. docs/batch-runs.md
# describes the variables. Functions print their complaints on stderr and return non-zero; the
# caller decides how the job ends.

batch_error() {
  echo "nendo batch: error: $*" >&2
  return 1
}

# Site setup before anything else: NENDO_SETUP (a bash file, sourced) and NENDO_MODULES
# (`module load` of each, with Environment Modules or Lmod). Site init files often use unset
# variables, hence set +u around them.
run_site_setup() {
  local rc=0
  set +u
  if [ -n "${NENDO_SETUP:-}" ]; then
    if [ -f "$NENDO_SETUP" ]; then
      echo "nendo batch: sourcing NENDO_SETUP=$NENDO_SETUP"
      # shellcheck disable=SC1090
      source "$NENDO_SETUP" || rc=$?
      [ "$rc" = 0 ] || batch_error "sourcing NENDO_SETUP=$NENDO_SETUP failed (exit $rc)"
    else
      batch_error "NENDO_SETUP=$NENDO_SETUP: no such file" || rc=1
    fi
  fi
  if [ "$rc" = 0 ] && [ -n "${NENDO_MODULES:-}" ]; then
    load_modules || rc=1
  fi
  set -u
  return "$rc"
}

# A batch shell is not a login shell: `module` may need its init file first.
load_modules() {
  local init
  if ! type module >/dev/null 2>&1; then
    for init in "${MODULESHOME:-/nonexistent}/init/bash" /etc/profile.d/lmod.sh /etc/profile.d/modules.sh \
      /usr/share/lmod/lmod/init/bash /usr/share/modules/init/bash; do
      # shellcheck disable=SC1090
      [ -f "$init" ] && source "$init" && break
    done
  fi
  type module >/dev/null 2>&1 ||
    batch_error "NENDO_MODULES='$NENDO_MODULES' but there is no 'module' command (neither Lmod nor Environment Modules found; define it in NENDO_SETUP)" ||
    return 1
  echo "nendo batch: module load $NENDO_MODULES"
  # shellcheck disable=SC2086
  module load $NENDO_MODULES || batch_error "module load $NENDO_MODULES failed"
}

# Which launcher: NENDO_LAUNCHER (srun or mpirun), else srun inside a Slurm job where srun exists,
# else mpirun.
launcher_name() {
  if [ -n "${NENDO_LAUNCHER:-}" ]; then
    echo "$NENDO_LAUNCHER"
  elif [ -n "${SLURM_JOB_ID:-}" ] && command -v srun >/dev/null 2>&1; then
    echo srun
  else
    echo mpirun
  fi
}

# srun must be told the PMI that the MPI library speaks when the cluster's default is none:
# Open MPI 4 (Debian's) needs PMIx, and without it every rank aborts in MPI_Init. So when neither
# SLURM_MPI_TYPE nor an --mpi= in NENDO_SRUN_ARGS chooses, and MpiDefault is none, use pmix if
# this Slurm has it.
choose_srun_mpi() {
  local default
  [ -z "${SLURM_MPI_TYPE:-}" ] || return 0
  [[ " ${NENDO_SRUN_ARGS:-} " != *" --mpi"* ]] || return 0
  default=$(scontrol show config 2>/dev/null | sed -n 's/^MpiDefault *= *//p' | head -n 1)
  [ -z "$default" ] || [ "$default" = none ] || return 0
  if srun --mpi=list 2>&1 | grep -qw pmix; then
    export SLURM_MPI_TYPE=pmix
    echo "nendo batch: the cluster's MpiDefault is '${default:-unknown}': srun with --mpi=pmix (SLURM_MPI_TYPE=pmix; set SLURM_MPI_TYPE to choose another)"
  fi
}

# shellcheck disable=SC2034  # LAUNCH is for the caller
# Sets LAUNCH to the command that starts the ranks: srun takes the job's allocation (no -n);
# mpirun gets -np RANKS. Usage: set_launch_command RANKS
set_launch_command() {
  local launcher
  launcher=$(launcher_name)
  case "$launcher" in
    srun)
      choose_srun_mpi
      # shellcheck disable=SC2206
      LAUNCH=(srun ${NENDO_SRUN_ARGS:-}) ;;
    mpirun)
      # shellcheck disable=SC2206
      LAUNCH=("${MPIRUN:-mpirun}" -np "$1" ${NENDO_MPIRUN_ARGS:-}) ;;
    *) batch_error "NENDO_LAUNCHER='$launcher': use srun or mpirun" ;;
  esac
}

# The value of KEY in the scene as `nendo run SCENE ARGS` would run it (every override applied).
# A refusal of the scene or the arguments (exit 2) is final; any other failure (a start-up that
# failed on a loaded node: once in CI's SlurmChain, exit status unknown) is tried twice more, and
# each failure is reported with nendo's exit status and the end of what it printed.
# Usage: scene_value KEY SCENE [ARG ...]
scene_value() {
  local key=$1 value="" status=0 attempt errors
  shift
  errors=$(mktemp) || return 1
  for attempt in 1 2 3; do
    status=0
    value=$("$NENDO" run "$@" --get "$key" 2>"$errors") || status=$?
    [ $status -eq 0 ] && break
    echo "nendo batch: '$NENDO run $* --get $key' exited with status $status (attempt $attempt of 3):" >&2
    tail -n 20 "$errors" >&2
    [ $status -eq 2 ] && break
    sleep $((2 * attempt))
  done
  rm -f "$errors"
  [ $status -eq 0 ] || batch_error "cannot tell the scene's $key" || return 1
  [ -n "$value" ] || batch_error "'$NENDO run $* --get $key' printed nothing" || return 1
  echo "$value"
}
