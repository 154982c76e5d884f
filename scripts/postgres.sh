#!/usr/bin/env bash
# postgres.sh - a throwaway PostgreSQL 15 cluster on loopback for
# Tradewind's tests, benchmarks and HA demo: initdb in STATE_DIR, one
# server on a free port of 127.0.0.1, a role and a database for the broker.
#
# Usage: scripts/postgres.sh start|stop|status|env [STATE_DIR] [--purge]
#   STATE_DIR  default: $TW_PG_DIR, else .state/postgres in the project
#
#   start   installs PostgreSQL 15 from Debian's packages when missing
#           (postgresql-15, libpq-dev), creates the cluster on first use,
#           starts the server when it is not running, waits until it
#           accepts connections, creates the role `tradewind` (password in
#           STATE_DIR/password, mode 0600) and the database `tradewind`, and
#           writes STATE_DIR/pg.env.  Idempotent.
#   stop    stops the server of STATE_DIR (pg_ctl stop -m fast); with
#           --purge also deletes STATE_DIR.
#   status  exit 0 when the server runs, 3 otherwise.
#   env     prints STATE_DIR/pg.env: TW_PG_DSN (a libpq connection string
#           without the password), TW_PG_PASSWORD_FILE, TW_PG_PORT,
#           TW_PG_DIR.  Exit 3 when the cluster never started.
#
# Exit codes: 0 ok, 1 failure, 77 this machine cannot run the cluster (the
# packages are missing and cannot be installed, or no unprivileged user to
# run the server as): tests skip on 77.
#
# Tunables (environment):
#   TW_PG_PORT           the port (default: the first free one from a base
#                        derived from STATE_DIR, kept in STATE_DIR/port)
#   TW_PG_TIMEOUT=30     seconds to wait for the server
#   TW_PG_NO_INSTALL=1   never call apt-get
#   TW_PG_BIN            the server's binaries (default
#                        /usr/lib/postgresql/15/bin)
set -uo pipefail

PROJECT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CMD=${1:-}
shift || true
STATE_DIR=${TW_PG_DIR:-$PROJECT/.state/postgres}
PURGE=0
for a in "$@"; do
  case "$a" in
    --purge) PURGE=1 ;;
    *) STATE_DIR=$a ;;
  esac
done
case "$STATE_DIR" in /*) ;; *) STATE_DIR="$PWD/$STATE_DIR" ;; esac

BIN=${TW_PG_BIN:-/usr/lib/postgresql/15/bin}
TIMEOUT=${TW_PG_TIMEOUT:-30}
PKGS=(postgresql-15 libpq-dev)
DATA=$STATE_DIR/data
LOGF=$STATE_DIR/server.log
ENVF=$STATE_DIR/pg.env
ROLE=tradewind
DBNAME=tradewind

log() { echo "postgres: $*" >&2; }
die() { log "$*"; exit 1; }
cannot() { log "$*"; exit 77; }
# shellcheck source=scripts/apt-quiet.sh
. "$(dirname "${BASH_SOURCE[0]}")/apt-quiet.sh"

# The server refuses to run as root: root runs it as the `postgres` user
# the package creates (or nobody, failing that).
RUNAS=""
if [ "$(id -u)" -eq 0 ]; then
  if id postgres >/dev/null 2>&1; then RUNAS=postgres
  elif id nobody >/dev/null 2>&1; then RUNAS=nobody
  fi
fi
as_owner() {
  if [ -n "$RUNAS" ]; then runuser -u "$RUNAS" -- "$@"; else "$@"; fi
}

install_missing() {
  local missing=() p
  for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && [ -x "$BIN/initdb" ] && return 0
  [ ${#missing[@]} -eq 0 ] && cannot "no $BIN/initdb (set TW_PG_BIN)"
  [ "${TW_PG_NO_INSTALL:-0}" = 1 ] && cannot "missing packages: ${missing[*]} (TW_PG_NO_INSTALL=1)"
  command -v apt-get >/dev/null || cannot "missing packages: ${missing[*]} and no apt-get"
  [ "$(id -u)" -eq 0 ] || cannot "missing packages: ${missing[*]} (installing needs root)"
  log "installing: ${missing[*]}"
  local rc=0
  tw_apt_quiet pg "${missing[@]}" || rc=$?
  [ $rc = 0 ] || cannot "apt-get could not install ${missing[*]} (rc=$rc)"
  [ -x "$BIN/initdb" ] || cannot "installed, but no $BIN/initdb"
}

port_free() {
  command -v ss >/dev/null 2>&1 || return 0
  ! ss -Htan 2>/dev/null | awk '{print $4}' | sed 's/.*://' | grep -qx "$1"
}

choose_port() {
  if [ -n "${TW_PG_PORT:-}" ]; then PORT=$TW_PG_PORT; return; fi
  if [ -s "$STATE_DIR/port" ]; then PORT=$(cat "$STATE_DIR/port"); return; fi
  # Below 32768 (the ephemeral range), derived from the state dir so two
  # clusters (two build dirs) do not collide.
  local h i
  h=$(printf '%s' "$STATE_DIR" | cksum | cut -d' ' -f1)
  for i in $(seq 0 999); do
    PORT=$((15432 + (h + i) % 10000))
    port_free "$PORT" && return
  done
  die "no free port"
}

running() {
  [ -f "$DATA/postmaster.pid" ] && as_owner "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

psql_admin() {
  as_owner "$BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PORT" -U postgres -d postgres "$@"
}

start() {
  install_missing
  [ "$(id -u)" -eq 0 ] && [ -z "$RUNAS" ] && cannot "root, and no unprivileged user to run the server as"
  mkdir -p "$STATE_DIR" || die "cannot create $STATE_DIR"
  [ -n "$RUNAS" ] && chown "$RUNAS" "$STATE_DIR"
  if [ -n "$RUNAS" ] && ! as_owner test -w "$STATE_DIR"; then
    die "$RUNAS cannot reach $STATE_DIR (a parent directory is closed to it: chmod o+x it)"
  fi
  choose_port
  if [ ! -s "$DATA/PG_VERSION" ]; then
    as_owner "$BIN/initdb" -D "$DATA" -U postgres -A trust -E UTF8 --no-locale \
      >"$STATE_DIR/initdb.log" 2>&1 || { tail -20 "$STATE_DIR/initdb.log" >&2; die "initdb failed"; }
    # Loopback only, password for the broker's role, trust for the admin
    # role on the local socket-less loopback the script itself uses.
    cat >"$DATA/pg_hba.conf" <<EOF
host  all  postgres  127.0.0.1/32  trust
host  all  all       127.0.0.1/32  scram-sha-256
EOF
    cat >>"$DATA/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
max_connections = 200
fsync = on
synchronous_commit = on
EOF
  fi
  echo "$PORT" >"$STATE_DIR/port"
  if ! running; then
    [ -n "$RUNAS" ] && chown "$RUNAS" "$STATE_DIR"
    touch "$LOGF" && [ -n "$RUNAS" ] && chown "$RUNAS" "$LOGF"
    as_owner "$BIN/pg_ctl" -D "$DATA" -l "$LOGF" -o "-p $PORT" -w -t "$TIMEOUT" start >/dev/null ||
      { tail -20 "$LOGF" >&2; die "the server did not start"; }
  fi
  local t=0
  until as_owner "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT"; do
    t=$((t + 1))
    [ $t -gt $((TIMEOUT * 5)) ] && die "the server does not accept connections on $PORT"
    sleep 0.2
  done
  if [ ! -s "$STATE_DIR/password" ]; then
    (umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$STATE_DIR/password")
  fi
  chmod 600 "$STATE_DIR/password"
  local pw
  pw=$(cat "$STATE_DIR/password")
  psql_admin -v pw="$pw" <<'EOF' || die "cannot create the role"
SELECT format('CREATE ROLE tradewind LOGIN PASSWORD %L', :'pw')
  WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'tradewind') \gexec
SELECT format('ALTER ROLE tradewind PASSWORD %L', :'pw') \gexec
EOF
  psql_admin -tA -c "SELECT 1 FROM pg_database WHERE datname = '$DBNAME'" | grep -q 1 ||
    psql_admin -c "CREATE DATABASE $DBNAME OWNER $ROLE" || die "cannot create the database"
  cat >"$ENVF" <<EOF
TW_PG_DIR=$STATE_DIR
TW_PG_PORT=$PORT
TW_PG_DSN='host=127.0.0.1 port=$PORT user=$ROLE dbname=$DBNAME'
TW_PG_PASSWORD_FILE=$STATE_DIR/password
EOF
  log "running on 127.0.0.1:$PORT (source $ENVF)"
}

stop() {
  if [ -f "$DATA/postmaster.pid" ]; then
    as_owner "$BIN/pg_ctl" -D "$DATA" -m fast -w -t "$TIMEOUT" stop >/dev/null 2>&1 ||
      log "pg_ctl stop failed (already stopped?)"
  fi
  if [ $PURGE = 1 ] && [ -d "$STATE_DIR" ]; then
    rm -rf "$STATE_DIR"
  fi
  return 0
}

case "$CMD" in
  start) start ;;
  stop) stop ;;
  status)
    choose_port 2>/dev/null
    running && { echo "postgres: running (port ${PORT:-?})"; exit 0; }
    echo "postgres: stopped"; exit 3 ;;
  env)
    [ -s "$ENVF" ] || { log "no cluster in $STATE_DIR (run start)"; exit 3; }
    cat "$ENVF" ;;
  *)
    sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 1 ;;
esac
