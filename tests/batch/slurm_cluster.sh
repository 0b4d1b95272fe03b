#!/usr/bin/env bash
# A throw-away single-node Slurm cluster on loopback, for testing batch scripts for real.
#
#   tests/batch/slurm_cluster.sh start STATEDIR   # write configs, start munged, slurmctld, slurmd
#   tests/batch/slurm_cluster.sh stop  STATEDIR   # cancel the jobs, stop the three daemons
#   tests/batch/slurm_cluster.sh env   STATEDIR   # print the environment the clients need
#
# After `start`, point the Slurm clients at the cluster with
#   export SLURM_CONF=STATEDIR/slurm.conf
# (jobs submitted with that in the environment inherit it, so sbatch works inside jobs too).
#
# Everything lives under STATEDIR: a fresh munge key and munged socket/pid/log/seed, slurm.conf,
# the controller state, the slurmd spool, the pid files, the logs (STATEDIR/log/) and a job
# completion record (STATEDIR/log/jobcomp.log: one line per finished job with its JobId,
# JobState and ExitCode, the only record of finished jobs, since there is no accounting
# database). Nothing outside STATEDIR is written or read except the packages' plugins, so `start`
# works right after `apt-get install slurm-wlm munge` without the packages' services running, and
# two clusters with different STATEDIRs can coexist (free ports are picked at start).
#
# Made for a container without systemd or a writable cgroup hierarchy: proctrack/linuxproc,
# task/none, no job accounting, no prolog/epilog. The daemons run as the invoking user; as root
# (the usual case in a container) SlurmUser is root. As a non-root user, slurmd cannot switch to
# other users, so only that user's jobs run.
#
# Environment: SLURM_CLUSTER_TIMEOUT (seconds to wait for the node to be idle, default 60),
# SLURM_CLUSTER_PORT (first port to try for slurmctld; default 6817).
set -euo pipefail

usage() {
  sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

[ $# -eq 2 ] || usage
ACTION=$1
STATEDIR=$2
mkdir -p "$STATEDIR"
STATEDIR=$(cd "$STATEDIR" && pwd -P)

CONF=$STATEDIR/slurm.conf
LOG=$STATEDIR/log
MUNGE=$STATEDIR/munge
SOCKET=$MUNGE/munge.socket.2
TIMEOUT=${SLURM_CLUSTER_TIMEOUT:-60}

# Slurm and munge live in /usr/sbin, which is not on every user's PATH.
export PATH=$PATH:/usr/sbin:/sbin
export SLURM_CONF=$CONF

die() {
  echo "slurm_cluster.sh: error: $*" >&2
  exit 1
}

need() {
  for p in "$@"; do
    command -v "$p" >/dev/null ||
      die "'$p' not found; install the Debian packages: apt-get install slurm-wlm munge"
  done
}

show_logs() {
  for f in "$LOG"/munged.log "$LOG"/slurmctld.log "$LOG"/slurmd.log; do
    [ -f "$f" ] || continue
    echo "---- tail of $f" >&2
    tail -n 25 "$f" >&2
  done
}

# The pid in a pid file, if that process is alive and is the daemon the file is named after
# (slurmctld.pid, slurmd.pid, munged.pid): a stale file must not make us signal another process.
live_pid() {
  local pid name
  [ -s "$1" ] || return 1
  pid=$(cat "$1")
  name=$(basename "$1" .pid)
  [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
  [ "$(basename "$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | head -n 1)")" = "$name" ] || return 1
  echo "$pid"
}

port_busy() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Two consecutive free ports from $1 on.
free_ports() {
  local p=$1
  while port_busy "$p" || port_busy $((p + 1)); do
    p=$((p + 2))
    [ "$p" -lt 65000 ] || die "no free port pair found"
  done
  echo "$p"
}

# Stops the process in pid file $1 (TERM, then KILL after $2 seconds).
stop_pid() {
  local pid i
  pid=$(live_pid "$1") || { rm -f "$1"; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < $2 * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$1"; return 0; }
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$1"
}

write_conf() {
  local user cpus boards sockets cores threads mem port hw
  user=$(id -un)
  # The node as slurmd sees it (CPUs, sockets, cores, threads, memory), renamed to localhost.
  hw=$(slurmd -C | head -n 1) || die "slurmd -C failed"
  cpus=$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$hw")
  boards=$(sed -n 's/.*Boards=\([0-9]*\).*/\1/p' <<<"$hw")
  sockets=$(sed -n 's/.*SocketsPerBoard=\([0-9]*\).*/\1/p' <<<"$hw")
  cores=$(sed -n 's/.*CoresPerSocket=\([0-9]*\).*/\1/p' <<<"$hw")
  threads=$(sed -n 's/.*ThreadsPerCore=\([0-9]*\).*/\1/p' <<<"$hw")
  mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$hw")
  [ -n "$cpus" ] && [ -n "$mem" ] || die "cannot parse 'slurmd -C': $hw"
  port=$(free_ports "${SLURM_CLUSTER_PORT:-6817}")

  cat >"$CONF" <<EOF
# Written by tests/batch/slurm_cluster.sh: a single-node cluster on loopback.
ClusterName=nendotest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET
StateSaveLocation=$STATEDIR/ctld
SlurmdSpoolDir=$STATEDIR/spool
SlurmctldPidFile=$STATEDIR/slurmctld.pid
SlurmdPidFile=$STATEDIR/slurmd.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$STATEDIR/plugstack.conf
MailProg=/bin/true
# No systemd, no cgroups in a container: track processes through /proc, no task binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$LOG/jobcomp.log
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# Finished jobs leave squeue after 10 s; signalled jobs are killed 5 s after SIGTERM.
MinJobAge=10
KillWait=5
InactiveLimit=0
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=localhost NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=$cpus Boards=$boards SocketsPerBoard=$sockets CoresPerSocket=$cores ThreadsPerCore=$threads RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
  # An empty SPANK plugin list, not the system's /etc/slurm/plugstack.conf.
  : >"$STATEDIR/plugstack.conf"
}

start_munged() {
  # A fresh key per cluster, readable by its owner only (munged refuses anything looser).
  mkdir -p "$MUNGE"
  chmod 755 "$MUNGE"
  if [ ! -s "$MUNGE/munge.key" ]; then
    (umask 077 && dd if=/dev/urandom of="$MUNGE/munge.key" bs=1024 count=1 status=none)
  fi
  chmod 400 "$MUNGE/munge.key"
  rm -f "$SOCKET" "$SOCKET.lock"
  # --force: munged distrusts directories writable by others along the path (e.g. /tmp) and
  # running as root; this is a private test cluster.
  munged --force --socket="$SOCKET" --key-file="$MUNGE/munge.key" --pid-file="$MUNGE/munged.pid" \
    --seed-file="$MUNGE/munged.seed" --log-file="$LOG/munged.log" ||
    { show_logs; die "munged did not start"; }
  local i
  for ((i = 0; i < 100; i++)); do
    [ -S "$SOCKET" ] && break
    sleep 0.1
  done
  munge --socket="$SOCKET" -n </dev/null | unmunge --socket="$SOCKET" >/dev/null ||
    { show_logs; die "munged does not answer on $SOCKET"; }
}

start() {
  need munged munge unmunge slurmctld slurmd sinfo scontrol
  # Unix socket paths (munge socket, slurmd spool sockets) are limited to 107 characters.
  [ ${#STATEDIR} -le 60 ] ||
    die "STATEDIR path too long for Unix sockets (${#STATEDIR} > 60 characters): $STATEDIR"
  if live_pid "$STATEDIR/slurmctld.pid" >/dev/null || live_pid "$STATEDIR/slurmd.pid" >/dev/null ||
    live_pid "$MUNGE/munged.pid" >/dev/null; then
    echo "slurm_cluster.sh: a cluster is running in $STATEDIR; stopping it first" >&2
    stop
  fi
  # A fresh cluster each time: no jobs or node state from an earlier start.
  rm -rf "$STATEDIR/ctld" "$STATEDIR/spool"
  mkdir -p "$LOG" "$STATEDIR/ctld" "$STATEDIR/spool"
  # Job ids start from 1 again: a fresh completion record.
  : >"$LOG/jobcomp.log"
  chmod 755 "$STATEDIR" "$LOG"
  write_conf
  start_munged
  # -c: clear any saved jobs; -i: ignore state files that do not match.
  slurmctld -f "$CONF" -c -i || { show_logs; die "slurmctld did not start"; }
  slurmd -f "$CONF" -N localhost || { show_logs; die "slurmd did not start"; }

  local deadline=$((SECONDS + TIMEOUT)) state=""
  while ((SECONDS < deadline)); do
    state=$(sinfo -h -n localhost -o %T 2>/dev/null || true)
    case "$state" in
      idle) break ;;
      drain* | down* | fail*)
        # A node that registered before its configuration settled; bring it back once.
        scontrol update NodeName=localhost State=RESUME 2>/dev/null || true ;;
    esac
    sleep 0.5
  done
  if [ "$state" != idle ]; then
    echo "slurm_cluster.sh: node state after ${TIMEOUT}s: '${state}'" >&2
    scontrol show node localhost >&2 2>&1 || true
    show_logs
    stop || true
    die "the node did not become idle within ${TIMEOUT}s (logs in $LOG)"
  fi
  echo "slurm_cluster.sh: cluster up in $STATEDIR (SLURM_CONF=$CONF, controller port $(sed -n 's/^SlurmctldPort=//p' "$CONF"))"
}

stop() {
  # Cancel what is still queued or running, and give the job processes a moment to go.
  if [ -f "$CONF" ] && live_pid "$STATEDIR/slurmctld.pid" >/dev/null; then
    local jobs i
    jobs=$(squeue -h -o %i 2>/dev/null || true)
    if [ -n "$jobs" ]; then
      # shellcheck disable=SC2086
      scancel $jobs 2>/dev/null || true
      for ((i = 0; i < 40; i++)); do
        [ -z "$(squeue -h -t all -o %i 2>/dev/null | head -n 1)" ] && break
        # Completing jobs stay listed for MinJobAge; only pending/running ones matter.
        [ -z "$(squeue -h -t pending,running,completing -o %i 2>/dev/null)" ] && break
        sleep 0.5
      done
    fi
  fi
  # Both Slurm daemons at once (each takes a second or two to shut down), then munged.
  stop_pid "$STATEDIR/slurmd.pid" 10 &
  stop_pid "$STATEDIR/slurmctld.pid" 10 &
  wait
  stop_pid "$MUNGE/munged.pid" 5
  rm -f "$SOCKET" "$SOCKET.lock"
  echo "slurm_cluster.sh: cluster in $STATEDIR stopped"
}

case "$ACTION" in
  start) start ;;
  stop) stop ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  *) usage ;;
esac
