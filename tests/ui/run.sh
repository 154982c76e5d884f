#!/bin/sh
# run.sh - the web console in a real browser (label ui):
#
#   run.sh setup WORKDIR     copy package*.json here to WORKDIR, `npm ci` there
#                            (puppeteer-core, pinned in package-lock.json)
#   run.sh browser WORKDIR   start a tradewindd (TW_DAEMON, tokens required)
#                            with the local provider, then console.test.mjs
#                            drives Debian's chromium headless against /ui;
#                            screenshots in WORKDIR/artifacts
#
# Exits 77 (ctest: skipped) when node, npm or chromium is missing, or when
# setup did not run.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
mode=${1:?usage: run.sh setup|browser WORKDIR}
work=${2:?usage: run.sh setup|browser WORKDIR}

if ! command -v node >/dev/null 2>&1; then
  echo "SKIPPED: node is not installed"
  exit 77
fi

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
browser)
  if [ ! -d "$work/node_modules/puppeteer-core" ]; then
    echo "SKIPPED: $work/node_modules is not installed (setup skipped or failed)"
    exit 77
  fi
  chromium=${TW_CHROMIUM:-}
  if [ -z "$chromium" ]; then
    for c in chromium chromium-browser google-chrome; do
      if command -v "$c" >/dev/null 2>&1; then
        chromium=$(command -v "$c")
        break
      fi
    done
  fi
  if [ -z "$chromium" ]; then
    echo "SKIPPED: chromium is not installed (scripts/deps.sh installs Debian's chromium package)"
    exit 77
  fi
  : "${TW_DAEMON:?TW_DAEMON: the tradewindd binary}"
  cp "$here/console.test.mjs" "$work/"
  cd "$work"
  rm -rf run artifacts && mkdir -p run artifacts
  pid=""
  # the daemon, then the agents its local provider started for the test's
  # jobs (each in a session of its own, under run/local): they would go on
  # calling a broker that is gone
  stop() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    # an agent stops its job on SIGTERM and would report that to nobody
    # for ever: KILL whatever of them is left a moment later
    pkill -TERM -f -- "--dir $work/run/local/" 2>/dev/null && sleep 1
    pkill -KILL -f -- "--dir $work/run/local/" 2>/dev/null
    :
  }
  trap stop EXIT INT TERM
  cat >run/tradewind.yaml <<YAML
listen: 127.0.0.1:0
db: $work/run/tradewind.db
scheduler: {tick_ms: 200}
providers:
  - name: local
    type: local
    dir: $work/run/local
    agent: true
    cpus: 4
    memory_gib: 4
    rates: {cpu_hour: "3.60", mem_gib_hour: "0.00"}
YAML
  "$TW_DAEMON" --config run/tradewind.yaml >run/tradewindd.out 2>run/tradewindd.err &
  pid=$!
  i=0
  url=""
  while [ $i -lt 100 ]; do
    url=$(sed -n 's/^listening \(http[^ ]*\).*/\1/p' run/tradewindd.out | head -1)
    [ -n "$url" ] && [ -s run/admin.token ] && break
    sleep 0.1
    i=$((i + 1))
  done
  [ -n "$url" ] || { cat run/tradewindd.err >&2; echo "tradewindd did not start" >&2; exit 1; }
  TW_URL=$url TW_ADMIN_TOKEN_FILE=$work/run/admin.token TW_CHROMIUM=$chromium \
    TW_ARTIFACTS=$work/artifacts node console.test.mjs ||
    { tail -30 run/tradewindd.err >&2; exit 1; }
  ;;
*)
  echo "run.sh: unknown mode $mode" >&2
  exit 2
  ;;
esac
