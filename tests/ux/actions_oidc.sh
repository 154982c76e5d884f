#!/bin/sh
# actions_oidc.sh WORKDIR SRCDIR - examples/github-actions/submit.yml's
# "Submit and wait" step, run as a runner would (bash -eo pipefail, the
# job's token variables set), against a broker that signs in GitHub's
# issuer through auth.oidc: a loopback stand-in for the token service
# (tests/ux/actions_oidc_issuer.py) mints the runner's tokens.  The step's
# rounds are shortened (--timeout 4m to 2s) so a job of a few seconds
# takes several: each round mints a fresh token, the job is submitted
# once (the idempotency key), and the step exits with the job's code.
# Needs TW_DAEMON, TW_CLI, TW_AGENT, python3 (with yaml), jq, openssl.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=${1:?usage: actions_oidc.sh WORKDIR SRCDIR}
src=${2:?usage: actions_oidc.sh WORKDIR SRCDIR}
: "${TW_DAEMON:?}" "${TW_CLI:?}" "${TW_AGENT:?}"
for tool in jq openssl python3; do
  command -v "$tool" >/dev/null || { echo "SKIPPED: no $tool"; exit 77; }
done
python3 -c 'import yaml' 2>/dev/null || { echo "SKIPPED: no python3 yaml"; exit 77; }
. "$here/daemon.sh"
rm -rf "$work" && mkdir -p "$work/issuer" "$work/repo/jobs"
run=$work
unset TRADEWIND_URL TRADEWIND_TOKEN TRADEWIND_CACERT TRADEWIND_CONFIG
fail() { echo "FAIL: $*" >&2; exit 1; }

# the token service
openssl genrsa -out "$work/issuer/key.pem" 2048 2>/dev/null
od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$work/issuer/request.token"
python3 "$here/actions_oidc_issuer.py" "$work/issuer" 2>"$work/issuer.err" &
ux_pids="$ux_pids $!"
i=0
while [ ! -s "$work/issuer/port" ]; do
  i=$((i + 1))
  [ $i -lt 100 ] || fail "the token service did not start: $(cat "$work/issuer.err")"
  sleep 0.1
done
iss=http://127.0.0.1:$(cat "$work/issuer/port")

# the broker: GitHub's issuer mapped as the example's comment says
cat >"$work/tradewind.yaml" <<YAML
listen: 127.0.0.1:0
db: $work/tradewind.db
scheduler: {tick_ms: 200}
agent: {install: fetch, binary: $TW_AGENT, heartbeat_s: 1, heartbeat_timeout_s: 60, grace_s: 10}
auth:
  oidc:
    issuers:
      - name: gha
        issuer: $iss
        audiences: [https://github.com/acme]
        rules:
          - name: train-main
            match: {repository: acme/train, repository_owner: acme,
                    ref: refs/heads/main}
            tenant: default
            role: ci
            principal: "{repository}"
providers:
  - name: here
    type: local
    dir: $work/local
    cpus: 4
    memory_gib: 4
    agent: true
YAML
ux_start tradewindd "$TW_DAEMON" --config "$work/tradewind.yaml"

# the repository the workflow runs in, and the step as the runner gets it
cat >"$work/repo/jobs/train.yaml" <<'YAML'
name: train
resources: {cpus: 1+}
run: |
  sleep 7
  echo trained
YAML
python3 - "$src/examples/github-actions/submit.yml" >"$work/step.sh" <<'PY'
import sys, yaml
wf = yaml.safe_load(open(sys.argv[1]))
assert wf["permissions"]["id-token"] == "write", wf.get("permissions")
step = [s for s in wf["jobs"]["train"]["steps"] if s.get("name") == "Submit and wait"][0]
run = step["run"]
assert "--timeout 4m" in run and "${{ github.run_id }}" in run, run
run = run.replace("${{ github.run_id }}", "4242").replace("${{ github.run_attempt }}", "1")
print(run.replace("--timeout 4m", "--timeout 2s"))
PY
rc=0
(cd "$work/repo" &&
  env PATH="$(dirname "$TW_CLI"):$PATH" TRADEWIND_URL="$url" \
    AUDIENCE=https://github.com/acme \
    ACTIONS_ID_TOKEN_REQUEST_URL="$iss/token?api-version=2.0" \
    ACTIONS_ID_TOKEN_REQUEST_TOKEN="$(cat "$work/issuer/request.token")" \
    bash --noprofile --norc -eo pipefail "$work/step.sh") >"$work/step.out" 2>"$work/step.err" || rc=$?
[ "$rc" -eq 0 ] || fail "the step exited $rc: $(tail -20 "$work/step.err")"
rounds=$(wc -l <"$work/issuer/minted")
[ "$rounds" -ge 2 ] || fail "one token for the whole wait ($rounds minted): $(cat "$work/step.err")"
grep -qv '^https://github.com/acme$' "$work/issuer/minted" &&
  fail "a token for another audience: $(cat "$work/issuer/minted")"
# one job, submitted by the workflow's principal, succeeded
admin=$(cat "$work/admin.token")
TRADEWIND_TOKEN=$admin "$TW_CLI" --url "$url" jobs list -o json >"$work/jobs.json" ||
  fail "jobs list: $(cat "$work/jobs.json")"
python3 - "$work/jobs.json" <<'PY' || fail "the jobs: $(cat "$work/jobs.json")"
import json, sys
d = json.load(open(sys.argv[1]))
items = d["items"] if isinstance(d, dict) else d
assert len(items) == 1, items
assert items[0]["state"] == "succeeded", items[0]
PY
grep -q "already submitted with this idempotency key" "$work/step.err" ||
  fail "no round waited on the stored job: $(cat "$work/step.err")"
echo "ok: the GitHub Actions example signs in with its OIDC token ($rounds rounds)"
