#!/usr/bin/env bash
# Builds Tradewind and runs the whole test suite, as CI does:
#   1. unit and integration tests under AddressSanitizer + UBSan,
#   2. every test (unit, integration, e2e, conformance, fuzz) in the
#      normal build; ctest's summary line of this run comes last.
# Warnings are errors.  Usage: scripts/test.sh [extra ctest args]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh

jobs=$(nproc 2>/dev/null || echo 2)

echo "== build with AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S . -B build-asan -DTW_SANITIZE=ON -DTW_WERROR=ON \
  -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-asan -j "$jobs"
echo "== unit and integration tests under the sanitizers"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan -L 'unit|integration' --output-on-failure \
        -j "$jobs" "$@"

echo "== build (RelWithDebInfo)"
cmake -S . -B build -DTW_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs"
echo "== every test"
ctest --test-dir build --output-on-failure -j "$jobs" "$@"
