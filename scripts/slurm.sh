#!/usr/bin/env bash
# slurm.sh - a private single-host Slurm cluster on loopback for Tradewind's
# tests, benchmarks and demo: munge, slurmctld, several slurmd nodes (one
# process each, `slurmd -N`), fake GPUs as GRES, and slurmrestd with JWT.
#
# Usage: scripts/slurm.sh start|stop|status|env [STATE_DIR]
#   STATE_DIR  default: $TW_SLURM_DIR, else .state/slurm in the project
#
#   start   installs what is missing (Debian: munge slurmctld slurmd
#           slurm-client slurmrestd slurm-wlm-jwt-plugin), writes the config
#           under STATE_DIR, starts what is not running, waits until every
#           node is idle and the REST API answers, writes STATE_DIR/slurm.env
#           (source it) and STATE_DIR/jwt.token.  Idempotent: running
#           daemons are left alone, dead ones (a killed slurmd) restarted.
#   stop    cancels the cluster's jobs and stops exactly the processes whose
#           pids it recorded (checking /proc/PID/comm first), then the job
#           steps a killed slurmd left behind.  `stop STATE_DIR --purge`
#           also deletes STATE_DIR.
#   status  one line per daemon; exit 0 when all run, 3 otherwise.
#   env     prints STATE_DIR/slurm.env (exit 3 when the cluster never
#           started).
#
# Exit codes: 0 ok, 1 failure, 77 this machine cannot run the cluster (not
# root, or the packages cannot be installed): tests skip on 77.
#
# Layout (fixed names, so the tests and docs can rely on them):
#   partition gpu: gpu1..gpuN, each TW_SLURM_NODE_CPUS CPUs, TW_SLURM_NODE_MEM_MB
#                  MB and TW_SLURM_GPUS_PER_NODE GPUs of type TW_SLURM_GPU_TYPE,
#                  feature rack=r1
#   partition cpu: cpu1..cpuM (the default partition), feature rack=r2
#
# Tunables (environment; give the same values again to re-run start on a
# running cluster, as the config must not change under running daemons):
#   TW_SLURM_GPU_NODES=2  TW_SLURM_CPU_NODES=2  TW_SLURM_NODE_CPUS=8
#   TW_SLURM_NODE_MEM_MB=8000  TW_SLURM_GPUS_PER_NODE=2  TW_SLURM_GPU_TYPE=a100
#   TW_SLURM_REST_PORT    slurmrestd port (default: derived from STATE_DIR,
#                         kept in STATE_DIR/ports so restarts reuse it)
#   TW_SLURM_PORT_BASE    slurmctld port; slurmd i listens on BASE+10+i
#   TW_SLURM_SLURMD_TIMEOUT=10  seconds before a silent slurmd's node goes
#                         DOWN (Slurm's default is 300; loopback needs less)
#   TW_SLURM_JOB_REQUEUE=0  0: a job on a failed node ends NODE_FAIL and the
#                         broker places it again; 1: Slurm requeues it itself
#   TW_SLURM_JWT_LIFESPAN=86400  seconds the token in jwt.token stays valid
#   TW_SLURM_TIMEOUT=60   seconds to wait for each readiness check
#   TW_SLURM_NO_INSTALL=1 never call apt-get
set -uo pipefail
unset SLURM_JWT # the daemons and the client calls here authenticate with munge

PROJECT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CMD=${1:-}
shift || true
STATE_DIR=${TW_SLURM_DIR:-$PROJECT/.state/slurm}
PURGE=0
for a in "$@"; do
  case "$a" in
    --purge) PURGE=1 ;;
    *) STATE_DIR=$a ;;
  esac
done
case "$STATE_DIR" in /*) ;; *) STATE_DIR="$PWD/$STATE_DIR" ;; esac

GPU_NODES=${TW_SLURM_GPU_NODES:-2}
CPU_NODES=${TW_SLURM_CPU_NODES:-2}
NODE_CPUS=${TW_SLURM_NODE_CPUS:-8}
NODE_MEM=${TW_SLURM_NODE_MEM_MB:-8000}
GPUS=${TW_SLURM_GPUS_PER_NODE:-2}
GPU_TYPE=${TW_SLURM_GPU_TYPE:-a100}
SLURMD_TIMEOUT=${TW_SLURM_SLURMD_TIMEOUT:-10}
JOB_REQUEUE=${TW_SLURM_JOB_REQUEUE:-0}
JWT_LIFESPAN=${TW_SLURM_JWT_LIFESPAN:-86400}
TIMEOUT=${TW_SLURM_TIMEOUT:-60}
API=v0.0.38
PKGS=(munge slurmctld slurmd slurm-client slurmrestd slurm-wlm-jwt-plugin curl)

ETC=$STATE_DIR/etc
RUN=$STATE_DIR/run
LOGD=$STATE_DIR/log
MUNGE=$STATE_DIR/munge
CONF=$ETC/slurm.conf

log() { printf '[slurm.sh %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
cannot() { log "SKIPPED: $*"; exit 77; }
# shellcheck source=scripts/apt-quiet.sh
. "$(dirname "${BASH_SOURCE[0]}")/apt-quiet.sh"
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# running PID COMM: PID is alive (not a zombie) and runs COMM.  Checking the
# name guards against a recycled pid: we never signal a stranger.
running() {
  local stat
  [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ] || return 1
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ] # an exited daemon lingers as a zombie until reaped
}
# pid_of PIDFILE COMM: prints the pid when the file names a live COMM
pid_of() {
  local pid
  [ -s "$1" ] || return 1
  pid=$(cat "$1" 2>/dev/null) || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  running "$pid" "$2" || return 1
  echo "$pid"
}
alive() { pid_of "$1" "$2" >/dev/null; }

node_names() {
  local i
  for i in $(seq 1 "$GPU_NODES"); do echo "gpu$i"; done
  for i in $(seq 1 "$CPU_NODES"); do echo "cpu$i"; done
}

# Whether any TCP port BASE..BASE+39 is bound on this machine.
ports_free() {
  command -v ss >/dev/null 2>&1 || return 0
  ! ss -Htan 2>/dev/null | awk '{print $4}' | sed 's/.*://' |
    awk -v b="$1" '$1 >= b && $1 < b + 40 {found=1} END {exit !found}'
}

# Ports: derived from the state dir so two clusters (two build dirs) do not
# collide, then kept so a restart reuses them.
choose_ports() {
  if [ -s "$STATE_DIR/ports" ]; then
    # shellcheck disable=SC1091
    . "$STATE_DIR/ports"
  else
    # Below 32768, where Linux's ephemeral ports (tests on port 0, outbound
    # connections) start, and past any base whose ports are taken.
    local h i
    h=$(printf '%s' "$STATE_DIR" | cksum | cut -d' ' -f1)
    for i in $(seq 0 299); do
      PORT_BASE=$((20000 + ((h + i) % 300) * 40))
      ports_free "$PORT_BASE" && break
    done
    PORT_BASE=${TW_SLURM_PORT_BASE:-$PORT_BASE}
    REST_PORT=${TW_SLURM_REST_PORT:-$((PORT_BASE + 1))}
  fi
  PORT_BASE=${TW_SLURM_PORT_BASE:-$PORT_BASE}
  REST_PORT=${TW_SLURM_REST_PORT:-$REST_PORT}
}

# ---------------------------------------------------------------- stop
our_stepds() { # slurmstepd processes of this cluster (SLURM_CONF in environ)
  local d c
  for d in /proc/[0-9]*; do
    { read -r c <"$d/comm"; } 2>/dev/null || continue
    [ "$c" = slurmstepd ] || continue
    tr '\0' '\n' <"$d/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$CONF" && echo "${d#/proc/}"
  done
}
with_descendants() { # PIDS... -> those pids and all their descendants
  ps -eo pid=,ppid= | awk -v roots="$*" '
    BEGIN { n = split(roots, r, " "); for (i = 1; i <= n; i++) keep[r[i]] = 1 }
    { pp[$1] = $2 }
    END { do { ch = 0; for (p in pp) if (!(p in keep) && (pp[p] in keep)) { keep[p] = 1; ch = 1 } } while (ch)
          for (p in keep) print p }'
}
stop_one() { # stop_one PIDFILE COMM LABEL
  local pid
  if ! pid=$(pid_of "$1" "$2"); then
    rm -f "$1"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 1 100); do
    running "$pid" "$2" || { log "stopped $3 (pid $pid)"; rm -f "$1"; return 0; }
    sleep 0.1
  done
  log "$3 (pid $pid) ignored SIGTERM; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null
  rm -f "$1"
}
do_stop() {
  if [ ! -d "$STATE_DIR" ]; then
    log "no state dir $STATE_DIR; nothing to stop"
    return 0
  fi
  if alive "$RUN/slurmctld.pid" slurmctld && [ -f "$CONF" ]; then
    export SLURM_CONF=$CONF
    if [ -n "$(squeue -h -o %i 2>/dev/null | head -1)" ]; then
      log "cancelling jobs"
      squeue -h -t R,S -o %i 2>/dev/null | xargs -r scancel --full --signal=KILL 2>/dev/null
      squeue -h -o %i 2>/dev/null | xargs -r scancel 2>/dev/null
      for _ in $(seq 1 100); do
        [ -z "$(squeue -h -t R,CG,S -o %i 2>/dev/null | head -1)" ] && break
        sleep 0.1
      done
    fi
  fi
  for _ in $(seq 1 30); do # let steps clean up while their slurmd still runs
    [ -z "$(our_stepds)" ] && break
    sleep 0.1
  done
  stop_one "$RUN/slurmrestd.pid" slurmrestd slurmrestd
  local pf n
  for pf in "$RUN"/slurmd-*.pid; do
    [ -e "$pf" ] || continue
    n=${pf##*/slurmd-}
    stop_one "$pf" slurmd "slurmd ${n%.pid}"
  done
  stop_one "$RUN/slurmctld.pid" slurmctld slurmctld
  stop_one "$MUNGE/munged.pid" munged munged
  local stepds victims
  stepds=$(our_stepds | tr '\n' ' ')
  if [ -n "${stepds// /}" ]; then
    # shellcheck disable=SC2086
    victims=$(with_descendants $stepds | tr '\n' ' ')
    log "killing job steps left by a killed slurmd: pids $victims"
    # shellcheck disable=SC2086
    kill -KILL $victims 2>/dev/null
  fi
  if [ $PURGE = 1 ]; then
    rm -rf "$STATE_DIR"
    log "removed $STATE_DIR"
  fi
  return 0
}

# ---------------------------------------------------------------- status
do_status() {
  local bad=0 pf n
  if [ ! -d "$STATE_DIR" ]; then
    echo "no cluster in $STATE_DIR"
    return 3
  fi
  check() { # PIDFILE COMM LABEL
    local pid
    if pid=$(pid_of "$1" "$2"); then echo "$3 running (pid $pid)"; else echo "$3 not running"; bad=1; fi
  }
  check "$MUNGE/munged.pid" munged munged
  check "$RUN/slurmctld.pid" slurmctld slurmctld
  for n in $(node_names); do check "$RUN/slurmd-$n.pid" slurmd "slurmd $n"; done
  check "$RUN/slurmrestd.pid" slurmrestd slurmrestd
  if alive "$RUN/slurmctld.pid" slurmctld; then
    SLURM_CONF=$CONF sinfo -N -o '%N %P %T %c %m %G %f' 2>/dev/null
  fi
  [ $bad = 0 ] || return 3
}

# ---------------------------------------------------------------- start
install_missing() {
  local missing=() p
  for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "${TW_SLURM_NO_INSTALL:-0}" = 1 ] && cannot "missing packages: ${missing[*]} (TW_SLURM_NO_INSTALL=1)"
  command -v apt-get >/dev/null || cannot "missing packages: ${missing[*]} and no apt-get"
  log "installing: ${missing[*]}"
  local t0 rc=0
  t0=$(now_ms)
  tw_apt_quiet slurm "${missing[@]}" || rc=$?
  [ $rc = 0 ] || cannot "apt-get could not install ${missing[*]} (rc=$rc)"
  log "installed in $(($(now_ms) - t0)) ms"
}

wait_for() { # wait_for DESCRIPTION COMMAND...: polls every 0.1 s up to TIMEOUT
  local what=$1 deadline
  shift
  deadline=$(($(now_ms) + TIMEOUT * 1000))
  until "$@" >/dev/null 2>&1; do
    if [ "$(now_ms)" -gt "$deadline" ]; then
      log "timeout waiting for $what"
      return 1
    fi
    if [ -n "${GUARD_PIDFILE:-}" ] && [ -s "$GUARD_PIDFILE" ] && ! alive "$GUARD_PIDFILE" "$GUARD_COMM"; then
      log "$GUARD_COMM exited while waiting for $what"
      return 1
    fi
    sleep 0.1
  done
}

write_config() { # writes $1 (slurm.conf) and $2 (gres.conf)
  local def_mem=$((NODE_MEM / NODE_CPUS)) i files=""
  {
    cat <<EOF
# generated by scripts/slurm.sh: a private test cluster; edits are overwritten
ClusterName=tradewind
SlurmctldHost=localhost
SlurmctldPort=$PORT_BASE
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCK
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$ETC/jwt_hs256.key
StateSaveLocation=$STATE_DIR/state
SlurmdSpoolDir=$STATE_DIR/spool/%n
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd-%n.pid
SlurmctldLogFile=$LOGD/slurmctld.log
SlurmdLogFile=$LOGD/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# without a default, a job that asks no memory takes the whole node's
DefMemPerCPU=$def_mem
SchedulerType=sched/backfill
# start batch jobs at once instead of after Slurm's 3 s batching delay
SchedulerParameters=batch_sched_delay=0
# several slurmd on one host may advertise more than the host has
SlurmdParameters=config_overrides
MpiDefault=none
MailProg=/bin/true
PropagateResourceLimits=NONE
ReturnToService=2
KillWait=5
SlurmdTimeout=$SLURMD_TIMEOUT
JobRequeue=$JOB_REQUEUE
# finished jobs stay visible for an hour, so a broker that was down a while
# still reads their exit codes
MinJobAge=3600
MaxJobCount=100000
EOF
    [ "$GPUS" -gt 0 ] && echo "GresTypes=gpu"
    local gres=""
    [ "$GPUS" -gt 0 ] && gres=" Gres=gpu:$GPU_TYPE:$GPUS"
    local n=0 name
    for name in $(node_names); do
      n=$((n + 1))
      case "$name" in
        gpu*) echo "NodeName=$name NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((PORT_BASE + 10 + n)) CPUs=$NODE_CPUS RealMemory=$NODE_MEM$gres Feature=rack=r1 State=UNKNOWN" ;;
        *) echo "NodeName=$name NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((PORT_BASE + 10 + n)) CPUs=$NODE_CPUS RealMemory=$NODE_MEM Feature=rack=r2 State=UNKNOWN" ;;
      esac
    done
    if [ "$GPU_NODES" -gt 0 ]; then
      echo "PartitionName=gpu Nodes=gpu[1-$GPU_NODES] MaxTime=INFINITE State=UP"
    fi
    if [ "$CPU_NODES" -gt 0 ]; then
      echo "PartitionName=cpu Nodes=cpu[1-$CPU_NODES] Default=YES MaxTime=INFINITE State=UP"
    fi
  } >"$1"
  : >"$2"
  if [ "$GPUS" -gt 0 ] && [ "$GPU_NODES" -gt 0 ]; then
    if [ "$GPUS" -gt 1 ]; then files="$STATE_DIR/dev/gpu[0-$((GPUS - 1))]"; else files="$STATE_DIR/dev/gpu0"; fi
    echo "NodeName=gpu[1-$GPU_NODES] Name=gpu Type=$GPU_TYPE File=$files" >"$2"
  fi
}

do_start() {
  local t_start
  t_start=$(now_ms)
  [ "$(id -u)" = 0 ] || cannot "must run as root (daemons, mknod, apt-get)"
  [[ "$GPU_NODES" =~ ^[0-9]+$ && "$CPU_NODES" =~ ^[0-9]+$ ]] || die "node counts must be numbers"
  [ $((GPU_NODES + CPU_NODES)) -ge 1 ] || die "at least one node is needed"
  install_missing
  mkdir -p "$ETC" "$RUN" "$LOGD" "$MUNGE" "$STATE_DIR/state" "$STATE_DIR/spool" \
    "$STATE_DIR/dev" "$STATE_DIR/jobs" || die "cannot create $STATE_DIR"
  chmod 755 "$STATE_DIR" "$ETC" "$RUN" "$LOGD" "$STATE_DIR/spool" "$STATE_DIR/dev"
  chmod 711 "$MUNGE"           # the socket reachable by every user, the key not listable
  chmod 700 "$STATE_DIR/state"
  chmod 1777 "$STATE_DIR/jobs" # job output of any user
  local n
  for n in $(node_names); do mkdir -p "$STATE_DIR/spool/$n"; done
  choose_ports
  printf 'PORT_BASE=%s\nREST_PORT=%s\n' "$PORT_BASE" "$REST_PORT" >"$STATE_DIR/ports"

  # A unix socket path is limited to 108 bytes: a deep state dir gets its
  # munge socket under /run instead.
  MUNGE_SOCK=$MUNGE/munge.socket
  if [ ${#MUNGE_SOCK} -gt 100 ]; then
    MUNGE_SOCK=/run/tw-slurm-$(printf '%s' "$STATE_DIR" | cksum | cut -d' ' -f1)/munge.socket
    mkdir -p "$(dirname "$MUNGE_SOCK")"
    chmod 711 "$(dirname "$MUNGE_SOCK")"
  fi
  [ -s "$MUNGE/munge.key" ] || head -c 1024 /dev/urandom >"$MUNGE/munge.key"
  chmod 400 "$MUNGE/munge.key"
  [ -s "$ETC/jwt_hs256.key" ] || head -c 32 /dev/urandom >"$ETC/jwt_hs256.key"
  chmod 600 "$ETC/jwt_hs256.key"
  local g
  for g in $(seq 0 $((GPUS - 1))); do
    # Slurm wants a device file per GPU (a file-less gpu is dropped): char
    # devices with /dev/null's numbers stand in.
    [ -c "$STATE_DIR/dev/gpu$g" ] || { rm -f "$STATE_DIR/dev/gpu$g"; mknod -m 666 "$STATE_DIR/dev/gpu$g" c 1 3; }
  done

  local new_conf new_gres any_running=0
  new_conf=$(mktemp "$ETC/.slurm.conf.XXXXXX")
  new_gres=$(mktemp "$ETC/.gres.conf.XXXXXX")
  write_config "$new_conf" "$new_gres"
  alive "$MUNGE/munged.pid" munged && any_running=1
  alive "$RUN/slurmctld.pid" slurmctld && any_running=1
  alive "$RUN/slurmrestd.pid" slurmrestd && any_running=1
  for n in $(node_names); do alive "$RUN/slurmd-$n.pid" slurmd && any_running=1; done
  if ! cmp -s "$new_conf" "$CONF" || ! cmp -s "$new_gres" "$ETC/gres.conf"; then
    if [ $any_running = 1 ] && [ -e "$CONF" ]; then
      rm -f "$new_conf" "$new_gres"
      die "the config in $STATE_DIR would change while daemons run; run '$0 stop $STATE_DIR' first"
    fi
    mv "$new_conf" "$CONF"
    mv "$new_gres" "$ETC/gres.conf"
  else
    rm -f "$new_conf" "$new_gres"
  fi
  chmod 644 "$CONF" "$ETC/gres.conf"
  export SLURM_CONF=$CONF

  # munge
  if alive "$MUNGE/munged.pid" munged; then
    log "munged already running (pid $(cat "$MUNGE/munged.pid"))"
  else
    rm -f "$MUNGE/munged.pid" "$MUNGE_SOCK" "$MUNGE_SOCK.lock"
    # -f: the state dir may sit under a world-writable sticky directory
    munged -f --socket="$MUNGE_SOCK" --key-file="$MUNGE/munge.key" --pid-file="$MUNGE/munged.pid" \
      --log-file="$LOGD/munged.log" --seed-file="$MUNGE/munged.seed" ||
      die "munged failed; see $LOGD/munged.log"
    wait_for munged munge -S "$MUNGE_SOCK" -n || die "munged not answering; see $LOGD/munged.log"
    log "munged started (pid $(cat "$MUNGE/munged.pid"))"
  fi

  # slurmctld
  if alive "$RUN/slurmctld.pid" slurmctld; then
    log "slurmctld already running (pid $(cat "$RUN/slurmctld.pid"))"
  else
    rm -f "$RUN/slurmctld.pid"
    slurmctld -f "$CONF" || die "slurmctld failed; see $LOGD/slurmctld.log"
    GUARD_PIDFILE=$RUN/slurmctld.pid GUARD_COMM=slurmctld wait_for slurmctld scontrol ping ||
      { tail -20 "$LOGD/slurmctld.log" >&2; die "slurmctld not answering"; }
    log "slurmctld started (pid $(cat "$RUN/slurmctld.pid"), port $PORT_BASE)"
  fi

  # slurmd, one per node
  local pf
  for n in $(node_names); do
    pf=$RUN/slurmd-$n.pid
    if alive "$pf" slurmd; then
      log "slurmd $n already running (pid $(cat "$pf"))"
    else
      rm -f "$pf"
      slurmd -f "$CONF" -N "$n" || die "slurmd $n failed; see $LOGD/slurmd-$n.log"
      wait_for "slurmd $n pid file" alive "$pf" slurmd || die "slurmd $n did not start; see $LOGD/slurmd-$n.log"
      log "slurmd $n started (pid $(cat "$pf"))"
    fi
  done

  # A node that was DOWN (its slurmd killed) comes back by itself once its
  # slurmd registers again (ReturnToService=2).
  nodes_ready() {
    local states
    states=$(sinfo -h -N -o '%T' 2>/dev/null) || return 1
    [ -n "$states" ] || return 1
    ! grep -qvE '^(idle|mixed|allocated|completing)$' <<<"$states"
  }
  if ! wait_for "nodes idle" nodes_ready; then
    sinfo -N -o '%N %T %E' >&2
    die "nodes not idle; see $LOGD/slurmctld.log and $LOGD/slurmd-*.log"
  fi

  # token (a fresh one on every start: the old may be close to expiry)
  local jwt
  jwt=$(scontrol token lifespan="$JWT_LIFESPAN" 2>/dev/null | sed -n 's/^SLURM_JWT=//p')
  [ -n "$jwt" ] || die "scontrol token failed (is slurm-wlm-jwt-plugin installed?)"
  (umask 077 && printf '%s\n' "$jwt" >"$STATE_DIR/jwt.token.new" && mv "$STATE_DIR/jwt.token.new" "$STATE_DIR/jwt.token")

  # slurmrestd refuses to run as root or SlurmUser: it drops to nobody.
  if alive "$RUN/slurmrestd.pid" slurmrestd; then
    log "slurmrestd already running (pid $(cat "$RUN/slurmrestd.pid"))"
  else
    rm -f "$RUN/slurmrestd.pid"
    # No daemon mode: setsid detaches it; the wrapper writes its own pid
    # and execs, so the pid file names slurmrestd itself.  Only the
    # openapi plugins: the dbv0.0.3x ones need slurmdbd.
    SLURM_JWT=daemon SLURM_CONF="$CONF" setsid bash -c 'echo $$ > "$0"; exec "$@"' \
      "$RUN/slurmrestd.pid" slurmrestd -f "$CONF" -a rest_auth/jwt \
      -s openapi/v0.0.38,openapi/v0.0.37,openapi/v0.0.36 -u nobody "127.0.0.1:$REST_PORT" \
      </dev/null >>"$LOGD/slurmrestd.log" 2>&1 &
    wait_for "slurmrestd pid" alive "$RUN/slurmrestd.pid" slurmrestd ||
      { tail -20 "$LOGD/slurmrestd.log" >&2; die "slurmrestd did not start"; }
    log "slurmrestd started (pid $(cat "$RUN/slurmrestd.pid"), 127.0.0.1:$REST_PORT)"
  fi
  rest_ping() {
    curl -sf -m 5 -H "X-SLURM-USER-NAME: root" -H "X-SLURM-USER-TOKEN: $jwt" \
      "http://127.0.0.1:$REST_PORT/slurm/$API/ping" | grep -q '"ping": "UP"'
  }
  GUARD_PIDFILE=$RUN/slurmrestd.pid GUARD_COMM=slurmrestd wait_for "REST ping" rest_ping ||
    { tail -20 "$LOGD/slurmrestd.log" >&2; die "slurmrestd does not answer on 127.0.0.1:$REST_PORT"; }

  cat >"$STATE_DIR/slurm.env.new" <<EOF
# written by scripts/slurm.sh start; source it
export SLURM_CONF=$CONF
export TW_SLURM_DIR=$STATE_DIR
export TW_SLURM_URL=http://127.0.0.1:$REST_PORT
export TW_SLURM_API=$API
export TW_SLURM_USER=root
export TW_SLURM_TOKEN_FILE=$STATE_DIR/jwt.token
export TW_SLURM_JWT_KEY_FILE=$ETC/jwt_hs256.key
export TW_SLURM_OUTPUT_DIR=$STATE_DIR/jobs
export TW_SLURM_CLUSTER=tradewind
EOF
  chmod 600 "$STATE_DIR/slurm.env.new"
  mv "$STATE_DIR/slurm.env.new" "$STATE_DIR/slurm.env"
  log "Slurm $(slurmctld -V | awk '{print $2}') up in $(($(now_ms) - t_start)) ms; env: $STATE_DIR/slurm.env"
  sinfo -N -o '%N %P %T %c %m %G %f' >&2
}

case "$CMD" in
  start) do_start ;;
  stop) do_stop ;;
  status) do_status ;;
  env)
    [ -s "$STATE_DIR/slurm.env" ] || { log "no cluster started in $STATE_DIR"; exit 3; }
    cat "$STATE_DIR/slurm.env"
    ;;
  *)
    echo "usage: $0 start|stop|status|env [STATE_DIR] [--purge]" >&2
    exit 2
    ;;
esac
