#!/bin/sh
# cli.sh WORKDIR - the tradewind CLI's kubectl habits against a real
# tradewindd: every -o format parsed back, the "=" forms, multi-value
# --state, --sort-by, -q, --watch, jobs describe, whoami, contexts of the
# config file, and the bash and zsh completion scripts.
# Needs TW_DAEMON, TW_FAKECLOUD, TW_AGENT, TW_CLI and python3.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=${1:?usage: cli.sh WORKDIR}
: "${TW_CLI:?TW_CLI: the tradewind binary}"
command -v python3 >/dev/null || { echo "SKIPPED: python3 is not installed"; exit 77; }
. "$here/daemon.sh"
ux_start_broker "$work"
run=$work
unset TRADEWIND_TOKEN TRADEWIND_CACERT
export TRADEWIND_URL=$url TRADEWIND_CONFIG=$run/client.yaml
tw() { "$TW_CLI" "$@"; }
fail() { echo "FAIL: $*" >&2; tail -5 "$run/tradewindd.err" >&2; exit 1; }
py() { python3 -c "$@"; }

cat >"$run/a.yaml" <<'YAML'
name: ux-a
resources: {cpus: 1+}
duration: 1s
run: echo a
YAML
cat >"$run/b.yaml" <<'YAML'
name: ux-b
resources: {cpus: 1+}
duration: 60s
run: sleep 60; echo b
YAML
a=$(tw submit "$run/a.yaml" --wait --timeout=60s -q)
b=$(tw submit "$run/b.yaml")
echo "a=$a b=$b"
[ -n "$a" ] && [ -n "$b" ] || fail "submit printed no id"
# b reaches running
i=0
until [ "$(tw jobs get "$b" -o=jsonpath='{.state}')" = running ]; do
  i=$((i + 1)); [ $i -lt 200 ] || fail "$b never ran"; sleep 0.1
done

# -o json and -o=json, parsed back
tw jobs list -o json >"$run/l.json"
tw jobs list -o=json | cmp -s - "$run/l.json" || fail "-o=json differs from -o json"
py "import json;d=json.load(open('$run/l.json'));ids={j['id'] for j in d['items']};assert {'$a','$b'}<=ids,ids"
# -o yaml parses to the same document as -o json (when PyYAML is there)
if py "import yaml" 2>/dev/null; then
  tw jobs list -o yaml >"$run/l.yaml"
  py "import json,yaml;assert yaml.safe_load(open('$run/l.yaml'))==json.load(open('$run/l.json'))"
  tw jobs get "$b" -o yaml | py "import sys,yaml;d=yaml.safe_load(sys.stdin);assert d['id']=='$b' and d['state']=='running',d"
else
  echo "note: PyYAML missing, -o yaml not parsed back"
fi
# jsonpath, name, -q
[ "$(tw jobs get "$a" -o 'jsonpath={.state} {.exit_code}')" = "succeeded 0" ] || fail "jsonpath"
tw jobs list -o name | sort >"$run/names"
py "import json;d=json.load(open('$run/l.json'));print('\n'.join(sorted(j['id'] for j in d['items'])))" | cmp -s - "$run/names" || fail "-o name"
[ "$(tw jobs list -q --state=succeeded)" = "$a" ] || fail "-q --state=succeeded"
# multi-value filters keep every state
tw jobs list --state succeeded --state running -o name | sort >"$run/two"
printf '%s\n%s\n' "$a" "$b" | sort | cmp -s - "$run/two" || fail "--state a --state b: $(cat "$run/two")"
[ "$(tw jobs list --state succeeded,running -q | wc -l)" -eq 2 ] || fail "--state a,b"
# table and wide: headers and rows
tw jobs list | head -1 | grep -q '^ID  *NAME  *STATE  *TENANT  *PLACEMENT  *AGE$' || fail "table header"
tw jobs list -o wide | head -1 | grep -q 'PROJECT.*PRICE.*REASON' || fail "wide header"
tw jobs list -o wide | grep "$b" | grep -q '\$0\.[0-9]*/h' || fail "wide price"
# --sort-by: names ascending
[ "$(tw jobs list --sort-by=.name -q | head -1)" = "$a" ] || fail "--sort-by .name"
[ "$(tw jobs list --sort-by '{.name}' -o 'jsonpath={.items[*].name}')" = "ux-a ux-b" ] || fail "--sort-by in json"
# --tenant '*' lists every tenant; -A the same
[ "$(tw jobs list --tenant '*' -q | wc -l)" -eq 2 ] || fail "--tenant '*'"
[ "$(tw jobs list -A -q | wc -l)" -eq 2 ] || fail "-A"
# bad values name the flag
if tw jobs list -o xml 2>"$run/err"; then fail "-o xml accepted"; fi
grep -q 'expected table, wide, json, yaml, name or jsonpath' "$run/err" || fail "-o xml message"
if tw jobs list --state=runing 2>"$run/err"; then fail "bad state accepted"; fi
grep -q 'did you mean "running"' "$run/err" || fail "state suggestion"

# describe: placement and why, attempts, events
tw jobs describe "$b" >"$run/desc"
for w in 'State: *running' 'provider: *aws' 'why: ' 'Attempts: *1' 'Events:' 'submitted' 'Cost:'; do
  grep -q "$w" "$run/desc" || fail "describe lacks $w: $(cat "$run/desc")"
done
tw jobs describe "$a" -o json | py "import sys,json;d=json.load(sys.stdin);assert d['job']['state']=='succeeded';assert len(d['attempts'])==1;assert [e['to'] for e in d['events']][-1]=='succeeded'"

# --watch: b's end is printed as one row, then the watch stops at --timeout
(sleep 0.5; tw jobs cancel "$b" >/dev/null) &
canceller=$!
tw jobs list --watch --timeout 3s --state running,cancelled >"$run/watch"
wait "$canceller"
# the list first (b running), then b's change: a row without a header
grep -q "$b.*running" "$run/watch" || fail "watch: no running row: $(cat "$run/watch")"
grep -q "$b.*cancelled" "$run/watch" || fail "watch: the cancel was not printed: $(cat "$run/watch")"
[ "$(grep -c '^ID ' "$run/watch")" -eq 1 ] || fail "watch: one header only"

# whoami
tw whoami | grep -q '^Role  *admin' || fail "whoami"
[ "$(tw whoami -o jsonpath='{.role}')" = admin ] || fail "whoami jsonpath"

# contexts: the file, use-context, token_file, --context over the environment
tw config set-context here --url "$url"
tw config set-context nowhere --url http://127.0.0.1:1 --token-file "$run/tok"
printf 'secret-token\n' >"$run/tok"
[ "$(tw config current-context)" = here ] || fail "first context is current"
tw config get-contexts | grep -q '^\*  *here' || fail "get-contexts marks current"
unset TRADEWIND_URL
tw whoami >/dev/null || fail "whoami through the context"
tw config use-context nowhere 2>/dev/null
if tw whoami 2>"$run/err"; then fail "context nowhere reached a server"; fi
grep -q '127.0.0.1:1' "$run/err" || fail "nowhere: $(cat "$run/err")"
TRADEWIND_URL=$url tw whoami >/dev/null || fail "the environment over current-context"
if TRADEWIND_URL=$url tw --context nowhere whoami 2>/dev/null; then fail "--context over the environment"; fi
tw --context=here whoami >/dev/null || fail "--context=here"
if tw --context missing whoami 2>"$run/err"; then fail "missing context accepted"; fi
grep -q 'not in' "$run/err" || fail "missing context message"
tw config use-context here 2>/dev/null
tw config delete-context nowhere
tw config get-contexts -o json | py "import sys,json;d=json.load(sys.stdin);assert [c['name'] for c in d['items']]==['here'],d"
grep -q secret-token "$run/client.yaml" && fail "the token was written to the config"
[ "$(stat -c %a "$run/client.yaml")" = 600 ] || fail "config mode"

# completion: valid scripts that complete commands and flags
tw completion bash >"$run/c.bash"
bash -n "$run/c.bash"
out=$(bash -c ". '$run/c.bash'; COMP_WORDS=(tradewind jobs de); COMP_CWORD=2; _tradewind; echo \${COMPREPLY[*]}")
[ "$out" = describe ] || fail "bash completion of 'jobs de': $out"
out=$(bash -c ". '$run/c.bash'; COMP_WORDS=(tradewind jobs list --so); COMP_CWORD=3; _tradewind; echo \${COMPREPLY[*]}")
[ "$out" = --sort-by ] || fail "bash completion of --so: $out"
tw completion zsh >"$run/c.zsh"
if command -v zsh >/dev/null; then zsh -n "$run/c.zsh" || fail "zsh script"; else echo "note: zsh missing, zsh -n not run"; fi
grep -q '^#compdef tradewind' "$run/c.zsh" || fail "zsh compdef"
if tw completion fish 2>/dev/null; then fail "fish accepted"; fi
echo "ok: cli habits"
