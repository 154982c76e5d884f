# daemon.sh - sourced by the ux tests: starts a tradewind-fakecloud that
# boots its instances (--boot) and a tradewindd (open mode) placing on it
# with `agent: true`, so each job runs under tradewind-agent and ends with
# its script's exit code; in $work/run; sets $url.
#   ux_start_broker WORK   needs TW_DAEMON, TW_FAKECLOUD and TW_AGENT
ux_pids=""
ux_cleanup() { for p in $ux_pids; do kill "$p" 2>/dev/null || :; done; }
trap ux_cleanup EXIT INT TERM

# ux_start NAME PROG ARGS...: runs PROG, waits for its `listening URL` line
ux_start() {
  name=$1
  shift
  "$@" >"$run/$name.out" 2>"$run/$name.err" &
  ux_pids="$ux_pids $!"
  i=0
  while [ $i -lt 100 ]; do
    url=$(sed -n 's/^listening \(http[^ ]*\).*/\1/p' "$run/$name.out" | head -1)
    [ -n "$url" ] && return 0
    sleep 0.1
    i=$((i + 1))
  done
  cat "$run/$name.err" >&2
  echo "$name did not start" >&2
  exit 1
}

ux_start_broker() {
  : "${TW_DAEMON:?TW_DAEMON: the tradewindd binary}"
  : "${TW_FAKECLOUD:?TW_FAKECLOUD: the tradewind-fakecloud binary}"
  : "${TW_AGENT:?TW_AGENT: the tradewind-agent binary}"
  run=$1
  rm -rf "$run" && mkdir -p "$run"
  ux_start fakecloud "$TW_FAKECLOUD" --listen 127.0.0.1:0 --seed 3 --pending-ms 200 \
    --boot --boot-dir "$run/boot"
  fake=$url
  export TW_UX_AWS_ACCESS_KEY=AKIDTRADEWINDFAKE TW_UX_AWS_SECRET_KEY=tradewind-fake-secret
  cat >"$run/tradewind.yaml" <<YAML
listen: 127.0.0.1:0
db: $run/tradewind.db
auth: {mode: open}
scheduler: {tick_ms: 200}
agent: {install: fetch, binary: $TW_AGENT, heartbeat_s: 1, heartbeat_timeout_s: 30, grace_s: 10}
providers:
  - name: aws-fake
    type: aws
    endpoint: $fake
    regions: [us-east-1]
    access_key_env: TW_UX_AWS_ACCESS_KEY
    secret_key_env: TW_UX_AWS_SECRET_KEY
    image: ami-0123456789abcdef0
    agent: true
YAML
  ux_start tradewindd "$TW_DAEMON" --config "$run/tradewind.yaml"
}
