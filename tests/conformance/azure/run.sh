#!/bin/sh
# run.sh - conformance of tradewind-fakecloud's Azure module with the
# official Azure SDK for JavaScript (@azure/arm-compute, @azure/identity).
# Usage: see ../common.sh; `test` also makes a throwaway certificate and
# trusts it through NODE_EXTRA_CA_CERTS, since the SDK sends bearer tokens
# over https only.  Exits 77 (ctest: skipped) with the reason when node,
# npm or openssl is missing, or node is older than the SDK's floor (20).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
node_min=20
node_why="@azure/core-auth needs 20"
modules="@azure/arm-compute @azure/identity"
. "$here/../common.sh"

conf_run() {
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
  TW_TLS_CERT="$tls/cert.pem" TW_TLS_KEY="$tls/key.pem" \
    NODE_EXTRA_CA_CERTS="$tls/cert.pem" node --test "$1"
}

conf_main "$@"
