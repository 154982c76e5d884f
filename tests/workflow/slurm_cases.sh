#!/usr/bin/env bash
# slurm_cases.sh - the cases of tests/workflow/cases.txt through Slurm's own
# sbatch --dependency and --array on the project's cluster
# (scripts/slurm.sh), with the outcomes Tradewind's test_flow expects.
#
# Usage: tests/workflow/slurm_cases.sh [CASES_FILE]
#   TW_SLURM_DIR  the cluster's state dir (its slurm.env is sourced)
# Exit: 0 every case agreed, 1 some did not (each is named), 77 no cluster.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cases=${1:-$here/cases.txt}
state=${TW_SLURM_DIR:-}
if [ -z "$state" ] || [ ! -r "$state/slurm.env" ]; then
  echo "SKIPPED: no Slurm cluster (TW_SLURM_DIR/slurm.env; scripts/slurm.sh start)"
  exit 77
fi
# shellcheck disable=SC1091
. "$state/slurm.env"
if ! command -v sbatch >/dev/null || ! sinfo -h >/dev/null 2>&1; then
  echo "SKIPPED: sbatch or the controller is not answering"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
jobs_of_case=()

sb() { sbatch --parsable -o /dev/null -e /dev/null "$@" | cut -d';' -f1; }

field() { # field JOBID NAME: from scontrol's one-line record
  scontrol -o show job "$1" 2>/dev/null | head -1 | tr ' ' '\n' |
    sed -n "s/^$2=//p" | head -1
}

wait_state() { # wait_state JOBID "STATE|STATE" SECONDS
  local end=$((SECONDS + $3))
  while [ $SECONDS -lt $end ]; do
    case "|$2|" in *"|$(field "$1" JobState)|"*) return 0 ;; esac
    sleep 0.5
  done
  return 1
}

cleanup_case() {
  [ ${#jobs_of_case[@]} -gt 0 ] && scancel "${jobs_of_case[@]}" 2>/dev/null
  jobs_of_case=()
}

# What a dependent job's record says, in the case file's words.
outcome() {
  local st rs
  st=$(field "$1" JobState)
  rs=$(field "$1" Reason)
  case "$st" in
  RUNNING | COMPLETED | COMPLETING | CONFIGURING) echo run ;;
  CANCELLED | FAILED) echo never ;;
  PENDING)
    case "$rs" in
    DependencyNeverSatisfied) echo stuck ;;
    Dependency) echo wait ;;
    *) echo run ;; # waiting for resources or priority: the dependency is met
    esac ;;
  *) echo "$st" ;;
  esac
}

upstream() { # upstream OUTCOME[=same] -> job id
  local w=${1%=same} name=upstream
  [ "$w" != "$1" ] && name=dependent
  local id
  case "$w" in
  ok) id=$(sb -J "$name" --wrap 'sleep 2; exit 0') ;;
  fail) id=$(sb -J "$name" --wrap 'sleep 2; exit 1') ;;
  cancel) id=$(sb -J "$name" --hold --wrap true) && scancel "$id" ;;
  run) id=$(sb -J "$name" --wrap 'sleep 600') && wait_state "$id" RUNNING 30 ;;
  hold) id=$(sb -J "$name" --hold --wrap true) ;;
  esac
  echo "$id"
}

observe() { # observe JOBID WANT: polls until WANT shows or 20 s pass
  local end=$((SECONDS + 20)) got
  while :; do
    got=$(outcome "$1")
    [ "$got" = "$2" ] && { echo "$got"; return; }
    [ $SECONDS -ge $end ] && { echo "$got"; return; }
    sleep 1
  done
}

check() { # check NAME GOT WANT
  if [ "$2" = "$3" ]; then
    echo "ok   $1: $2"
  else
    echo "FAIL $1: got $2, want $3"
    failed=$((failed + 1))
  fi
}

trim() { sed 's/^ *//; s/ *$//'; }

while IFS= read -r line; do
  kind=${line%% *}
  case "$kind" in dep | arr | idx | thr) ;; *) continue ;; esac
  IFS='|' read -r f0 f1 f2 f3 f4 <<<"${line#* }"
  name=$(trim <<<"$f0")
  a=$(trim <<<"$f1")
  b=$(trim <<<"$f2")
  c=$(trim <<<"$f3")
  d=$(trim <<<"$f4")
  case "$kind" in
  dep)
    ids=()
    for w in $a; do
      ids+=("$(upstream "$w")")
      jobs_of_case+=("${ids[-1]}")
    done
    dep=$b
    for i in "${!ids[@]}"; do dep=${dep//%$((i + 1))/${ids[$i]}}; done
    kill=$([ "$c" = yes ] && echo yes || echo no)
    me=$(sb -J dependent --dependency="$dep" --kill-on-invalid-dep="$kill" \
      --wrap true)
    jobs_of_case+=("$me")
    # the upstreams that end on their own end first
    k=0
    for w in $a; do
      case "${w%=same}" in
      ok | fail) wait_state "${ids[$k]}" "COMPLETED|FAILED" 30 ;;
      esac
      k=$((k + 1))
    done
    # "wait" must still be waiting after a few scheduler cycles
    [ "$d" = wait ] && sleep 5
    check "$name" "$(observe "$me" "$d")" "$d"
    cleanup_case
    ;;
  arr)
    aid=""
    if [ "$a" != - ]; then
      idx=${a%%=*}
      outs=${a#*=}
      script="case \$SLURM_ARRAY_TASK_ID in"
      k=0
      IFS=',' read -r -a list <<<"$outs"
      # the indices in order: ranges of the case file are small
      mapfile -t ixs < <(python3 -c "
import sys
out=[]
for p in sys.argv[1].split(','):
    if '-' in p:
        a,b=p.split('-'); out+=range(int(a),int(b)+1)
    else: out.append(int(p))
print('\n'.join(map(str,out)))" "$idx")
      for o in "${list[@]}"; do
        code=$([ "$o" = ok ] && echo 0 || echo 1)
        script="$script ${ixs[$k]}) sleep 2; exit $code;;"
        k=$((k + 1))
      done
      script="$script esac"
      aid=$(sb -J up --array="$idx" --wrap "$script")
      jobs_of_case+=("$aid")
    fi
    dep=${b//%A/$aid}
    args=(-J down --kill-on-invalid-dep=yes --wrap true)
    [ "$dep" != - ] && args+=(--dependency="$dep")
    [ "$c" != - ] && args+=(--array="$c")
    me=$(sb "${args[@]}")
    jobs_of_case+=("$me")
    # every upstream task ends, then the dependents are looked at
    sleep 8
    if [ "$c" = - ]; then
      got=$(observe "$me" "$d")
    else
      got=""
      sleep 5
      mapfile -t ixs < <(python3 -c "
import sys
out=[]
for p in sys.argv[1].split(','):
    if '-' in p:
        a,b=p.split('-'); out+=range(int(a),int(b)+1)
    else: out.append(int(p))
print('\n'.join(map(str,out)))" "$c")
      for i in "${ixs[@]}"; do
        got="$got${got:+,}$(outcome "${me}_$i")"
      done
    fi
    check "$name" "$got" "$d"
    cleanup_case
    ;;
  idx)
    out="$work/$name"
    : >"$out"
    id=$(sb -J ix --array="$a" --wrap "echo \$SLURM_ARRAY_TASK_ID >>$out")
    jobs_of_case+=("$id")
    end=$((SECONDS + 60))
    want_n=$(wc -w <<<"$b")
    while [ "$(wc -l <"$out")" -lt "$want_n" ] && [ $SECONDS -lt $end ]; do
      sleep 0.5
    done
    check "$name" "$(sort -n "$out" | tr '\n' ' ' | sed 's/ $//')" "$b"
    cleanup_case
    ;;
  thr)
    id=$(sb -J th --array="$a" --wrap 'sleep 3')
    jobs_of_case+=("$id")
    most=0
    end=$((SECONDS + 90))
    while [ $SECONDS -lt $end ]; do
      n=$(squeue -h -r -j "$id" -t RUNNING,CONFIGURING 2>/dev/null | wc -l)
      [ "$n" -gt "$most" ] && most=$n
      [ -z "$(squeue -h -r -j "$id" 2>/dev/null)" ] && break
      sleep 0.3
    done
    check "$name" "$most" "$b"
    cleanup_case
    ;;
  esac
done <"$cases"
[ "$failed" -eq 0 ] || { echo "$failed case(s) disagree"; exit 1; }
echo "every case agreed"
