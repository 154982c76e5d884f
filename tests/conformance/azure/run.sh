#!/bin/sh
# run.sh - conformance of tradewind-fakecloud's Azure module with the
# official Azure SDK for JavaScript (@azure/arm-compute, @azure/identity).
#
#   run.sh setup WORKDIR   copy package*.json and the tests to WORKDIR and
#                          `npm ci` there (node_modules never enters git)
#   run.sh test WORKDIR TEST.mjs
#                          make a throwaway certificate, trust it through
#                          NODE_EXTRA_CA_CERTS and run one node:test file
#
# The SDK sends bearer tokens over https only, hence the certificate.
# Exits 77 (ctest: skipped) with the reason when node, npm or openssl is
# missing, or node is older than the SDK's floor (20).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
mode=${1:?usage: run.sh setup|test WORKDIR [TEST]}
work=${2:?usage: run.sh setup|test WORKDIR [TEST]}

if ! command -v node >/dev/null 2>&1; then
  echo "SKIPPED: node is not installed"
  exit 77
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "SKIPPED: node $major is older than 20 (@azure/core-auth needs 20)"
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
  if [ ! -d "$work/node_modules/@azure/arm-compute" ] ||
    [ ! -d "$work/node_modules/@azure/identity" ]; then
    echo "SKIPPED: $work/node_modules is not installed (setup skipped or failed)"
    exit 77
  fi
  if ! command -v openssl >/dev/null 2>&1; then
    echo "SKIPPED: openssl is not installed (needed for a test certificate)"
    exit 77
  fi
  tls=$(mktemp -d "${TMPDIR:-/tmp}/tw-azure-conf-XXXXXX")
  trap 'rm -rf "$tls"' EXIT
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
    -nodes -days 1 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1,DNS:localhost \
    -keyout "$tls/key.pem" -out "$tls/cert.pem" 2>/dev/null
  cp "$here/$t" "$work/$t" # the source copy wins over a stale one
  cd "$work"
  TW_TLS_CERT="$tls/cert.pem" TW_TLS_KEY="$tls/key.pem" \
    NODE_EXTRA_CA_CERTS="$tls/cert.pem" node --test "$t"
  ;;
*)
  echo "run.sh: unknown mode $mode" >&2
  exit 2
  ;;
esac
