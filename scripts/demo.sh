#!/usr/bin/env bash
# The Tradewind demo: builds everything, starts a fake EC2 (tradewind-fakecloud)
# and the broker configured for it, submits jobs with the CLI, and shows
# where they were placed, a capacity fallback, a spot interruption with its
# re-placement, and a job that fits nowhere with the reason; then, on a fake
# EC2 that boots its instances for real (--boot), tradewind-agent running
# the jobs: a script's exit code and output, and a spot notice reaching the
# job, which saves a checkpoint that the next attempt resumes from.
#
#   scripts/demo.sh                  set up, build, run the demo
#   scripts/demo.sh --no-setup DIR   use binaries already built in DIR (tests)
#
# Exits non-zero when the story did not happen as told, so it doubles as an
# end-to-end test (tests/e2e).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

build=build
if [ "${1:-}" = "--no-setup" ]; then
  build=${2:?--no-setup needs the build directory}
else
  bash scripts/deps.sh
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" \
    --target tradewindd tradewind tradewind-agent tradewind-fakecloud >/dev/null
fi
case $build in /*) ;; *) build=$root/$build ;; esac
TRADEWINDD=$build/tradewindd
CLI=$build/cli/tradewind
FAKECLOUD=$build/tests/tradewind-fakecloud
for b in "$TRADEWINDD" "$CLI" "$FAKECLOUD" "$build/tradewind-agent"; do
  [ -x "$b" ] || { echo "demo: $b is not built" >&2; exit 2; }
done

state=$(mktemp -d "${TMPDIR:-/tmp}/tradewind-demo.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  # also when the demo stopped while the cluster was starting
  [ -d "$state/slurm" ] && bash scripts/slurm.sh stop "$state/slurm" >/dev/null 2>&1 || true
  if [ "${KEEP_STATE:-}" = 1 ]; then echo "demo: state kept in $state"; else rm -rf "$state"; fi
}
trap cleanup EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
fail() { echo "demo: FAILED: $*" >&2; exit 1; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

# Starts a program whose first stdout line is "listening URL"; sets $url.
start() {
  local log=$1; shift
  "$@" >"$log.out" 2>"$log.err" &
  pids+=($!)
  for _ in $(seq 100); do
    url=$(sed -n 's/^listening //p' "$log.out" 2>/dev/null | head -1)
    [ -n "$url" ] && return 0
    kill -0 "${pids[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  cat "$log.err" >&2
  fail "$1 did not start"
}

say "starting the fake EC2 (three regions, real wire protocol, SigV4 checked)"
start "$state/fakecloud" "$FAKECLOUD" --listen 127.0.0.1:0 --seed 7 --pending-ms 2000
fake=$url
echo "fake EC2 at $fake"

say "starting a real Slurm cluster (munge, slurmctld, four slurmd, slurmrestd with JWT)"
slurm_entry=""
# slurmrestd runs unprivileged and must traverse into the state directory
chmod 711 "$state"
if bash scripts/slurm.sh start "$state/slurm" >"$state/slurm.log" 2>&1; then
  . "$state/slurm/slurm.env"
  slurm_started=1
  echo "slurmrestd at $TW_SLURM_URL"
  slurm_entry="
  - name: lab
    type: slurm
    endpoint: $TW_SLURM_URL
    user: $TW_SLURM_USER
    token_file: $TW_SLURM_TOKEN_FILE
    output_dir: $TW_SLURM_OUTPUT_DIR
    cluster: lab
    rates: {cpu_hour: \"0.01\", mem_gib_hour: \"0.001\", gpu_hour: {A100: \"0.80\", default: \"0.60\"}}"
else
  slurm_started=0
  echo "Slurm could not be started here (see $state/slurm.log); the demo goes on with the clouds only"
  tail -3 "$state/slurm.log"
fi

say "starting tradewindd on its embedded default store, with the fake as provider aws-demo and Slurm as lab"
export TW_DEMO_AWS_ACCESS_KEY=AKIDTRADEWINDFAKE TW_DEMO_AWS_SECRET_KEY=tradewind-fake-secret
cat >"$state/tradewind.yaml" <<YAML
listen: 127.0.0.1:0
db: $state/tradewind.db
log: {level: info}
scheduler: {tick_ms: 500}
providers:
  - name: aws-demo
    type: aws
    endpoint: $fake
    regions: [us-east-1, us-west-2, eu-west-1]
    access_key_env: TW_DEMO_AWS_ACCESS_KEY
    secret_key_env: TW_DEMO_AWS_SECRET_KEY
    image: ami-0123456789abcdef0
    # where interruption notices are read: on EC2 the instance metadata
    # service; the fake serves the same documents per instance
    metadata_url: $fake/_fake/ec2/instances/{id}
    # the demo's notice comes 4 s ahead, not two minutes: ask every
    # second rather than EC2's guide's 5 s
    notice_poll_ms: 1000$slurm_entry
YAML
start "$state/tradewindd" "$TRADEWINDD" --config "$state/tradewind.yaml"
export TRADEWIND_URL=$url
echo "broker at $TRADEWIND_URL (log: $state/tradewindd.err)"
# the first start writes an admin token beside the database (mode 0600)
if [ -s "$state/admin.token" ]; then
  export TRADEWIND_TOKEN=$(cat "$state/admin.token")
  echo "using the admin token from $state/admin.token (export TRADEWIND_TOKEN=\$(cat admin.token))"
fi

say "the tenants the jobs are billed to (a job for a tenant that does not exist is refused)"
"$CLI" tenant create demo
"$CLI" tenant create research

mkdir -p "$state/jobs"
cat >"$state/jobs/hello.yaml" <<'YAML'
name: hello
tenant: demo
resources: {cpus: 2+}
duration: 8s
run: echo hello from tradewind
YAML
cat >"$state/jobs/train.yaml" <<'YAML'
name: finetune-a100
tenant: research
resources: {accelerators: A100:8, use_spot: true}
duration: 10m
max_price_per_hour: 30
checkpoint: {interval: 5m, uri: s3://demo-ckpt/finetune/}
run: torchrun train.py
YAML
cat >"$state/jobs/inference.yaml" <<'YAML'
name: batch-inference
tenant: research
resources: {accelerators: A10G:1, market: spot}
duration: 30m
YAML
cat >"$state/jobs/huge.yaml" <<'YAML'
name: too-big
tenant: research
resources: {accelerators: H100:16}
YAML

say "one plan explained: where finetune-a100 would run, and why (tradewind plan)"
"$CLI" plan "$state/jobs/train.yaml" -n 5 | tee "$state/plan.out"
grep -q 'p4d.24xlarge' "$state/plan.out" || fail "the plan shows no p4d.24xlarge candidate"

say "a capacity fault: the first A10G spot launch will find no capacity"
curl -fsS -X POST "$fake/_fake/faults" -H 'Content-Type: application/json' \
  -d '{"kind":"capacity","instance_type":"g5.xlarge","market":"spot","count":1}' >/dev/null
echo "injected one InsufficientInstanceCapacity for g5.xlarge spot"

say "submitting four jobs with the CLI, into the two tenants made above"
for f in hello train inference huge; do
  id=$("$CLI" submit "$state/jobs/$f.yaml")
  printf '%-10s %s\n' "$f" "$id"
  eval "id_$f=$id"
done

say "the scheduler places them (cheapest feasible offer first)"
sleep 3
"$CLI" jobs list

placement() { "$CLI" jobs get "$1" -o json | json "d['placement'] and '%s %s %s %s \$%.4f/h' % (d['placement']['provider'], d['placement']['zone'], d['placement']['instance_type'], d['placement']['market'], d['placement']['price_uusd_per_hour']/1e6)"; }
for f in hello train inference; do
  eval "id=\$id_$f"
  printf '%-10s -> %s\n' "$f" "$(placement "$id")"
done

say "capacity fallback: batch-inference moved on to the next offer at once"
"$CLI" jobs events "$id_inference"
"$CLI" jobs events "$id_inference" -o json | grep -q 'refused (capacity' ||
  fail "batch-inference shows no capacity refusal"
placement "$id_inference" | grep -q 'g5.xlarge spot' ||
  fail "batch-inference is not on another g5.xlarge spot offer"
[ "$("$CLI" jobs get "$id_inference" -o json | json "d['placement']['attempt']")" = 2 ] ||
  fail "batch-inference is not on its second attempt"

say "a job that fits nowhere waits, and says why"
"$CLI" jobs get "$id_huge" -o json | json "d['state'] + ': ' + d['reason']"
[ "$("$CLI" jobs get "$id_huge" -o json | json "d['state']")" = pending ] ||
  fail "too-big is not pending"

say "a spot interruption: EC2 sends the two-minute notice (shortened to 4 s here)"
inst=$("$CLI" jobs get "$id_train" -o json | json "d['placement']['instance_id']")
zone1=$("$CLI" jobs get "$id_train" -o json | json "d['placement']['zone']")
for _ in $(seq 40); do
  [ "$("$CLI" jobs get "$id_train" -o json | json "d['state']")" = running ] && break
  sleep 0.25
done
curl -fsS -X POST "$fake/_fake/ec2/instances/$inst/interrupt" \
  -H 'Content-Type: application/json' -d '{"lead_ms":4000}' >/dev/null
echo "interrupting $inst in $zone1"
for _ in $(seq 60); do
  a=$("$CLI" jobs get "$id_train" -o json | json "(d['placement'] or {}).get('attempt', 0)")
  [ "$a" -ge 2 ] && break
  sleep 0.25
done
"$CLI" jobs events "$id_train"
[ "$a" -ge 2 ] || fail "finetune-a100 was not placed again after its interruption"
"$CLI" jobs events "$id_train" -o json | grep -q 'interruption notice for' ||
  fail "finetune-a100 shows no interruption notice"
zone2=$("$CLI" jobs get "$id_train" -o json | json "d['placement']['zone']")
echo "finetune-a100: $zone1 -> $zone2 (attempt $a)"

say "waiting for hello to finish (tradewind jobs wait exits with the job's outcome)"
"$CLI" jobs wait "$id_hello" --timeout 60s && echo "hello: succeeded (exit 0)"

say "cancelling the training run: its instance is terminated"
"$CLI" jobs cancel "$id_train" >/dev/null
sleep 1.5
inst2=$("$CLI" jobs get "$id_train" -o json | json "d['placement']['instance_id']")
curl -fsS "$fake/_fake/ec2/instances/$inst2" | json "'$inst2: ' + d['state']"

if [ "$slurm_started" = 1 ]; then
  say "a job on the private Slurm cluster: it really runs, and CI can wait for its outcome"
  cat >"$state/jobs/lab.yaml" <<'YAML'
name: lab-report
tenant: research
resources: {cpus: 1+}
placement: {providers: [slurm]}
duration: 2m
run: |
  echo "running on $(hostname) as Slurm job $SLURM_JOB_ID"
  echo "2 + 2 = $((2 + 2))"
YAML
  id_lab=$("$CLI" submit "$state/jobs/lab.yaml")
  "$CLI" jobs wait "$id_lab" --timeout 60s || fail "lab-report did not succeed"
  echo "placement: $(placement "$id_lab")"
  echo "--- tradewind jobs logs $id_lab"
  "$CLI" jobs logs "$id_lab" | tee "$state/lab.out"
  grep -q '2 + 2 = 4' "$state/lab.out" || fail "lab-report's output is not readable"
fi

say "all jobs"
"$CLI" jobs list

say "spend report: the ledger, metered under AWS's rules (per second, 60 s minimum)"
# The meter charges an attempt one pass (a tick) after it ends.
for _ in $(seq 20); do
  n=$("$CLI" report spend --group-by job -o json | json "len(d['items'])")
  [ "$n" -ge 2 ] && break
  sleep 0.5
done
"$CLI" report spend --group-by tenant,provider,region
"$CLI" report spend --group-by job,day --format csv
"$CLI" report spend --format html --out "$state/spend.html"
total=$("$CLI" report spend -o json | json "d['total']['effective_cost_uusd']")
[ "$total" -gt 0 ] || fail "the spend report shows no spend"

say "tradewind-agent: a fake EC2 that boots its instances for real, and a broker with agent: true"
# Its own fake and broker, so the story above keeps its placements: each
# instance's user data (the bootstrap) runs as a local process, fetches
# tradewind-agent from the broker (SHA-256 pinned) and the agent runs the job.
start "$state/fakeboot" "$FAKECLOUD" --listen 127.0.0.1:0 --seed 7 --pending-ms 500 \
  --boot --boot-dir "$state/boot"
fakeboot=$url
mkdir -p "$state/agent"
cat >"$state/agent/tradewind.yaml" <<YAML
listen: 127.0.0.1:0
db: $state/agent/tradewind.db
log: {level: info}
scheduler: {tick_ms: 200}
agent: {heartbeat_s: 2, heartbeat_timeout_s: 30}
providers:
  - name: aws-boot
    type: aws
    endpoint: $fakeboot
    regions: [us-east-1]
    access_key_env: TW_DEMO_AWS_ACCESS_KEY
    secret_key_env: TW_DEMO_AWS_SECRET_KEY
    image: ami-0123456789abcdef0
    agent: true               # no metadata_url: notices come from the agent
YAML
demo_url=$TRADEWIND_URL demo_token=${TRADEWIND_TOKEN:-}
start "$state/agent/tradewindd" "$TRADEWINDD" --config "$state/agent/tradewind.yaml"
export TRADEWIND_URL=$url
[ -s "$state/agent/admin.token" ] && export TRADEWIND_TOKEN=$(cat "$state/agent/admin.token")
echo "fake EC2 (booting) at $fakeboot, broker at $TRADEWIND_URL"

say "a script that prints and exits 3: submit --wait exits 3, and its output is kept"
cat >"$state/jobs/fails.yaml" <<'YAML'
name: fails
resources: {cpus: 1+}
run: |
  echo "loading the input"
  echo "no input found" >&2
  exit 3
YAML
rc=0
id_fails=$("$CLI" submit "$state/jobs/fails.yaml" --wait --timeout 60s) || rc=$?
echo "tradewind submit --wait: exit $rc"
[ "$rc" = 3 ] || fail "fails: submit --wait exited $rc, not 3"
"$CLI" jobs get "$id_fails" -o json | json "d['state'] + ', exit ' + str(d['exit_code']) + ' (' + d['reason'] + ')'"
[ "$("$CLI" jobs get "$id_fails" -o json | json "d['exit_code']")" = 3 ] ||
  fail "fails: the job's exit code is not 3"
echo "--- tradewind jobs logs $id_fails"
"$CLI" jobs logs "$id_fails" | tee "$state/fails.out"
grep -q 'loading the input' "$state/fails.out" || fail "fails: its output is not readable"

say "a spot interruption seen from inside: the agent polls IMDSv2, the job's SIGTERM handler saves"
cat >"$state/jobs/resume.yaml" <<'YAML'
name: resumable
resources: {cpus: 1+, use_spot: true}
duration: 10m
checkpoint: {interval: 5m, uri: s3://demo-ckpt/resumable/}
run: |
  if [ "${TRADEWIND_RESUME_S:-0}" -gt 0 ]; then
    echo "attempt $TRADEWIND_ATTEMPT: resuming from step $TRADEWIND_RESUME_S"
    echo "finished"
    exit 0
  fi
  step=0
  trap 'echo "SIGTERM: saving step $step"; echo "$step" > "$TRADEWIND_CHECKPOINT_SAVED"; exit 0' TERM
  while :; do step=$((step + 1)); echo "step $step"; sleep 1; done
YAML
id_res=$("$CLI" submit "$state/jobs/resume.yaml")
for _ in $(seq 100); do
  "$CLI" jobs logs "$id_res" >"$state/resume.out" 2>/dev/null || true
  grep -q '^step 2$' "$state/resume.out" && break
  sleep 0.2
done
grep -q '^step 2$' "$state/resume.out" || fail "resumable never ran"
inst=$("$CLI" jobs get "$id_res" -o json | json "d['placement']['instance_id']")
curl -fsS -X POST "$fakeboot/_fake/ec2/instances/$inst/interrupt" \
  -H 'Content-Type: application/json' -d '{"lead_ms":20000}' >/dev/null
echo "interrupting $inst: its metadata service now serves spot/instance-action"
"$CLI" jobs wait "$id_res" --timeout 60s || fail "resumable did not finish"
echo "--- what the agent on $inst did"
grep -E 'interruption notice|job exited|exit reported' "$state/boot/$inst/agent.log" || true
grep -q 'interruption notice' "$state/boot/$inst/agent.log" ||
  fail "the agent on $inst saw no notice"
echo "--- its first attempt's output, from the instance's sandbox"
tail -3 "$state/boot/$inst/stdout"
grep -q '^SIGTERM: saving step' "$state/boot/$inst/stdout" ||
  fail "resumable's SIGTERM handler did not run"
echo "--- tradewind jobs logs $id_res (the attempt that resumed)"
"$CLI" jobs logs "$id_res" | tee "$state/resume.out"
grep -q 'resuming from step [1-9]' "$state/resume.out" ||
  fail "the next attempt did not resume from the checkpoint"
"$CLI" jobs events "$id_res"
export TRADEWIND_URL=$demo_url TRADEWIND_TOKEN=$demo_token

echo
echo "demo: done"
