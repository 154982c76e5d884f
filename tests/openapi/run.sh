#!/bin/sh
# run.sh - api/openapi.yaml checked by real OpenAPI tools from npm (pinned
# in package-lock.json):
#
#   run.sh setup WORKDIR    copy package*.json here to WORKDIR, `npm ci` there
#   run.sh lint WORKDIR     @redocly/cli lint (recommended rules): zero errors
#   run.sh client WORKDIR   openapi-typescript writes the client's types from
#                           the document, tsc --strict compiles client.ts
#                           against them, and the compiled client submits a job
#                           to a tradewindd (TW_DAEMON) placing on a
#                           tradewind-fakecloud (TW_FAKECLOUD) started here,
#                           and waits for it to succeed
#
# Exits 77 (ctest: skipped) when node or npm is missing or too old, or when
# setup did not run.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
mode=${1:?usage: run.sh setup|lint|client WORKDIR}
work=${2:?usage: run.sh setup|lint|client WORKDIR}

if ! command -v node >/dev/null 2>&1; then
  echo "SKIPPED: node is not installed"
  exit 77
fi
# @redocly/cli 2 runs on node 20.19+ and 22.12+
if ! node -e 'const [a,b]=process.versions.node.split(".").map(Number);
  process.exit(a>22||(a===22&&b>=12)||(a===20&&b>=19)||a===21?0:1)'; then
  echo "SKIPPED: node $(node --version) is older than 20.19 (@redocly/cli 2)"
  exit 77
fi

need_modules() {
  for m in @redocly/cli openapi-typescript openapi-fetch typescript; do
    if [ ! -d "$work/node_modules/$m" ]; then
      echo "SKIPPED: $work/node_modules is not installed (setup skipped or failed)"
      exit 77
    fi
  done
}

case $mode in
setup)
  if ! command -v npm >/dev/null 2>&1; then
    echo "SKIPPED: npm is not installed"
    exit 77
  fi
  mkdir -p "$work"
  cp "$here/package.json" "$here/package-lock.json" "$work/"
  cd "$work"
  npm ci --no-audit --no-fund --loglevel=error
  ;;
lint)
  need_modules
  cp "$here/redocly.yaml" "$work/"
  cd "$work"
  # JSON output, counted here: the exit code alone would not tell a lint
  # failure from a crash of the tool.
  rc=0
  REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
    ./node_modules/.bin/redocly lint --config redocly.yaml --format=json \
    "$src/api/openapi.yaml" >lint.json 2>lint.err || rc=$?
  node -e '
    const r = JSON.parse(require("fs").readFileSync("lint.json", "utf8"));
    const t = r.totals;
    for (const p of r.problems)
      console.log(`${p.severity}: ${p.ruleId}: ${p.message} at ${p.location[0].pointer}`);
    console.log(`openapi lint: ${t.errors} errors, ${t.warnings} warnings`);
    if (typeof t.errors !== "number" || t.errors !== 0) process.exit(1);
  ' || { cat lint.err >&2; exit 1; }
  [ "$rc" -eq 0 ] || { echo "redocly exited $rc" >&2; cat lint.err >&2; exit 1; }
  ;;
client)
  need_modules
  : "${TW_DAEMON:?TW_DAEMON: the tradewindd binary}"
  : "${TW_FAKECLOUD:?TW_FAKECLOUD: the tradewind-fakecloud binary}"
  cp "$here/client.ts" "$here/tsconfig.json" "$work/"
  cd "$work"
  rm -rf out schema.d.ts run && mkdir run
  ./node_modules/.bin/openapi-typescript "$src/api/openapi.yaml" -o schema.d.ts
  ./node_modules/.bin/tsc -p tsconfig.json
  pids=""
  trap 'for p in $pids; do kill "$p" 2>/dev/null || :; done' EXIT INT TERM
  # start NAME PROG ARGS...: runs PROG, waits for its `listening URL` line
  start() {
    name=$1
    shift
    "$@" >"run/$name.out" 2>"run/$name.err" &
    pids="$pids $!"
    i=0
    while [ $i -lt 100 ]; do
      url=$(sed -n 's/^listening \(http[^ ]*\).*/\1/p' "run/$name.out" | head -1)
      [ -n "$url" ] && return 0
      sleep 0.1
      i=$((i + 1))
    done
    cat "run/$name.err" >&2
    echo "$name did not start" >&2
    exit 1
  }
  : "${TW_AGENT:?TW_AGENT: the tradewind-agent binary}"
  # --boot: the instance runs its bootstrap and the agent the job's
  # script, so the job ends with its exit code
  start fakecloud "$TW_FAKECLOUD" --listen 127.0.0.1:0 --seed 3 --pending-ms 200 \
    --boot --boot-dir "$work/run/boot"
  fake=$url
  export TW_OA_AWS_ACCESS_KEY=AKIDTRADEWINDFAKE TW_OA_AWS_SECRET_KEY=tradewind-fake-secret
  cat >run/tradewind.yaml <<YAML
listen: 127.0.0.1:0
db: $work/run/tradewind.db
auth: {mode: open}
scheduler: {tick_ms: 200}
agent: {install: fetch, binary: $TW_AGENT, heartbeat_s: 1}
providers:
  - name: aws-fake
    type: aws
    endpoint: $fake
    regions: [us-east-1]
    access_key_env: TW_OA_AWS_ACCESS_KEY
    secret_key_env: TW_OA_AWS_SECRET_KEY
    image: ami-0123456789abcdef0
    agent: true
YAML
  start tradewindd "$TW_DAEMON" --config run/tradewind.yaml
  node out/client.js "$url" || { tail -20 run/tradewindd.err >&2; exit 1; }
  ;;
*)
  echo "run.sh: unknown mode $mode" >&2
  exit 2
  ;;
esac
