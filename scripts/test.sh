#!/usr/bin/env bash
# Builds Tradewind and runs the whole test suite, as CI does:
#   1. unit and integration tests under AddressSanitizer + UBSan,
#   2. unit and integration tests under ThreadSanitizer (every process:
#      a report from a daemon or fake the tests start fails the run too),
#   3. every test (unit, integration, e2e, conformance, fuzz) in the
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

echo "== build with ThreadSanitizer"
cmake -S . -B build-tsan -DTW_TSAN=ON -DTW_WERROR=ON \
  -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-tsan -j "$jobs"
echo "== unit and integration tests under ThreadSanitizer"
# Reports go to files, one per process, so that a race inside a tradewindd
# or tradewind-fakecloud started by a test is seen even when the test
# itself passes.  tests/tsan.supp holds third-party suppressions only.
reports="$PWD/build-tsan/tsan-reports"
rm -rf "$reports" && mkdir -p "$reports"
tsan_rc=0
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp:log_path=$reports/tsan" \
  ctest --test-dir build-tsan -L 'unit|integration' --output-on-failure \
        -j "$jobs" "$@" || tsan_rc=$?
if compgen -G "$reports/tsan.*" >/dev/null; then
  cat "$reports"/tsan.*
  echo "ThreadSanitizer reported the above (files in $reports)" >&2
  exit 1
fi
[ "$tsan_rc" -eq 0 ] || exit "$tsan_rc"

echo "== build (RelWithDebInfo)"
cmake -S . -B build -DTW_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs"
echo "== every test"
ctest --test-dir build --output-on-failure -j "$jobs" "$@"
