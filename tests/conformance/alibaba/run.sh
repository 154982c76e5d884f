#!/bin/sh
# run.sh - conformance of tradewind-fakecloud's ECS module with the official
# Alibaba Cloud SDK (@alicloud/ecs20140526, pinned in package-lock.json).
#
#   run.sh setup WORKDIR   copy package*.json and the tests to WORKDIR and
#                          `npm ci` there (node_modules never enters git)
#   run.sh test WORKDIR TEST.mjs
#                          run one node:test file from WORKDIR
#
# Exits 77 (ctest: skipped) with the reason when node or npm is missing.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
mode=${1:?usage: run.sh setup|test WORKDIR [TEST]}
work=${2:?usage: run.sh setup|test WORKDIR [TEST]}

if ! command -v node >/dev/null 2>&1; then
  echo "SKIPPED: node is not installed"
  exit 77
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 18 ]; then
  echo "SKIPPED: node $major is older than 18 (fetch, node:test)"
  exit 77
fi

case $mode in
setup)
  if ! command -v npm >/dev/null 2>&1; then
    echo "SKIPPED: npm is not installed"
    exit 77
  fi
  mkdir -p "$work"
  cp "$here/package.json" "$here/package-lock.json" "$here"/*.test.mjs "$work/"
  cd "$work"
  npm ci --no-audit --no-fund --loglevel=error
  ;;
test)
  t=${3:?usage: run.sh test WORKDIR TEST.mjs}
  if [ ! -d "$work/node_modules/@alicloud/ecs20140526" ]; then
    echo "SKIPPED: $work/node_modules is not installed (setup skipped or failed)"
    exit 77
  fi
  cp "$here/$t" "$work/$t" # the source copy wins over a stale one
  cd "$work"
  exec node --test "$t"
  ;;
*)
  echo "run.sh: unknown mode $mode" >&2
  exit 2
  ;;
esac
