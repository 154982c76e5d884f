# common.sh - what every conformance run.sh does, sourced by each of them.
#
# A run.sh sets, before sourcing this file:
#   here       its own directory: package.json, package-lock.json and the
#              *.test.mjs files are copied from there
#   node_min   the oldest node major version its SDK runs on
#   node_why   why, for the skip message
#   modules    the node_modules/ directories (space-separated) that prove
#              `npm ci` ran
# and then calls conf_main "$@":
#
#   run.sh setup WORKDIR   copy package*.json and the tests to WORKDIR and
#                          `npm ci` there (node_modules never enters git)
#   run.sh test WORKDIR TEST.mjs
#                          run one node:test file from WORKDIR, through
#                          conf_run (redefine it after sourcing to wrap the
#                          run, as the Azure one does)
#
# Exits 77 (ctest: skipped) with the reason when node or npm is missing or
# node is older than node_min.

# Runs node:test file $1 in the current directory (WORKDIR).
conf_run() {
  exec node --test "$1"
}

conf_main() {
  mode=${1:?usage: run.sh setup|test WORKDIR [TEST]}
  work=${2:?usage: run.sh setup|test WORKDIR [TEST]}

  if ! command -v node >/dev/null 2>&1; then
    echo "SKIPPED: node is not installed"
    exit 77
  fi
  major=$(node -p 'process.versions.node.split(".")[0]')
  if [ "$major" -lt "$node_min" ]; then
    echo "SKIPPED: node $major is older than $node_min ($node_why)"
    exit 77
  fi

  case $mode in
  setup)
    if ! command -v npm >/dev/null 2>&1; then
      echo "SKIPPED: npm is not installed"
      exit 77
    fi
    mkdir -p "$work"
    cp "$here/package.json" "$here/package-lock.json" "$here"/*.test.mjs \
      "$work/"
    cd "$work"
    npm ci --no-audit --no-fund --loglevel=error
    ;;
  test)
    t=${3:?usage: run.sh test WORKDIR TEST.mjs}
    for m in $modules; do
      if [ ! -d "$work/node_modules/$m" ]; then
        echo "SKIPPED: $work/node_modules is not installed (setup skipped or failed)"
        exit 77
      fi
    done
    cp "$here/$t" "$work/$t" # the source copy wins over a stale one
    cd "$work"
    conf_run "$t"
    ;;
  *)
    echo "run.sh: unknown mode $mode" >&2
    exit 2
    ;;
  esac
}
