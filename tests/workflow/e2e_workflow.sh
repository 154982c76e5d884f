#!/usr/bin/env bash
# e2e_workflow.sh SOURCE_DIR BUILD_DIR - a workflow, an array and a
# dependency through the real daemon, the fake EC2 (configs/demo.yaml on
# free ports) and the CLI, with the exit codes of submit --wait: a
# fan-out/fan-in workflow succeeds (0), an array with %2 succeeds (0), a
# job after the array runs once it ended (0), a cancelled array ends
# cancelled (4), and the workflow's second step read the first's output
# where it ran.
set -u
src=$1
build=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/tw-wfe2e-XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "e2e_workflow: $*" >&2
  tail -20 "$work/d.log" >&2
  exit 1
}
cd "$work" || exit 1
# the first stdout line of each program is "listening URL": ports chosen
# by the kernel, never guessed
url_of() {
  for _ in $(seq 200); do
    u=$(sed -n 's/^listening //p' "$1" 2>/dev/null | head -1)
    [ -n "$u" ] && { echo "$u"; return 0; }
    sleep 0.05
  done
  return 1
}
"$build/tests/tradewind-fakecloud" --listen 127.0.0.1:0 >fake.log 2>&1 &
pids+=($!)
fake=$(url_of fake.log) || fail "the fake EC2 did not start"
sed -e "s|127.0.0.1:8420|127.0.0.1:0|; s|http://127.0.0.1:8421|$fake|g" \
  -e "s/tradewind-demo.db/wf.db/" "$src/configs/demo.yaml" >demo.yaml
export TW_DEMO_AWS_ACCESS_KEY=AKIDTRADEWINDFAKE TW_DEMO_AWS_SECRET_KEY=tradewind-fake-secret
"$build/tradewindd" --config demo.yaml >d.out 2>d.log &
pids+=($!)
api=$(url_of d.out) || fail "the daemon did not start"
[ -s admin.token ] || fail "the daemon wrote no admin.token"
export TRADEWIND_URL=$api TRADEWIND_TOKEN=$(cat admin.token)
tw="$build/cli/tradewind"
for _ in $(seq 100); do "$tw" offers >/dev/null 2>&1 && break; sleep 0.2; done

cat >wf.yaml <<'DOC'
name: e2e
tasks:
  - name: prep
    outputs: [{name: shards, uri: "s3://e2e/shards/", size: 10GB}]
    job: {resources: {cpus: 2}, duration: 2s}
  - name: train
    depends: [prep]
    for_each: ["0.1", "0.01"]
    job: {resources: {cpus: 2}, duration: 2s}
  - name: pick
    depends: [train]
    job: {resources: {cpus: 2}, duration: 2s}
DOC
wid=$(timeout 120 "$tw" workflow submit wf.yaml --wait 2>wf.err)
rc=$?
[ $rc -eq 0 ] || fail "workflow submit --wait exited $rc: $(cat wf.err)"
"$tw" -o json workflow get "$wid" >wf.json || fail "workflow get"
grep -Eq '"succeeded": ?4' wf.json || fail "not 4 succeeded: $(cat wf.json)"
job=$(curl -s -H "Authorization: Bearer $TRADEWIND_TOKEN" \
  "$TRADEWIND_URL/v1/workflows/$wid/tasks" | grep -o '"job_id":"j-[^"]*"' |
  sed -n 2p | cut -d'"' -f4)
"$tw" -o json jobs get "$job" >train.json || fail "jobs get $job"
grep -Eq '"uri": ?"s3://e2e/shards/"' train.json &&
  grep -Eq '"location": ?"aws:us-' train.json ||
  fail "train did not read prep's output where it ran: $(cat train.json)"

printf 'name: sweep\narray: "0-3%%2"\nresources: {cpus: 2}\nduration: 2s\n' >arr.yaml
aid=$(timeout 120 "$tw" submit arr.yaml --wait 2>arr.err)
rc=$?
[ $rc -eq 0 ] || fail "array submit --wait exited $rc: $(cat arr.err)"
case "$aid" in a-*) ;; *) fail "the array's id is $aid" ;; esac

printf 'name: after\nresources: {cpus: 2}\nduration: 2s\ndepends_on: "afterok:%s"\n' "$aid" >dep.yaml
timeout 120 "$tw" submit dep.yaml --wait >/dev/null 2>dep.err
rc=$?
[ $rc -eq 0 ] || fail "a job after the array exited $rc: $(cat dep.err)"

printf 'name: big\narray: "0-99%%1"\nresources: {cpus: 2}\nduration: 1h\n' >big.yaml
bid=$("$tw" submit big.yaml)
"$tw" workflow cancel "$bid" >/dev/null || fail "workflow cancel"
timeout 60 "$tw" workflow wait "$bid" 2>/dev/null
rc=$?
[ $rc -eq 4 ] || fail "a cancelled array's wait exited $rc, not 4"
echo "e2e_workflow: ok ($wid, $aid, $bid)"
