#!/bin/sh
# ops.sh WORKDIR BUILDDIR - operating tradewindd: --check-config, the lock
# that refuses a second daemon on one database, the systemd notifications
# (READY=1, RELOADING=1, STOPPING=1 on $NOTIFY_SOCKET), the online backup,
# `cmake --install` into a DESTDIR with the unit checked by
# `systemd-analyze verify` where it exists, and the .deb installed with
# dpkg into a root of its own, started, reloaded and stopped as its unit
# says, removed and purged.  Needs TW_DAEMON, TW_CLI and
# python3 (the notification socket, reading the backup).
set -eu
work=${1:?usage: ops.sh WORKDIR BUILDDIR}
build=${2:?usage: ops.sh WORKDIR BUILDDIR}
: "${TW_DAEMON:?}" "${TW_CLI:?}"
command -v python3 >/dev/null || { echo "SKIPPED: python3 is not installed"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
pids=""
trap 'for p in $pids; do kill "$p" 2>/dev/null || :; done' EXIT INT TERM
fail() { echo "FAIL: $*" >&2; exit 1; }

# --- --check-config ---------------------------------------------------------
cat >"$work/good.yaml" <<YAML
listen: 127.0.0.1:0
db: $work/tw.db
auth: {mode: open}
YAML
"$TW_DAEMON" --config "$work/good.yaml" --check-config >"$work/check.out" ||
  fail "--check-config refused a good config"
grep -q ': ok$' "$work/check.out" || fail "--check-config said $(cat "$work/check.out")"
[ ! -e "$work/tw.db" ] || fail "--check-config created the database"
printf 'listen: 127.0.0.1:0\nscheduler: {tick_mss: 5}\n' >"$work/bad.yaml"
if "$TW_DAEMON" --config "$work/bad.yaml" --check-config 2>"$work/check.err"; then
  fail "--check-config accepted an unknown key"
fi
grep -q 'tick_mss' "$work/check.err" || fail "--check-config did not name the key: $(cat "$work/check.err")"
printf 'listen: 127.0.0.1:0\nscheduler: {tick_ms: many}\n' >"$work/bad2.yaml"
if "$TW_DAEMON" --config "$work/bad2.yaml" --check-config 2>"$work/check.err"; then
  fail "--check-config accepted tick_ms: many"
fi
grep -q 'tick_ms' "$work/check.err" || fail "no key in: $(cat "$work/check.err")"

# --- log.format: json lines, journald lines ------------------------------------
for f in json journald; do
  printf 'listen: 127.0.0.1:0\ndb: %s\nauth: {mode: open}\nlog: {format: %s}\n' \
    "$work/log-$f.db" "$f" >"$work/log-$f.yaml"
  "$TW_DAEMON" --config "$work/log-$f.yaml" >"$work/log-$f.out" 2>"$work/log-$f.err" &
  dl=$!
  pids="$pids $dl"
  i=0; until grep -q '^listening' "$work/log-$f.out"; do
    i=$((i+1)); [ $i -lt 200 ] || fail "log-$f did not start"; sleep 0.05; done
  kill -TERM "$dl"; wait "$dl" || :
done
python3 - "$work/log-json.err" <<'PY' || fail "log.format json: $(head -3 "$work/log-json.err")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) >= 3
for l in lines:
    assert set(l) == {"ts", "level", "subsys", "msg"}, l
assert any(l["subsys"] == "daemon" and "serving" in l["msg"] for l in lines)
PY
grep -qv '^<[3467]>[a-z]*: ' "$work/log-journald.err" && fail "journald lines: $(head -3 "$work/log-journald.err")"
grep -q '^<6>daemon: .*serving' "$work/log-journald.err" || fail "no <6>daemon line"
printf 'log: {format: xml}\n' >"$work/log-bad.yaml"
if "$TW_DAEMON" --config "$work/log-bad.yaml" --check-config 2>"$work/check.err"; then fail "log.format xml accepted"; fi
grep -q 'log.format: expected text, journald or json' "$work/check.err" || fail "log.format message"

# --- sd_notify, by a datagram socket of our own -------------------------------
# listen_notify SOCK LOG: a datagram socket as systemd's, each message a
# line of LOG, until STOPPING=1 (or 60 s of silence); its pid in $pids.
listen_notify() {
  python3 - "$1" "$2" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(60)
with open(sys.argv[2], "a", buffering=1) as log:
    while True:
        try:
            m = s.recv(4096).decode()
        except socket.timeout:
            break
        log.write(m.replace("\n", " ") + "\n")
        if m.startswith("STOPPING=1"):
            break
PY
  pids="$pids $!"
  i=0; while [ ! -S "$1" ]; do i=$((i+1)); [ $i -lt 100 ] || fail "no socket $1"; sleep 0.05; done
}
sock=$work/notify.sock
listen_notify "$sock" "$work/notify.log"
NOTIFY_SOCKET=$sock "$TW_DAEMON" --config "$work/good.yaml" >"$work/d1.out" 2>"$work/d1.err" &
d1=$!
pids="$pids $d1"
wait_line() { # FILE PATTERN
  i=0
  until grep -q "$2" "$1" 2>/dev/null; do
    i=$((i+1)); [ $i -lt 200 ] || fail "no \"$2\" in $1: $(cat "$1" 2>/dev/null)"; sleep 0.05
  done
}
wait_line "$work/notify.log" "^READY=1 MAINPID=$d1"
grep -q '^listening http' "$work/d1.out" || fail "READY=1 before listening"
url=$(sed -n 's/^listening \(http[^ ]*\).*/\1/p' "$work/d1.out")

# --- a second daemon on the same database is refused -------------------------
if "$TW_DAEMON" --config "$work/good.yaml" >"$work/d2.out" 2>"$work/d2.err"; then
  fail "a second daemon started on the same database"
fi
grep -q "in use by another tradewindd (pid $d1)" "$work/d2.err" ||
  fail "second daemon: $(cat "$work/d2.err")"
kill -0 "$d1" || fail "the first daemon died"

# --- online backup while the daemon runs ------------------------------------
printf 'name: keep-me\nresources: {cpus: 1+}\nrun: "true"\n' >"$work/job.yaml"
id=$("$TW_CLI" --url "$url" submit "$work/job.yaml")
"$TW_CLI" admin backup "$work/copy.db" --db "$work/tw.db" 2>"$work/backup.err" ||
  fail "backup: $(cat "$work/backup.err")"
[ "$(stat -c %a "$work/copy.db")" = 600 ] || fail "backup mode"
[ ! -e "$work/copy.db-wal" ] || fail "backup left a -wal"
python3 - "$work/copy.db" "$id" <<'PY' || fail "the backup does not hold the job"
import sqlite3, sys
c = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
assert c.execute("SELECT count(*) FROM jobs WHERE id = ?", (sys.argv[2],)).fetchone()[0] == 1
PY
if "$TW_CLI" admin backup "$work/x.db" 2>/dev/null; then fail "backup without --db"; fi
if "$TW_CLI" admin backup "$work/x.db" --db "$work/none.db" 2>/dev/null; then fail "backup of a missing db"; fi

# --- reload and stop, as systemd sees them --------------------------------------
kill -HUP "$d1"
wait_line "$work/notify.log" '^RELOADING=1 MONOTONIC_USEC=[0-9]'
i=0; until [ "$(grep -c '^READY=1' "$work/notify.log")" -ge 2 ]; do
  i=$((i+1)); [ $i -lt 200 ] || fail "no READY=1 after the reload"; sleep 0.05
done
kill -TERM "$d1"
wait "$d1" || fail "daemon exit code $?"
wait_line "$work/notify.log" '^STOPPING=1'
# the lock goes with the process: a new daemon starts
"$TW_DAEMON" --config "$work/good.yaml" >"$work/d3.out" 2>"$work/d3.err" &
d3=$!
pids="$pids $d3"
wait_line "$work/d3.out" '^listening'
kill -TERM "$d3"
wait "$d3" || :

# --- a backup before migrating an existing schema ----------------------------
# a database at schema version 1 (an old build's: its jobs table, the one
# later migrations alter and index), with a row of its own
mig=$work/mig
mkdir -p "$mig"
python3 - "$mig/tw.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("CREATE TABLE jobs (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,"
          " tenant TEXT NOT NULL, project TEXT NOT NULL, name TEXT NOT NULL,"
          " state TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '',"
          " priority INTEGER NOT NULL DEFAULT 0, spec TEXT NOT NULL,"
          " placement TEXT, exit_code INTEGER, idem_key TEXT, idem_hash TEXT,"
          " created_at_ms INTEGER NOT NULL, updated_at_ms INTEGER NOT NULL)")
c.execute("CREATE TABLE job_events (seq INTEGER PRIMARY KEY,"
          " job_id TEXT NOT NULL REFERENCES jobs(id), at_ms INTEGER NOT NULL,"
          " from_state TEXT, to_state TEXT NOT NULL, reason TEXT NOT NULL)")
c.execute("CREATE TABLE old_rows (x)")
c.execute("INSERT INTO old_rows VALUES (42)")
c.execute("PRAGMA user_version = 1")
c.commit()
PY
printf 'listen: 127.0.0.1:0\ndb: %s\nauth: {mode: open}\n' "$mig/tw.db" >"$mig/c.yaml"
"$TW_DAEMON" --config "$mig/c.yaml" >"$mig/d.out" 2>"$mig/d.err" &
dm=$!
pids="$pids $dm"
wait_line "$mig/d.out" '^listening'
kill -TERM "$dm"; wait "$dm" || :
bak=$(ls "$mig"/tw.db.pre-migration-v*.bak 2>/dev/null | head -1)
[ -n "$bak" ] || fail "no backup before the migration: $(ls "$mig")"
grep -q "backed up to $bak before migrating" "$mig/d.err" || fail "the backup was not logged"
python3 - "$bak" <<'PY' || fail "the pre-migration backup is not the old database"
import sqlite3, sys
c = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
assert c.execute("PRAGMA user_version").fetchone()[0] == 1
assert c.execute("SELECT x FROM old_rows").fetchone()[0] == 42
PY
# up to date now: the next start backs nothing up
rm -f "$bak"
"$TW_DAEMON" --config "$mig/c.yaml" >"$mig/d2.out" 2>"$mig/d2.err" &
dm=$!
pids="$pids $dm"
wait_line "$mig/d2.out" '^listening'
kill -TERM "$dm"; wait "$dm" || :
! ls "$mig"/tw.db.pre-migration-v*.bak >/dev/null 2>&1 || fail "a backup without a migration"

# --- cmake --install into a DESTDIR --------------------------------------------
dest=$work/dest
DESTDIR=$dest cmake --install "$build" >"$work/install.log" || fail "cmake --install"
unit=$(find "$dest" -name tradewindd.service)
[ -n "$unit" ] || fail "no unit installed"
bin=$(sed -n 's/^ExecStart=\([^ ]*\) .*/\1/p' "$unit")
cfg=$(sed -n 's/^ExecStart=[^ ]* --config \([^ ]*\).*/\1/p' "$unit")
[ -x "$dest$bin" ] || fail "ExecStart $bin not installed"
[ -f "$dest$cfg" ] || fail "config $cfg not installed"
[ -x "$(dirname "$dest$bin")/tradewind" ] || fail "tradewind not installed"
for k in Type=notify ExecReload= NoNewPrivileges=yes ProtectSystem=strict StateDirectory=tradewind; do
  grep -q "^$k" "$unit" || fail "unit lacks $k"
done
"$dest$bin" --config "$dest$cfg" --check-config >/dev/null || fail "the installed config does not check"
if command -v systemd-analyze >/dev/null; then
  # the unit's paths moved under DESTDIR, so verify can find the programs
  root=$(dirname "$(dirname "$bin")")
  sed "s|$root/|$dest$root/|g" "$unit" >"$work/tradewindd.service"
  systemd-analyze verify "$work/tradewindd.service" >"$work/verify.log" 2>&1 || {
    cat "$work/verify.log"; fail "systemd-analyze verify"; }
  [ ! -s "$work/verify.log" ] || { cat "$work/verify.log"; fail "systemd-analyze verify warned"; }
else
  echo "note: systemd-analyze missing, the unit was not verified"
fi
# --- the .deb (CPack) -----------------------------------------------------------
if command -v cpack >/dev/null && command -v dpkg-deb >/dev/null; then
  (cd "$build" && cpack -G DEB -B "$work/deb" >"$work/cpack.log" 2>&1) ||
    { cat "$work/cpack.log"; fail "cpack -G DEB"; }
  deb=$(ls "$work"/deb/tradewind_*.deb)
  dpkg-deb --field "$deb" Depends | grep -q 'libsqlite3' || fail "no shlibs Depends: $(dpkg-deb --field "$deb" Depends)"
  dpkg-deb --info "$deb" conffiles | grep -q "^$cfg\$" || fail "the config is not a conffile"
  dpkg-deb -x "$deb" "$work/debroot"
  [ -x "$work/debroot$bin" ] || fail "the .deb lacks $bin"
  cmp -s "$work/debroot$(dirname "$bin")/../lib/systemd/system/tradewindd.service" "$unit" ||
    [ -f "$work/debroot${unit#"$dest"}" ] || fail "the .deb lacks the unit"
  "$work/debroot$bin" --config "$work/debroot$cfg" --check-config >/dev/null ||
    fail "the packaged config does not check"
  # installed with dpkg into a root of its own (the package has no
  # maintainer scripts; its libraries are this machine's), then started,
  # reloaded and stopped as the unit says, with a notification socket of
  # ours in systemd's place (no systemd runs here): ExecStartPre, ExecStart
  # (plus --listen 127.0.0.1:0, so parallel tests cannot collide, and
  # --db into the root's state directory),
  # ExecReload with $MAINPID, SIGTERM as systemctl stop sends it.
  R=$work/dpkgroot
  mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/var/lib/tradewind"
  : >"$R/var/lib/dpkg/status"
  dpkg --root="$R" --force-not-root --force-depends --log=/dev/null -i "$deb" \
    >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg -i"; }
  dpkg --root="$R" -s tradewind 2>/dev/null | grep -q '^Status: install ok installed' ||
    fail "dpkg does not list the package as installed"
  iunit=$R$(dpkg --root="$R" -L tradewind | grep '/tradewindd.service$')
  [ -f "$iunit" ] || fail "dpkg -L lists no unit"
  relocate() { sed "s#\(^\| \)/#\1$R/#g"; } # every absolute path into R
  pre=$(sed -n 's/^ExecStartPre=//p' "$iunit" | relocate)
  start=$(sed -n 's/^ExecStart=//p' "$iunit" | relocate)
  reload=$(sed -n 's/^ExecReload=//p' "$iunit")
  wdir=$R$(sed -n 's/^WorkingDirectory=//p' "$iunit")
  [ -n "$pre" ] && [ -n "$start" ] && [ -n "$reload" ] || fail "unit lines missing"
  (cd "$wdir" && $pre >/dev/null) || fail "ExecStartPre: $pre"
  dsock=$work/deb-notify.sock
  listen_notify "$dsock" "$work/deb-notify.log"
  (cd "$wdir" && NOTIFY_SOCKET=$dsock exec $start --listen 127.0.0.1:0 \
      --db "$wdir/tradewind.db") \
    >"$work/deb-d.out" 2>"$work/deb-d.err" &
  dd=$!
  pids="$pids $dd"
  wait_line "$work/deb-notify.log" "^READY=1 MAINPID=$dd"
  durl=$(sed -n 's/^listening \(http[^ ]*\).*/\1/p' "$work/deb-d.out")
  [ -n "$durl" ] || fail "the installed daemon printed no address"
  python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + "/healthz", timeout=10)' "$durl" ||
    fail "the installed daemon does not answer /healthz"
  [ -s "$wdir/admin.token" ] || fail "no admin.token in the state directory $wdir"
  sh -c "$(echo "$reload" | sed "s/\$MAINPID/$dd/")" || fail "ExecReload: $reload"
  wait_line "$work/deb-notify.log" '^RELOADING=1'
  i=0; until [ "$(grep -c '^READY=1' "$work/deb-notify.log")" -ge 2 ]; do
    i=$((i+1)); [ $i -lt 200 ] || fail "no READY=1 after ExecReload"; sleep 0.05
  done
  grep -q 'reload' "$work/deb-d.err" || fail "the daemon's log says nothing of the reload"
  kill -TERM "$dd"
  wait "$dd" || fail "the installed daemon exited $?"
  wait_line "$work/deb-notify.log" '^STOPPING=1'
  # removed, the operator's config stays (a conffile) until purged
  dpkg --root="$R" --force-not-root --force-depends --log=/dev/null -r tradewind \
    >>"$work/dpkg.log" 2>&1 || fail "dpkg -r"
  [ ! -e "$R$bin" ] || fail "dpkg -r left $bin"
  [ -f "$R$cfg" ] || fail "dpkg -r removed the conffile $cfg"
  dpkg --root="$R" --force-not-root --force-depends --log=/dev/null -P tradewind \
    >>"$work/dpkg.log" 2>&1 || fail "dpkg -P"
  [ ! -e "$R$cfg" ] || fail "dpkg -P kept $cfg"
else
  echo "note: cpack or dpkg-deb missing, no .deb built"
fi
echo "ok: operations"
