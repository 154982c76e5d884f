#!/bin/sh
# first_hour.sh WORKDIR SRCDIR - what a new operator meets first:
#   - a broker with no provider warns at start, and its jobs' reason says
#     why they wait;
#   - configs/demo.yaml (its fake EC2 moved to this test's port) runs a
#     job to success under tradewind-agent on the booting fake, its output
#     read back, with admin.token beside the database;
#   - the example specs of configs/jobs use only variables the broker sets
#     (the checkpoint contract of docs/spot.md) or their own env:, and
#     every one is accepted by the broker's plan.
# Needs TW_DAEMON, TW_FAKECLOUD, TW_CLI and python3 with PyYAML.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=${1:?usage: first_hour.sh WORKDIR SRCDIR}
src=${2:?usage: first_hour.sh WORKDIR SRCDIR}
: "${TW_DAEMON:?}" "${TW_FAKECLOUD:?}" "${TW_CLI:?}"
python3 -c 'import yaml' 2>/dev/null || { echo "SKIPPED: python3 with PyYAML is not installed"; exit 77; }
. "$here/daemon.sh"
rm -rf "$work" && mkdir -p "$work"
run=$work
unset TRADEWIND_URL TRADEWIND_TOKEN TRADEWIND_CACERT TRADEWIND_CONFIG
fail() { echo "FAIL: $*" >&2; exit 1; }

# --- no provider -------------------------------------------------------------
printf 'listen: 127.0.0.1:0\ndb: %s\nauth: {mode: open}\nscheduler: {tick_ms: 100}\n' \
  "$work/np.db" >"$work/np.yaml"
ux_start np "$TW_DAEMON" --config "$work/np.yaml"
grep -q 'warn daemon: no provider is configured' "$work/np.err" || fail "no warning: $(cat "$work/np.err")"
printf 'name: waits\nresources: {cpus: 1+}\nrun: "true"\n' >"$work/w.yaml"
id=$("$TW_CLI" --url "$url" submit "$work/w.yaml")
i=0
until "$TW_CLI" --url "$url" jobs get "$id" -o 'jsonpath={.reason}' | grep -q 'no provider is configured'; do
  i=$((i+1)); [ $i -lt 100 ] || fail "reason: $("$TW_CLI" --url "$url" jobs get "$id" -o 'jsonpath={.reason}')"; sleep 0.1
done

# --- configs/demo.yaml --------------------------------------------------------
# the fake boots its instances, as the file's header says to start it
ux_start fakecloud "$TW_FAKECLOUD" --listen 127.0.0.1:0 --seed 7 --pending-ms 200 \
  --boot --boot-dir "$work/boot"
fake=$url
mkdir -p "$work/demo"
# the file as shipped, with the fake's address and the API on a free port
sed -e "s|http://127.0.0.1:8421|$fake|g" -e 's|^listen: .*|listen: 127.0.0.1:0|' \
  "$src/configs/demo.yaml" >"$work/demo/demo.yaml"
grep -q "$fake" "$work/demo/demo.yaml" || fail "demo.yaml names no fake endpoint"
export TW_DEMO_AWS_ACCESS_KEY=AKIDTRADEWINDFAKE TW_DEMO_AWS_SECRET_KEY=tradewind-fake-secret
(cd "$work/demo" && exec "$TW_DAEMON" --config demo.yaml) >"$work/demo.out" 2>"$work/demo.err" &
ux_pids="$ux_pids $!"
i=0
until url=$(sed -n 's/^listening \(http[^ ]*\).*/\1/p' "$work/demo.out") && [ -n "$url" ]; do
  i=$((i+1)); [ $i -lt 100 ] || fail "demo did not start: $(cat "$work/demo.err")"; sleep 0.1
done
[ -s "$work/demo/admin.token" ] || fail "no admin.token beside the demo database: $(ls "$work/demo")"
[ -f "$work/demo/tradewind-demo.db" ] || fail "the demo database is not where demo.yaml says"
grep -q 'no provider is configured' "$work/demo.err" && fail "demo.yaml warned of no provider"
export TRADEWIND_TOKEN
TRADEWIND_TOKEN=$(cat "$work/demo/admin.token")
printf 'name: demo-hello\nresources: {cpus: 1+}\nduration: 2s\nrun: echo hello\n' >"$work/h.yaml"
hid=$("$TW_CLI" --url "$url" submit "$work/h.yaml" --wait --timeout 60s -q) ||
  fail "the demo job did not succeed: $(tail -5 "$work/demo.err")"
"$TW_CLI" --url "$url" jobs logs "$hid" | grep -qx hello ||
  fail "the demo job's output is not its script's: $("$TW_CLI" --url "$url" jobs logs "$hid" 2>&1 | head -5)"

# --- the example specs ----------------------------------------------------------
python3 - "$src/configs/jobs" <<'PY' || fail "example specs"
import json, os, re, sys, yaml
# what the broker exports before `run` (broker/sched/checkpoint.c)
broker = {"TRADEWIND_JOB_ID", "TRADEWIND_ATTEMPT", "TRADEWIND_CHECKPOINT_URI",
          "TRADEWIND_CHECKPOINT_INTERVAL_S", "TRADEWIND_RESUME_S",
          "TRADEWIND_NOTICE_URL", "TRADEWIND_NOTICE_SIGNAL"}
shell = {"HOME", "PATH", "PWD", "USER", "HOSTNAME"}
bad = []
d = sys.argv[1]
for f in sorted(os.listdir(d)):
    text = open(os.path.join(d, f)).read()
    spec = json.loads(text) if f.endswith(".json") else yaml.safe_load(text)
    run = spec.get("run", "")
    env = set((spec.get("env") or {}).keys())
    for v in re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", run):
        ok = v in env or v in shell or (v in broker and spec.get("checkpoint"))
        if not ok:
            bad.append("%s: $%s is set by neither the broker nor env:" % (f, v))
print("\n".join(bad) or "example specs: every variable is set")
sys.exit(1 if bad else 0)
PY
for f in "$src"/configs/jobs/*; do
  # a plan that finds no offer is fine (the fake has no GPUs); a spec the
  # broker refuses (4xx) is not
  if ! "$TW_CLI" --url "$url" plan "$f" -o json >/dev/null 2>"$work/plan.err" &&
    grep -q 'rejected (4' "$work/plan.err"; then
    fail "$(basename "$f") is refused: $(cat "$work/plan.err")"
  fi
done
# --- configs/tradewind.yaml documents every key the loader knows -------------
python3 - "$src/broker/core/config.c" "$src/configs/tradewind.yaml" <<'PY' || fail "undocumented keys"
import re, sys
keys = re.findall(r'^\s+\{"([a-z_.]+)", K_', open(sys.argv[1]).read(), re.M)
assert len(keys) > 20, keys
present, stack = set(), []
for line in open(sys.argv[2]):
    s = line.rstrip("\n")
    if s.lstrip().startswith("#"):  # a commented example, "  # key:": the
        i = s.index("#")             # key keeps the indentation it has
        rest = s[i + 1:]
        s = s[:i] + (rest[1:] if rest.startswith(" ") else rest)
    m = re.match(r"^(\s*)(?:- )?([a-z_]+):", s)
    if not m:
        continue
    ind = len(m.group(1))
    while stack and stack[-1][0] >= ind:
        stack.pop()
    stack.append((ind, m.group(2)))
    path = ".".join(k for _, k in stack)
    present.add(path)
    flow = re.search(r":\s*\{(.*)\}", s)
    if flow:
        for k in re.findall(r"([a-z_]+):", flow.group(1)):
            present.add(path + "." + k)
missing = [k for k in keys if k not in present]
print("undocumented in configs/tradewind.yaml: %s" % missing if missing
      else "configs/tradewind.yaml: all %d keys documented" % len(keys))
sys.exit(1 if missing else 0)
PY
echo "ok: first hour"
