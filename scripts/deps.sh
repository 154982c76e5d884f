#!/usr/bin/env bash
# Installs, from Debian's packages, only what this machine is missing to
# build and test Tradewind.  Idempotent; needs root (or sudo) only when
# something is missing.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config
  libcurl4-openssl-dev libssl-dev libjansson-dev libxml2-dev
  libsqlite3-dev uuid-dev libyaml-dev libcmocka-dev
  libmicrohttpd-dev            # the tests' fake servers (the daemon's is its own)
  libpq-dev postgresql-15      # the PostgreSQL store backend and its tests
  sqlite3 curl ca-certificates
  chromium                     # renders the HTML spend report in its test
  python3 python3-botocore     # the independent SigV4 signer for tests
)
# Node.js and npm run the official cloud SDKs in the conformance tests;
# a machine that already has them (any install) keeps its own.
command -v node >/dev/null 2>&1 || PKGS+=(nodejs)
command -v npm >/dev/null 2>&1 || PKGS+=(npm)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: everything is installed"
  exit 0
fi
echo "deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: done"
