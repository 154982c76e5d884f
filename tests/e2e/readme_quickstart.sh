#!/usr/bin/env bash
# readme_quickstart.sh SOURCE_DIR BUILD_DIR - runs README.md's "Running the
# broker yourself" as written: the first block's daemon line, the second
# block whole, in a fresh directory holding `configs/` and `build/` (the
# build itself is the test's build).  The port is the one change: 8420 is
# replaced by a free one, in the config and in the blocks alike.  Asserts
# the job's exit code and its output read back through `jobs logs`; then
# the same with a job that exits 3, and with the programs `cmake --install`
# puts in place (the agent found beside the installed tradewindd).
set -u
src=$1
build=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/tw-readme-XXXXXX")
daemon=
cleanup() {
  [ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  # the sandboxes' processes are the local provider's; they have exited
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "readme_quickstart: $*" >&2
  for f in "$work"/run/daemon.err "$work"/run/block2.err; do
    [ -f "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }
  done
  exit 1
}

# The section's shell blocks, one file each.
awk -v dir="$work" '
  /^## Running the broker yourself/ { on = 1; next }
  on && /^## / { exit }
  on && /^```sh$/ { n++; inblock = 1; next }
  on && inblock && /^```$/ { inblock = 0; next }
  on && inblock { print > (dir "/block" n ".sh") }
' "$src/README.md"
[ -s "$work/block1.sh" ] && [ -s "$work/block2.sh" ] ||
  fail "README.md: the section's two sh blocks were not found"
daemon_line=$(grep '^build/tradewindd ' "$work/block1.sh") ||
  fail "README.md: the first block starts no build/tradewindd"
grep -q '^cmake ' "$work/block1.sh" || fail "README.md: the build line is gone"

# One run of the two blocks in a fresh directory; $1: the build directory
# the blocks' build/ stands for, $2: the job file in place of hello.yaml
# (empty: hello.yaml itself).  Sets out (block 2's stdout).
run_blocks() {
  local bin=$1 job=$2
  rm -rf "$work/run"
  mkdir -p "$work/run/configs"
  ln -s "$bin" "$work/run/build"
  ln -s "$src/configs/jobs" "$work/run/configs/jobs"
  local port tries=0
  while :; do
    port=$((20000 + RANDOM % 30000))
    sed "s/127\.0\.0\.1:8420/127.0.0.1:$port/" "$src/configs/tradewind.yaml" \
      >"$work/run/configs/tradewind.yaml"
    (cd "$work/run" && exec bash -c "exec ${daemon_line%%#*}") \
      >"$work/run/daemon.out" 2>"$work/run/daemon.err" &
    daemon=$!
    for _ in $(seq 100); do
      grep -q '^listening ' "$work/run/daemon.out" 2>/dev/null && break
      kill -0 "$daemon" 2>/dev/null || break
      sleep 0.1
    done
    grep -q '^listening ' "$work/run/daemon.out" && break
    kill "$daemon" 2>/dev/null
    wait "$daemon" 2>/dev/null
    daemon=
    tries=$((tries + 1))
    [ $tries -lt 3 ] || fail "tradewindd did not start"
  done
  sed "s/127\.0\.0\.1:8420/127.0.0.1:$port/" "$work/block2.sh" >"$work/run/block2.sh"
  if [ -n "$job" ]; then
    sed -i "s#configs/jobs/hello.yaml#$job#" "$work/run/block2.sh"
  fi
  out=$(cd "$work/run" && env -u TRADEWIND_URL -u TRADEWIND_TOKEN \
    timeout 60 bash "$work/run/block2.sh" 2>"$work/run/block2.err")
  kill "$daemon" 2>/dev/null
  wait "$daemon" 2>/dev/null
  daemon=
}

expect_line() {
  printf '%s\n' "$out" | grep -qx -- "$1" ||
    fail "$2: no line \"$1\" in block 2's output:
$out"
}

# 1. As written: hello succeeds, exit 0, its output read back.
run_blocks "$build" ""
expect_line "exit 0" "hello"
expect_line "hello" "hello"
printf '%s\n' "$out" | grep -q ' hello  *succeeded  *default  *local/local/local-' ||
  fail "hello: jobs list does not show it succeeded on local:
$out"
grep -q 'succeeded (exited with code 0)' "$work/run/block2.err" ||
  fail "hello: the wait did not end on the agent's exit report"

# 2. A script that fails: the wait exits with its code, its output is kept.
cat >"$work/exit3.yaml" <<'YAML'
name: exit3
resources:
  cpus: 1
run: echo "about to fail"; echo "to stderr" >&2; exit 3
YAML
run_blocks "$build" "$work/exit3.yaml"
expect_line "exit 3" "exit3"
expect_line "about to fail" "exit3"
printf '%s\n' "$out" | grep -q ' exit3  *failed ' ||
  fail "exit3: jobs list does not show it failed:
$out"

# 3. After `cmake --install`: the agent is found beside tradewindd.
cmake --install "$build" --prefix "$work/prefix" >/dev/null ||
  fail "cmake --install failed"
[ -x "$work/prefix/bin/tradewind-agent" ] || fail "the agent was not installed"
# build/tradewindd and build/cli/tradewind, as the blocks name them
mkdir -p "$work/inst"
ln -s "$work/prefix/bin/tradewindd" "$work/inst/tradewindd"
mkdir -p "$work/inst/cli"
ln -s "$work/prefix/bin/tradewind" "$work/inst/cli/tradewind"
run_blocks "$work/inst" ""
expect_line "exit 0" "installed"
expect_line "hello" "installed"
echo "readme_quickstart: ok"
