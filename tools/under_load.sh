#!/usr/bin/env bash
# Run a command N times in a row while CPU-bound busy loops compete for the cores, stopping at the
# first failure: the check that the test suite holds on a loaded machine (issue "Hardening II", 11).
#
# Usage: tools/under_load.sh [-n RUNS] [-l LOOPS] [--] COMMAND...
#        tools/under_load.sh -n 3 -l 2 -- make test
# Each run's output goes to test-output/under-load-K.log; a summary line per run is printed.
set -uo pipefail

runs=3
loops=2
while [ $# -gt 0 ]; do
  case "$1" in
    -n) runs="$2"; shift 2 ;;
    -l) loops="$2"; shift 2 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: $0 [-n RUNS] [-l LOOPS] [--] COMMAND..." >&2; exit 2; }

busy=()
stop_busy() { [ ${#busy[@]} -eq 0 ] || kill "${busy[@]}" 2>/dev/null; wait "${busy[@]}" 2>/dev/null; busy=(); }
trap stop_busy EXIT INT TERM
for _ in $(seq "$loops"); do
  # A pure CPU spinner: bash arithmetic in a tight loop, no I/O, killed on exit.
  ( while :; do :; done ) &
  busy+=("$!")
done

mkdir -p test-output
for k in $(seq "$runs"); do
  log="test-output/under-load-$k.log"
  started=$(date +%s)
  "$@" >"$log" 2>&1
  rc=$?
  took=$(( $(date +%s) - started ))
  summary=$(grep -E '^[0-9]+ (passed|failed)|(passed|failed).* in [0-9.]+s' "$log" | tail -1)
  echo "run $k/$runs: exit $rc in ${took}s, load $(cut -d' ' -f1-3 /proc/loadavg): ${summary:-no summary}"
  if [ "$rc" -ne 0 ]; then
    echo "failed: see $log" >&2
    exit "$rc"
  fi
done
