#!/usr/bin/env bash
# ha_chaos.sh - three brokers on one PostgreSQL, the fake EC2, and the
# leader killed, frozen and cut from the database while jobs are submitted
# and launched (docs/ha.md).
#
#   tests/e2e/ha_chaos.sh BUILD_DIR [PG_DIR]
#
# PG_DIR: a cluster scripts/postgres.sh started (its pg.env); without one
# the script starts its own, and then also restarts it once (below).
# Exit 77 (skip) when PostgreSQL cannot run.
#
# Submissions go round-robin to the three replicas the whole time (an
# idempotency key each, retried on the next replica when one does not
# answer).  Each round takes the leader down, measures the takeover (from
# the fault until another replica's /readyz says it leads), then brings
# the replica back as a follower:
#   kill     SIGKILL
#   stop     SIGSTOP for lease + 1 s, then SIGCONT: it must find its lease
#            gone and stop (exit 3) rather than write (its watchdog sees
#            the last renewal too old, or a write of its is refused by
#            the fence; its log says "lost the lease")
# then, each replica reaching PostgreSQL through a TCP proxy the test
# controls (tests/fakes/tcp_proxy.py), the leader cut from the database:
#   drop       its connections closed, new ones refused
#   blackhole  nothing forwarded, nothing closed: its statements hang
# until lease + 2 s after another replica took over, then healed: what it
# had sent meanwhile reaches the server (its fence must refuse it); it
# must have stopped (exit 3) and, restarted, serve as a follower.
# and, on its own cluster, PostgreSQL stopped and started again: some
# replica must lead and submissions be acknowledged again.
# Counted and asserted at the end:
#   acked_jobs_lost        acknowledged submissions missing from the store: 0
#   jobs_two_live          jobs with two live instances at the fake at once: 0
#   stale_writes_accepted  rows written by a replica's connections after
#                          another replica took the lease from it: 0
#                          (every table of the schema carries a trigger
#                          that logs each row written with the writer's
#                          application_name, one per replica start)
# and printed, one `key value unit` line each: takeover p50 and max (goal:
# lease + 2 s; asserted within lease + renew + TW_HA_TAKEOVER_SLACK_MS,
# default 2000: a follower tries every renew_ms).
set -uo pipefail
BUILD=${1:?usage: ha_chaos.sh BUILD_DIR [PG_DIR]}
PGDIR=${2:-}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
TRADEWINDD=$BUILD/tradewindd
CLI=$BUILD/cli/tradewind
FAKE=$BUILD/tests/tradewind-fakecloud
ROUNDS=${TW_HA_ROUNDS:-4}
RENEW_MS=${TW_HA_RENEW_MS:-500}
LEASE_MS=${TW_HA_LEASE_MS:-2000}
CUTS=${TW_HA_CUTS:-drop blackhole}
SLACK_MS=${TW_HA_TAKEOVER_SLACK_MS:-2000}

work=$(mktemp -d /tmp/tw-ha-chaos.XXXXXX)
chmod 711 "$work" # root runs the server as postgres, which must reach $work/pg
pids=()
own_pg=0
sub_pid=""
cleanup() {
  touch "$work/stop-submitting" 2>/dev/null
  [ -n "$sub_pid" ] && kill "$sub_pid" 2>/dev/null
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
  for i in 1 2 3; do
    [ -s "$work/r$i.pid" ] && { kill -CONT "$(cat "$work/r$i.pid")" 2>/dev/null; kill "$(cat "$work/r$i.pid")" 2>/dev/null; }
  done
  wait 2>/dev/null
  [ -n "${schema:-}" ] && dropschema
  [ $own_pg = 1 ] && "$ROOT/scripts/postgres.sh" stop "$work/pg" >/dev/null 2>&1
  if [ "${TW_HA_KEEP:-0}" = 1 ]; then echo "ha_chaos: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() { echo "ha_chaos: FAIL: $*" >&2; for i in 1 2 3; do echo "--- r$i" >&2; tail -5 "$work/r$i.log" >&2; done; exit 1; }
now_ms() { date +%s%3N; }

# ---- PostgreSQL, and a schema of this run's own
if [ -z "$PGDIR" ] || [ ! -s "$PGDIR/pg.env" ]; then
  PGDIR=$work/pg
  "$ROOT/scripts/postgres.sh" start "$PGDIR" >/dev/null 2>&1
  rc=$?
  [ $rc = 0 ] || { echo "SKIPPED: PostgreSQL cannot start here (postgres.sh: $rc)"; exit 77; }
  own_pg=1
fi
# shellcheck disable=SC1091
. "$PGDIR/pg.env"
schema="ha_$$_$(date +%s)"
PGPASSWORD=$(cat "$TW_PG_PASSWORD_FILE") psql "$TW_PG_DSN" -qXc "CREATE SCHEMA $schema" ||
  { echo "SKIPPED: PostgreSQL does not answer"; exit 77; }
dropschema() { PGPASSWORD=$(cat "$TW_PG_PASSWORD_FILE") psql "$TW_PG_DSN" -qXc "DROP SCHEMA $schema CASCADE" >/dev/null 2>&1; }
pgq() { # SQL: runs it in this run's schema, straight to the server
  PGPASSWORD=$(cat "$TW_PG_PASSWORD_FILE") PGOPTIONS="-csearch_path=$schema" \
    psql "$TW_PG_DSN" -qXtAc "$1"
}

# ---- the TCP proxy between each replica and PostgreSQL
mkdir -p "$work/proxy"
python3 "$ROOT/tests/fakes/tcp_proxy.py" --upstream "127.0.0.1:$TW_PG_PORT" \
  --listeners 3 --control "$work/proxy" >"$work/proxy.out" 2>"$work/proxy.log" &
pids+=($!)
for _ in $(seq 100); do [ "$(grep -c '^listening' "$work/proxy.out")" = 3 ] && break; sleep 0.05; done
pport=()
for i in 1 2 3; do
  pport[$i]=$(awk -v i="$i" '$1 == "listening" && $2 == i {print $3}' "$work/proxy.out")
  [ -n "${pport[$i]}" ] || { echo "ha_chaos: FAIL: the TCP proxy did not start" >&2; exit 1; }
done
cut() { # replica, pass|drop|blackhole: returns once the proxy applied it
  local before
  before=$(cat "$work/proxy/stats" 2>/dev/null | grep -c "^$1 $2 ")
  echo "$2" >"$work/proxy/mode-$1"
  for _ in $(seq 100); do
    [ "$(cat "$work/proxy/stats" 2>/dev/null | grep -c "^$1 $2 ")" -gt "$before" ] && return 0
    sleep 0.02
  done
  fail "the TCP proxy did not apply $2 to r$1"
}

# ---- the fake EC2
"$FAKE" --listen 127.0.0.1:0 >"$work/fake.out" 2>"$work/fake.log" &
pids+=($!)
for _ in $(seq 100); do grep -q listening "$work/fake.out" && break; sleep 0.05; done
FAKE_URL=$(sed -n 's/^listening //p' "$work/fake.out" | head -1)
[ -n "$FAKE_URL" ] || fail "the fake EC2 did not start"

# ---- three replicas
ports=()
gen=(0 0 0 0)
write_config() { # i: replica i's config; application_name r<i>.g<start>
  local i=$1
  cat >"$work/c$i.yaml" <<EOF
listen: 127.0.0.1:0
db: $work/tw.db
log:
  level: info
scheduler:
  tick_ms: 200
store:
  backend: postgres
  dsn: "$TW_PG_DSN port=${pport[$i]} application_name=r$i.g${gen[$i]} options='-csearch_path=$schema'"
  password_file: $TW_PG_PASSWORD_FILE
ha:
  renew_ms: $RENEW_MS
  lease_ms: $LEASE_MS
  name: r$i
providers:
  - name: aws-fake
    type: aws
    endpoint: $FAKE_URL
    regions: [us-east-1, us-west-2]
    access_key_env: TW_DEMO_AWS_ACCESS_KEY
    secret_key_env: TW_DEMO_AWS_SECRET_KEY
    image: ami-0123456789abcdef0
EOF
}
export TW_DEMO_AWS_ACCESS_KEY=AKIDTRADEWINDFAKE TW_DEMO_AWS_SECRET_KEY=tradewind-fake-secret

start_replica() { # i: starts replica i on a fresh port, waits for its URL
  local i=$1 url=""
  gen[$i]=$((gen[$i] + 1))
  write_config "$i"
  : >"$work/r$i.out"
  "$TRADEWINDD" --config "$work/c$i.yaml" >"$work/r$i.out" 2>>"$work/r$i.log" &
  echo $! >"$work/r$i.pid"
  for _ in $(seq 200); do
    url=$(sed -n 's/^listening //p' "$work/r$i.out" | head -1)
    [ -n "$url" ] && break
    sleep 0.05
  done
  [ -n "$url" ] || fail "replica r$i did not start"
  echo "$url" >"$work/r$i.url"
}
for i in 1 2 3; do start_replica "$i"; sleep 0.3; done
for _ in $(seq 100); do [ -s "$work/admin.token" ] && break; sleep 0.05; done
export TRADEWIND_TOKEN
TRADEWIND_TOKEN=$(cat "$work/admin.token")

leader() { # prints the index of the replica whose /readyz says it leads
  local i
  for i in 1 2 3; do
    curl -s -m 1 "$(cat "$work/r$i.url")/readyz" 2>/dev/null | grep -q '"leading":true' && { echo "$i"; return 0; }
  done
  return 1
}
for _ in $(seq 100); do leader >/dev/null && break; sleep 0.1; done
leader >/dev/null || fail "no replica leads"

# ---- every row written, logged with its writer (the tables exist now:
# the first replica migrated the schema)
pgq "CREATE TABLE chaos_writes (app TEXT NOT NULL, at_ms BIGINT NOT NULL,
       tbl TEXT NOT NULL);
     CREATE FUNCTION chaos_log() RETURNS trigger LANGUAGE plpgsql AS \$\$
     BEGIN
       INSERT INTO chaos_writes VALUES (current_setting('application_name'),
         (extract(epoch FROM clock_timestamp()) * 1000)::bigint, TG_TABLE_NAME);
       RETURN NULL;
     END \$\$;
     DO \$\$ DECLARE t text; BEGIN
       FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = current_schema()
                AND tablename <> 'chaos_writes' LOOP
         EXECUTE format('CREATE TRIGGER chaos_log AFTER INSERT OR UPDATE OR DELETE'
                        ' ON %I FOR EACH ROW EXECUTE FUNCTION chaos_log()', t);
       END LOOP;
     END \$\$;" >/dev/null || fail "cannot install the write log"
[ "$(pgq "SELECT count(*) FROM pg_trigger WHERE tgname = 'chaos_log'")" -gt 10 ] ||
  fail "the write log covers too few tables"
# after each takeover: the old leader's connections (its application_name)
# and the new epoch's start; no row of theirs may be written after it
: >"$work/takeovers"
note_takeover() { # old replica index
  local row
  row=$(pgq "SELECT acquired_ms FROM ha_lease WHERE id = 1")
  echo "r$1.g${gen[$1]} $row" >>"$work/takeovers"
}

# ---- submissions, round-robin, the whole time
cat >"$work/job.yaml" <<EOF
name: chaos
resources:
  cpus: 1+
duration: 3s
run: echo chaos
EOF
submitter() {
  local n=0 k i url id
  while [ ! -e "$work/stop-submitting" ]; do
    n=$((n + 1))
    for k in 0 1 2 3 4 5; do # the next replica when one does not answer
      i=$(( (n + k) % 3 + 1 ))
      url=$(cat "$work/r$i.url")
      if id=$(TRADEWIND_URL=$url timeout 10 "$CLI" submit "$work/job.yaml" \
                --idempotency-key "chaos-$n" 2>>"$work/submit.err"); then
        echo "$id" >>"$work/acked"
        break
      fi
      sleep 0.2
    done
    sleep 0.1
  done
}
submitter &
sub_pid=$!

takeovers=()
stale_landed=0
for round in $(seq "$ROUNDS"); do
  sleep 2
  L=$(leader) || fail "round $round: no leader"
  lpid=$(cat "$work/r$L.pid")
  mode=kill
  [ $((round % 2)) = 0 ] && mode=stop
  t0=$(now_ms)
  if [ $mode = kill ]; then
    kill -KILL "$lpid"
  else
    kill -STOP "$lpid"
  fi
  new=""
  while [ $(( $(now_ms) - t0 )) -lt $((LEASE_MS * 5 + 10000)) ]; do
    for i in 1 2 3; do
      [ "$i" = "$L" ] && continue
      curl -s -m 1 "$(cat "$work/r$i.url")/readyz" 2>/dev/null | grep -q '"leading":true' && new=$i
    done
    [ -n "$new" ] && break
    sleep 0.05
  done
  [ -n "$new" ] || fail "round $round ($mode): no takeover"
  took=$(( $(now_ms) - t0 ))
  takeovers+=("$took")
  echo "ha_chaos: round $round $mode r$L -> r$new in $took ms" >&2
  note_takeover "$L"
  if [ $mode = stop ]; then
    sleep $(( (LEASE_MS + 999) / 1000 ))
    kill -CONT "$lpid"
    # it finds its lease gone and stops; nothing it tries lands
    for _ in $(seq 100); do kill -0 "$lpid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$lpid" 2>/dev/null && fail "round $round: the resumed old leader r$L still runs"
    grep -q "r$L epoch=.* lost the lease" "$work/r$L.log" ||
      fail "round $round: r$L did not say it lost the lease"
  fi
  wait "$lpid" 2>/dev/null
  start_replica "$L" # back as a follower
done

# The leader cut from PostgreSQL by the proxy, during submissions and
# launches: another replica takes over; the cut one stops (exit 3) at the
# latest when its lease would lapse, whether its statements fail (drop) or
# hang (blackhole); healed, what it had sent flows to the server and its
# fence refuses it; restarted by its supervisor (here: the test), it
# serves as a follower.
for mode in $CUTS; do
  sleep 2
  L=$(leader) || fail "cut $mode: no leader"
  lpid=$(cat "$work/r$L.pid")
  t0=$(now_ms)
  cut "$L" "$mode"
  new=""
  while [ $(( $(now_ms) - t0 )) -lt $((LEASE_MS * 5 + 10000)) ]; do
    for i in 1 2 3; do
      [ "$i" = "$L" ] && continue
      curl -s -m 1 "$(cat "$work/r$i.url")/readyz" 2>/dev/null | grep -q '"leading":true' && new=$i
    done
    [ -n "$new" ] && break
    sleep 0.05
  done
  [ -n "$new" ] || fail "cut $mode: no takeover"
  took=$(( $(now_ms) - t0 ))
  takeovers+=("$took")
  echo "ha_chaos: cut $mode r$L -> r$new in $took ms" >&2
  note_takeover "$L"
  # submissions go on meanwhile; the cut replica must have stopped by now
  # (it cannot have renewed for longer than its lease)
  sleep $(( (LEASE_MS + 2000 + 999) / 1000 ))
  kill -0 "$lpid" 2>/dev/null &&
    fail "cut $mode: r$L still runs a lease after it was cut"
  wait "$lpid" 2>/dev/null
  rc=$?
  [ "$rc" = 3 ] || fail "cut $mode: r$L exited $rc, not 3 (lost the lease)"
  grep -q "r$L epoch=.* lost the lease" "$work/r$L.log" ||
    fail "cut $mode: r$L did not say it lost the lease"
  cut "$L" pass # healed: what it had sent (blackhole) reaches the server
  if [ "$mode" = blackhole ]; then
    # the dead leader's held connections deliver what they held, then
    # close: its last statements reach the server after the takeover
    for _ in $(seq 100); do
      grep -q "^$L held-closed " "$work/proxy/stats" && break
      sleep 0.05
    done
    sleep 0.5
    held_bytes=$(awk -v i="$L" '$1 == i && $2 == "held-closed" {split($3, b, "="); n += b[2]} END {print n + 0}' "$work/proxy/stats")
    echo "ha_chaos: cut $mode: r$L's held connections delivered $held_bytes bytes after the heal" >&2
    [ "$held_bytes" -gt 0 ] || fail "cut $mode: nothing of r$L's was held to reach the server late"
  fi
  start_replica "$L"
  ok=""
  for _ in $(seq 100); do
    if curl -s -m 1 "$(cat "$work/r$L.url")/readyz" 2>/dev/null | grep -q '"serving":true,"leading":false' &&
       [ "$(pgq "SELECT count(*) FROM ha_replicas WHERE name = 'r$L'
                 AND seen_ms > $(now_ms) - 2000 AND epoch = 0")" = 1 ]; then
      ok=1
      break
    fi
    sleep 0.1
  done
  [ -n "$ok" ] || fail "cut $mode: r$L did not rejoin as a follower"
  leader >/dev/null || fail "cut $mode: no leader after the heal"
  echo "ha_chaos: cut $mode: r$L rejoined as a follower" >&2
done

# PostgreSQL itself restarted (only on a cluster of this run's own: a
# shared one serves other tests): the brokers' connections break; a
# leader that cannot renew within its lease stops (exit 3) and comes back
# as a follower; submissions resume once the server is back
pg_recovery=-1
if [ $own_pg = 1 ]; then
  sleep 2
  acked_before=$(grep -c . "$work/acked")
  t0=$(now_ms)
  "$ROOT/scripts/postgres.sh" stop "$PGDIR" >/dev/null 2>&1 || fail "cannot stop PostgreSQL"
  sleep 1
  "$ROOT/scripts/postgres.sh" start "$PGDIR" >/dev/null 2>&1 || fail "cannot start PostgreSQL again"
  up=""
  while [ $(( $(now_ms) - t0 )) -lt 60000 ]; do
    for i in 1 2 3; do # the supervisor's part: restart what stopped
      kill -0 "$(cat "$work/r$i.pid")" 2>/dev/null || { wait "$(cat "$work/r$i.pid")" 2>/dev/null; start_replica "$i"; }
    done
    if leader >/dev/null && [ "$(grep -c . "$work/acked")" -gt "$acked_before" ]; then
      up=1
      break
    fi
    sleep 0.2
  done
  [ -n "$up" ] || fail "no leader and no acknowledged submission after PostgreSQL restarted"
  pg_recovery=$(( $(now_ms) - t0 ))
  echo "ha_chaos: PostgreSQL restarted; a leader and new submissions after $pg_recovery ms" >&2
  sleep 2
fi

touch "$work/stop-submitting"
wait $sub_pid
# let the last jobs run out
sleep 6

# ---- the counts, read from a live replica and the fake
L=$(leader) || fail "no leader at the end"
url=$(cat "$work/r$L.url")
acked=$(sort -u "$work/acked" | grep -c .)
# in the store, read straight from the server: the API's own rate limit
# (50 requests/s per token) would answer a quick loop over every id 429
lost=0
while read -r id; do
  [ "$(pgq "SELECT count(*) FROM jobs WHERE id = '$id'")" = 1 ] ||
    { lost=$((lost + 1)); echo "lost: $id" >&2; }
done < <(sort -u "$work/acked")
# and served by the live leader, for a sample of them
while read -r id; do
  TRADEWIND_URL=$url "$CLI" jobs get "$id" >/dev/null ||
    fail "acknowledged job $id is stored but $L does not serve it"
done < <(sort -u "$work/acked" | awk 'NR % 10 == 1')
two_live=$(curl -s "$FAKE_URL/_fake/ec2/state" | python3 -c '
import json, sys, collections
st = json.load(sys.stdin)
live = collections.Counter()
for i in st["instances"]:
    if i["state"] in ("pending", "running"):
        tok = i.get("client_token", "")
        live[tok.rsplit("-", 1)[0]] += 1
print(sum(1 for v in live.values() if v > 1))')
# a frozen leader that resumed and wrote: its fence refusals are in its
# log as "lost the lease (store: the leader lease has moved on ...)"; a
# write that landed would show as a stale epoch in the store, which the
# fence makes impossible; count the refusals seen
refusals=$(cat "$work"/r*.log | grep -c "no longer leads, its write is refused")
# rows the old leaders' connections wrote after each takeover
while read -r app at; do
  n=$(pgq "SELECT count(*) FROM chaos_writes WHERE app = '$app' AND at_ms >= $at")
  [ "${n:-0}" -gt 0 ] && echo "ha_chaos: $app wrote $n rows after the takeover at $at" >&2
  stale_landed=$((stale_landed + ${n:-0}))
done <"$work/takeovers"
logged=$(pgq "SELECT count(*) FROM chaos_writes")
sorted=$(printf '%s\n' "${takeovers[@]}" | sort -n)
p50=$(echo "$sorted" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
max=$(echo "$sorted" | tail -1)
echo "ha_acked_jobs ${acked} jobs"
echo "ha_acked_jobs_lost ${lost} jobs"
echo "ha_jobs_two_live ${two_live} jobs"
echo "ha_stale_writes_accepted ${stale_landed} writes"
echo "ha_stale_writes_refused ${refusals} lines"
echo "ha_rows_logged ${logged} rows"
[ -n "${held_bytes:-}" ] && echo "ha_cut_bytes_after_heal ${held_bytes} bytes"
echo "ha_takeover_p50 ${p50} ms"
echo "ha_takeover_max ${max} ms"
echo "ha_lease ${LEASE_MS} ms"
[ "$pg_recovery" -ge 0 ] && echo "ha_pg_restart_recovery ${pg_recovery} ms"
[ "$acked" -gt 0 ] || fail "no submission was acknowledged"
[ "$lost" = 0 ] || fail "$lost acknowledged jobs lost"
[ "$two_live" = 0 ] || fail "$two_live jobs with two live instances"
[ "$stale_landed" = 0 ] || fail "$stale_landed rows written from a stale epoch"
[ "${logged:-0}" -gt 0 ] || fail "the write log saw no row"
[ "$max" -le $((LEASE_MS + RENEW_MS + SLACK_MS)) ] ||
  fail "takeover max $max ms is over lease + renew + $SLACK_MS ms"
echo "ha_chaos: ok"
