#!/bin/sh
# skypilot.sh WORKDIR SRCDIR - SkyPilot task files submitted as they are:
#   - tests/ux/skypilot/{train,distributed,batch}.yaml submitted unchanged
#     and run to success by tradewind-agent on a booting fake EC2, their
#     output checked (setup before run, the gang's rank and node list);
#   - the two that need no GPU again on the local provider;
#   - workdir.yaml, submitted unchanged from its directory on both: its
#     workdir packed (.gitignore honoured), uploaded, fetched by the agent
#     and unpacked, setup and run reading files from it; the upload's and
#     the submission's refusals, and the fetch only with the agent token;
#   - bad.yaml refused with every one of its errors in one answer;
#   - `tradewind convert` of each task, submitted as a native spec, is the
#     same job (the stored specs are equal);
#   - a gang whose node 1 fails fails at once with that node's code;
#   - secrets.yaml, one secret in the file and one given with --secret
#     from the environment, runs on both; the job prints their digests
#     (compared), and neither value is in any API answer, log file or the
#     database (sealed there); a null one without --secret is refused.
# Needs TW_DAEMON, TW_FAKECLOUD, TW_CLI, TW_AGENT.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=${1:?usage: skypilot.sh WORKDIR SRCDIR}
src=${2:?usage: skypilot.sh WORKDIR SRCDIR}
: "${TW_DAEMON:?}" "${TW_FAKECLOUD:?}" "${TW_CLI:?}" "${TW_AGENT:?}"
. "$here/daemon.sh"
rm -rf "$work" && mkdir -p "$work"
run=$work
tasks=$src/tests/ux/skypilot
unset TRADEWIND_URL TRADEWIND_TOKEN TRADEWIND_CACERT TRADEWIND_CONFIG
fail() { echo "FAIL: $*" >&2; exit 1; }
tw() { "$TW_CLI" --url "$url" "$@"; }

# start_daemon NAME PROVIDERS_YAML: a tradewindd in open mode running its
# attempts under tradewind-agent
start_daemon() {
  cat >"$work/$1.yaml" <<YAML
listen: 127.0.0.1:0
db: $work/$1.db
auth: {mode: open}
scheduler: {tick_ms: 200}
agent: {install: fetch, binary: $TW_AGENT, heartbeat_s: 1, heartbeat_timeout_s: 60, grace_s: 10}
# train.yaml's disk_size and disk_tier, allowed by the operator
machine: {disk_types: [medium], disk_max_gb: 512}
# secrets.yaml's secrets, sealed under this key
secrets: {key_env: TW_UX_SECRETS_KEY}
providers:
$2
YAML
  ux_start "$1" "$TW_DAEMON" --config "$work/$1.yaml"
}

# submit_ok FILE WHAT...: submits FILE as it is, waits for success, and
# checks the job's output has each WHAT
submit_ok() {
  f=$1
  shift
  id=$(tw submit "$f") || fail "$(basename "$f") refused"
  tw jobs wait "$id" --timeout 120s >/dev/null 2>"$work/wait.err" ||
    fail "$(basename "$f"): job $id did not succeed: $(cat "$work/wait.err"); $(tw jobs get "$id" -o json | head -40)"
  tw jobs logs "$id" >"$work/$id.log" 2>&1 || fail "no logs of $id"
  for want in "$@"; do
    grep -q -- "$want" "$work/$id.log" || fail "$(basename "$f"): output lacks \"$want\": $(cat "$work/$id.log")"
  done
}

# secrets_ok NAME: secrets.yaml with HF_TOKEN from the environment; the
# digests the job printed match, and no value is anywhere it must not be
hf_token=hf_$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
wandb_key=wandb-0f3c9a7e5b2d4c1a
export TW_UX_SECRETS_KEY
TW_UX_SECRETS_KEY=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
secrets_ok() {
  if tw submit "$tasks/secrets.yaml" >/dev/null 2>"$work/nosecret.err"; then
    fail "secrets.yaml without --secret HF_TOKEN was accepted"
  fi
  grep -q "secrets.HF_TOKEN: no value" "$work/nosecret.err" ||
    fail "a null secret: $(cat "$work/nosecret.err")"
  # an array's tasks are made from the stored spec, which has no values
  printf 'name: arr\narray: "0-1"\nsecrets: {A: b}\nrun: "true"\n' >"$work/arr.yaml"
  if tw submit "$work/arr.yaml" >/dev/null 2>"$work/arr.err"; then
    fail "an array with secrets was accepted"
  fi
  grep -q "secrets: not with array" "$work/arr.err" || fail "array: $(cat "$work/arr.err")"
  id=$(env HF_TOKEN="$hf_token" "$TW_CLI" --url "$url" submit \
    "$tasks/secrets.yaml" --secret HF_TOKEN) || fail "$1: secrets.yaml refused"
  tw jobs wait "$id" --timeout 120s >/dev/null 2>"$work/wait.err" ||
    fail "$1: secrets.yaml: job $id did not succeed: $(cat "$work/wait.err"); $(tw jobs get "$id" -o json | head -40)"
  tw jobs logs "$id" >"$work/$id.log" 2>&1 || fail "no logs of $id"
  grep -q "setup: pushing llama-3-8b with a token of ${#hf_token} bytes" \
    "$work/$id.log" || fail "setup did not see HF_TOKEN: $(cat "$work/$id.log")"
  for pair in "hf=$hf_token" "wandb=$wandb_key"; do
    want=${pair%%=*}=$(printf %s "${pair#*=}" | sha256sum | cut -d' ' -f1)
    grep -qx "$want" "$work/$id.log" ||
      fail "$1: the job's $want is not in its output: $(cat "$work/$id.log")"
  done
  # sealed while the job lived, deleted once it ended (the list names the
  # sealed values: the agent key's is one)
  curl -s "$url/v1/secrets" | grep -q '"tradewind.agent-key"' ||
    fail "$1: GET /v1/secrets lists no sealed value: $(curl -s "$url/v1/secrets")"
  i=0
  while curl -s "$url/v1/secrets" | grep -q "\"job.$id\""; do
    i=$((i + 1))
    [ $i -lt 50 ] || fail "$1: job $id's sealed secrets outlived it: $(curl -s "$url/v1/secrets")"
    sleep 0.1
  done
  # shown by name only
  tw jobs get "$id" -o json >"$work/$1.get.json"
  python3 - "$work/$1.get.json" <<'PY' || fail "$1: the job's secrets: $(cat "$work/$1.get.json")"
import json, sys
s = json.load(open(sys.argv[1]))["spec"]["secrets"]
assert s == {"HF_TOKEN": None, "WANDB_API_KEY": None}, s
PY
  { tw jobs list -o json; tw jobs get "$id" -o yaml; tw jobs logs "$id"
    tw plan "$tasks/secrets.yaml" -o json; tw convert "$tasks/secrets.yaml"
    curl -s "$url/v1/jobs/$id/events"; curl -s "$url/v1/jobs/$id/attempts"
  } >"$work/$1.answers" 2>&1
  cat "$work/$1.get.json" >>"$work/$1.answers"
  for v in "$hf_token" "$wandb_key"; do
    grep -qF -- "$v" "$work/$1.answers" && fail "$1: a secret value in an API answer"
    # every log: the daemon's, the fake cloud's, the agents'
    leak=$(find "$work" \( -name '*.log' -o -name '*.out' -o -name '*.err' \) \
      -exec grep -lF -- "$v" {} + 2>/dev/null || :)
    [ -z "$leak" ] || fail "$1: a secret value in $leak"
    # the database (the audit rows, the jobs, the sealed values)
    leak=$(find "$work" -name "$1.db*" -exec grep -lF -- "$v" {} + 2>/dev/null || :)
    [ -z "$leak" ] || fail "$1: a secret value in plain in $leak"
  done
}

# workdir_ok NAME: workdir.yaml as it is, from its own directory (SkyPilot
# reads a relative workdir from where the command runs)
workdir_ok() {
  id=$(cd "$tasks" && "$TW_CLI" --url "$url" submit workdir.yaml) ||
    fail "$1: workdir.yaml refused"
  tw jobs wait "$id" --timeout 120s >/dev/null 2>"$work/wait.err" ||
    fail "$1: workdir.yaml: job $id did not succeed: $(cat "$work/wait.err"); $(tw jobs logs "$id" 2>&1 | tail -5)"
  tw jobs logs "$id" >"$work/$id.log" 2>&1 || fail "no logs of $id"
  for want in "setup in sky_workdir" "hello from the workdir" \
    "train: lr=0.001" "scratch.ckpt left out"; do
    grep -qx -- "$want" "$work/$id.log" ||
      fail "$1: workdir.yaml: output lacks \"$want\": $(cat "$work/$id.log")"
  done
  # the stored spec names the archive convert computes, byte for byte
  want=$(cd "$tasks" && tw convert workdir.yaml | python3 -c 'import json,sys; print(json.load(sys.stdin)["workdir"])')
  got=$(tw jobs get "$id" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["spec"]["workdir"])')
  [ "$want" = "$got" ] || fail "$1: convert says $want, the job holds $got"
  hex=${got#sha256:}
  # the archive, fetched only with the attempt's own token
  code=$(curl -s -o /dev/null -w '%{http_code}' "$url/v1/agent/attempts/$id-1/workdir")
  [ "$code" = 403 ] || [ "$code" = 401 ] ||
    fail "$1: the workdir fetched without an agent token: $code"
  # what goes wrong is refused, naming the field
  printf 'name: w\nworkdir: "sha256:%064d"\nrun: "true"\n' 0 >"$work/unknown-wd.yaml"
  if tw submit "$work/unknown-wd.yaml" >/dev/null 2>"$work/unknown-wd.err"; then
    fail "$1: a workdir never uploaded was accepted"
  fi
  grep -q "workdir: sha256:0* is not uploaded to tenant default" "$work/unknown-wd.err" ||
    fail "$1: unknown workdir: $(cat "$work/unknown-wd.err")"
  curl -s -X POST -H 'Content-Type: application/yaml' \
    --data-binary "@$tasks/workdir.yaml" "$url/v1/jobs" >"$work/wd-api.json"
  grep -q '"field":"workdir"' "$work/wd-api.json" &&
    grep -q 'submit the task with tradewind submit' "$work/wd-api.json" ||
    fail "$1: a task's local workdir through the API: $(cat "$work/wd-api.json")"
  printf 'not a tar' >"$work/junk"
  jhex=$(sha256sum "$work/junk" | cut -c1-64)
  curl -s -X PUT -H 'Content-Type: application/x-tar' --data-binary "@$work/junk" \
    "$url/v1/workdirs/$jhex" >"$work/wd-junk.json"
  grep -q '"field":"body"' "$work/wd-junk.json" ||
    fail "$1: a body that is no archive: $(cat "$work/wd-junk.json")"
  curl -s -X PUT -H 'Content-Type: application/x-tar' --data-binary "@$work/junk" \
    "$url/v1/workdirs/$hex" >"$work/wd-hash.json"
  grep -q '"field":"sha256"' "$work/wd-hash.json" ||
    fail "$1: a body of another hash: $(cat "$work/wd-hash.json")"
  code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'Content-Type: application/x-tar' \
    --data-binary "@$work/junk" "$url/v1/workdirs/$(printf %063d 0)g")
  [ "$code" = 400 ] || fail "$1: a malformed hash answered $code"
  # an array's tasks hold nothing: refused (the CLI has uploaded it)
  printf 'name: arr\ntenant: default\narray: "0-1"\nworkdir: %s/workdir-code\nrun: "true"\n' "$tasks" >"$work/wd-arr.yaml"
  if tw submit "$work/wd-arr.yaml" >/dev/null 2>"$work/wd-arr.err"; then
    fail "$1: an array with a workdir was accepted"
  fi
  grep -q "workdir: not with array" "$work/wd-arr.err" ||
    fail "$1: array with a workdir: $(cat "$work/wd-arr.err")"
  code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'Content-Type: text/plain' \
    --data-binary "@$work/junk" "$url/v1/workdirs/$jhex")
  [ "$code" = 415 ] || fail "$1: a text body answered $code"
}

# --- the fake EC2, booting its instances ---------------------------------------
ux_start fakecloud "$TW_FAKECLOUD" --listen 127.0.0.1:0 --seed 5 --pending-ms 200 \
  --clock-speed 1 --boot --boot-dir "$work/boot"
fake=$url
export TW_UX_AWS_ACCESS_KEY=AKIDTRADEWINDFAKE TW_UX_AWS_SECRET_KEY=tradewind-fake-secret
start_daemon ec2 "  - name: aws-fake
    type: aws
    endpoint: $fake
    regions: [us-east-1, us-west-2]
    access_key_env: TW_UX_AWS_ACCESS_KEY
    secret_key_env: TW_UX_AWS_SECRET_KEY
    image: ami-0123456789abcdef0
    agent: true"

submit_ok "$tasks/train.yaml" "setup: preparing llama-3-8b" \
  "training llama-3-8b for 1 epoch(s) on 8 GPUs" done
# the head's output: rank 0 of 2, and the torchrun line built from the env
submit_ok "$tasks/distributed.yaml" "setup on node 0" "node 0 of 2, head " \
  "torchrun --nnodes=2 --node_rank=0 --master_addr="
# both nodes ran: each booted instance's agent registered with its own rank
ranks=$(cat "$work"/boot/*/agent.log 2>/dev/null | grep -c "node [01] of 2" || :)
[ "$ranks" -ge 1 ] || fail "no node waited for its gang: $(cat "$work"/boot/*/agent.log | tail -20)"
grep -l -- "--node-rank 1" "$work"/boot/*/user-data >/dev/null ||
  fail "no node was given rank 1 in its bootstrap"
submit_ok "$tasks/batch.yaml" \
  "evaluating s3://tradewind-ux-data/eval/ in batches of 32 (verbose=true)" done
secrets_ok ec2
workdir_ok ec2

# --- every error of a bad file at once -------------------------------------------
if tw submit "$tasks/bad.yaml" >"$work/bad.out" 2>"$work/bad.err"; then
  fail "bad.yaml was accepted"
fi
n=$(grep -c '^  .*(line [0-9]*)$' "$work/bad.err" || :)
[ "$n" -eq 12 ] || fail "bad.yaml: $n errors reported, want 12: $(cat "$work/bad.err")"
for k in name workdir num_nodes resources.infra resources.accelerators.H100 \
  resources.cpus resources.disk_tier resources.labels resources.job_recovery \
  envs.1BAD secrets.HF-TOKEN file_mounts./remote/code; do
  grep -q "^ *\(tradewind: rejected (400): \)\{0,1\}$k: " "$work/bad.err" ||
    fail "bad.yaml: no error for $k: $(cat "$work/bad.err")"
done
curl -s -X POST -H 'Content-Type: application/yaml' --data-binary "@$tasks/bad.yaml" \
  "$url/v1/jobs" >"$work/bad.json"
python3 - "$work/bad.json" <<'PY' || fail "the problem body: $(cat "$work/bad.json")"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["status"] == 400, p
errs = p["errors"]
assert len(errs) == 12, errs
assert all(e["detail"].startswith(e["field"] + ":") for e in errs), errs
assert p["field"] == errs[0]["field"], p
PY

# --- convert: the printed spec is the same job -------------------------------------
for t in train distributed batch; do
  tw convert "$tasks/$t.yaml" >"$work/$t.native.json" || fail "convert $t.yaml"
  tw convert "$work/$t.native.json" >"$work/$t.again.json" || fail "convert of the converted $t"
  cmp -s "$work/$t.native.json" "$work/$t.again.json" || fail "convert $t is not a fixed point"
  a=$(tw plan "$tasks/$t.yaml" -o json 2>/dev/null | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin).get("spec"), sort_keys=True))' || :)
  b=$(tw plan "$work/$t.native.json" -o json 2>/dev/null | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin).get("spec"), sort_keys=True))' || :)
  [ "$a" = "$b" ] || fail "$t: the plan of the task and of its conversion differ"
done
id1=$(tw submit "$tasks/batch.yaml") && id2=$(tw submit "$work/batch.native.json") ||
  fail "submitting batch and its conversion"
s1=$(tw jobs get "$id1" -o json | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin).get("spec"), sort_keys=True))')
s2=$(tw jobs get "$id2" -o json | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin).get("spec"), sort_keys=True))')
[ "$s1" != "null" ] && [ "$s1" = "$s2" ] || fail "the stored specs differ: $s1 / $s2"

# --- the local provider --------------------------------------------------------------
start_daemon local "  - name: here
    type: local
    dir: $work/local
    cpus: 8
    memory_gib: 8
    agent: true"
submit_ok "$tasks/distributed.yaml" "setup on node 0" "node 0 of 2, head " \
  "torchrun --nnodes=2 --node_rank=0"
submit_ok "$tasks/batch.yaml" "verbose=true" done
secrets_ok local
workdir_ok local
# a node other than the head that fails fails the job at once, with its
# code, while the head still runs
printf 'name: rank1-fails\nnum_nodes: 2\nresources: {cpus: 1+}\nrun: |\n  if [ "$SKYPILOT_NODE_RANK" = 1 ]; then exit 3; fi\n  sleep 60\n' \
  >"$work/fails.yaml"
id=$(tw submit "$work/fails.yaml") || fail "fails.yaml refused"
rc=0
tw jobs wait "$id" --timeout 45s >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 3 ] || fail "a failing rank 1: wait exited $rc, want the job's 3: $(tw jobs get "$id" -o json | head -20)"
echo "ok: SkyPilot tasks"
