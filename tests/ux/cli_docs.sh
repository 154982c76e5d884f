#!/bin/sh
# cli_docs.sh TRADEWIND DOC - every command of `tradewind --help` has a
# section in DOC (a "### `tradewind CMD ...`" heading), every such heading
# names a command that exists, and every option of each command's --help
# appears in its section.
set -eu
tw=$1
doc=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$tw" --help | sed -n '/^Commands:/,/^$/p' | sed -n 's/^  \([a-z][a-z-]*\( [a-z][a-z-]*\)\{0,1\}\) .*/\1/p' |
  sed 's/ [A-Z].*//' | grep -v '^help$' | sort -u >"$tmp/cmds"
[ -s "$tmp/cmds" ] || { echo "no commands in --help" >&2; exit 1; }
sed -n 's/^### `tradewind \([a-z][a-z-]*\( [a-z][a-z-]*\)\{0,1\}\).*`.*/\1/p' "$doc" |
  sort -u >"$tmp/documented"
rc=0
missing=$(comm -23 "$tmp/cmds" "$tmp/documented")
extra=$(comm -13 "$tmp/cmds" "$tmp/documented")
[ -z "$missing" ] || { echo "commands missing from $doc:"; echo "$missing"; rc=1; }
[ -z "$extra" ] || { echo "documented but not in --help:"; echo "$extra"; rc=1; }
# each command's own options, in its section
while read -r cmd; do
  # shellcheck disable=SC2086
  "$tw" $cmd --help | sed -n '/^Options:/,$p' |
    grep -o '^  \(-[a-zA-Z], \)\{0,1\}--[a-z][a-z-]*' | grep -o -- '--[a-z-]*' |
    sort -u >"$tmp/opts" || :
  awk -v h="### \`tradewind $cmd" 'index($0, h) == 1 {on = 1; next} /^##/ {on = 0} on' "$doc" >"$tmp/section"
  while read -r o; do
    grep -q -- "$o" "$tmp/section" || { echo "$cmd: $o is not in its section of $doc"; rc=1; }
  done <"$tmp/opts"
done <"$tmp/cmds"
[ $rc -eq 0 ] && echo "ok: $(wc -l <"$tmp/cmds") commands documented"
exit $rc
