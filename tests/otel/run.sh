#!/bin/sh
# run.sh - the daemon's OTLP/HTTP JSON traces read by a receiver that is not
# ours: receiver.mjs decodes every export against the official OTLP schema
# (the protobuf types that @opentelemetry/otlp-transformer generates from
# opentelemetry-proto, pinned in package-lock.json) and checks the span tree
# of one job from POST /v1/jobs to its provider call under the submitter's
# traceparent.
#
#   run.sh setup WORKDIR    copy package*.json here to WORKDIR, `npm ci` there
#   run.sh trace WORKDIR    start a receiver, a tradewind-fakecloud
#                           (TW_FAKECLOUD) booting instances for real with
#                           tradewind-agent (TW_AGENT) and a tradewindd
#                           (TW_DAEMON) exporting to it; submit, follow,
#                           check
#
# Exits 77 (ctest: skipped) when node or npm is missing, or when setup did
# not run.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
mode=${1:?usage: run.sh setup|trace WORKDIR}
work=${2:?usage: run.sh setup|trace WORKDIR}

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
trace)
  if [ ! -d "$work/node_modules/@opentelemetry/otlp-transformer" ]; then
    echo "SKIPPED: $work/node_modules is not installed (setup skipped or failed)"
    exit 77
  fi
  : "${TW_DAEMON:?TW_DAEMON: the tradewindd binary}"
  : "${TW_FAKECLOUD:?TW_FAKECLOUD: the tradewind-fakecloud binary}"
  : "${TW_AGENT:?TW_AGENT: the tradewind-agent binary}"
  cp "$here/receiver.mjs" "$work/"
  cd "$work"
  rm -rf run && mkdir run
  node receiver.mjs "$TW_DAEMON" "$TW_FAKECLOUD" "$TW_AGENT" "$work/run"
  ;;
*)
  echo "run.sh: unknown mode $mode" >&2
  exit 2
  ;;
esac
