#!/bin/sh
# Verdicts of simulate explore on a loaded machine: two `yes >/dev/null` per
# core beside it, started and killed here. Each line: the command, its exit
# status, what it reports, and the load (uptime) when it started.
# Usage: results/explore/verdict-load.sh SIMULATE OUTDIR STREAM...
# (STREAM: flawed, fixed, watchdog, watchdog-first, watchdog-bounded or budget; the streams
# run at once, each into OUTDIR/STREAM.txt)
set -u
sim=$1
dir=$2
shift 2
cores=$(nproc)
pids=""
for i in $(seq $((2 * cores))); do
	yes >/dev/null &
	pids="$pids $!"
done
trap 'kill $pids 2>/dev/null' EXIT INT TERM
mkdir -p "$dir"
echo "# $(uname -sr), $cores cores, $($sim version); $((2 * cores)) yes >/dev/null beside it; streams: $*" >"$dir/README.txt"
run() {
	load=$(uptime | sed 's/.*load average: //')
	start=$(date +%s)
	out=$("$sim" explore "$@" -format json 2>/dev/null)
	rc=$?
	end=$(date +%s)
	printf 'simulate explore %s\n  exit %s, %s s, load %s: %s\n' "$*" "$rc" "$((end - start))" "$load" \
		"$(printf '%s' "$out" | jq -c '{schedules, exhaustive, stopped, reruns, diverged,
			violations: [.violations[].property], reproduced: .counterexample.reproduced,
			unsteady: [.unsteady[].property]}' 2>/dev/null || echo "no JSON")"
}
stream() {
	case $1 in
	flawed)
		for n in 1 2 3 4 5 6 9 11; do run -recipe $n -first; done
		run -strategy fine -budget 20s
		;;
	fixed)
		for i in 1 2 3 4 5; do run -recipe 6 -fixed; done
		;;
	watchdog)
		for i in 1 2 3 4 5; do run -watchdog -faults pause-short,crash; done
		;;
	watchdog-bounded)
		for i in 1 2 3 4 5; do run -watchdog -faults pause-short,crash -max-delay 1s; done
		;;
	watchdog-first)
		for i in 1 2 3 4 5; do run -watchdog -faults pause-short,crash -first; done
		;;
	budget)
		for i in 1 2 3 4 5; do run -strategy fine -budget 20s; done
		;;
	esac
}
jobs=""
for st in "$@"; do
	stream "$st" >"$dir/$st.txt" &
	jobs="$jobs $!"
done
wait $jobs
