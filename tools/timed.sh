#!/usr/bin/env bash
# Time one step of `make test`: `tools/timed.sh DIR NAME CMD...` runs CMD and writes its wall time (s)
# to DIR/NAME; `tools/timed.sh DIR --report` prints every recorded step, longest first. The set-up steps
# run side by side, so their times overlap: the total is the wall time of the whole run, not the sum.
set -uo pipefail
dir=$1
shift
if [ "${1:-}" = "--report" ]; then
	echo "make test times (s; set-up steps overlap):"
	for f in "$dir"/*; do [ -f "$f" ] && printf '  %7.1f  %s\n' "$(cat "$f")" "$(basename "$f")"; done | sort -rn
	exit 0
fi
name=$1
shift
mkdir -p "$dir"
start=$(date +%s.%N)
"$@"
rc=$?
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f\n", e - s }' > "$dir/$name"
exit $rc
