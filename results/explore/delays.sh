#!/bin/sh
# The watchdog (locking.Mutex renewed by locking.KeepAlive, no fencing)
# under short pauses and crashes, on networks whose delays are bounded by
# each -max-delay in turn, then on an asynchronous one (no bound, -first);
# then the watchdog with its write fenced (-fencing) on the asynchronous
# network: under long pauses with two advances of the clock, beside the
# unfenced one, and under short pauses and crashes within a budget of 10
# minutes (its search is larger than the budget: it stops cut short).
# Each line: the command, its exit status, the wall time, the load
# (uptime) when it started, and what it reports.
# Usage: results/explore/delays.sh SIMULATE >results/explore/delays.txt
set -u
sim=$1
echo "# $(uname -sr), $(nproc) cores, $($sim version)"
run() {
	load=$(uptime | sed 's/.*load average: //')
	start=$(date +%s)
	out=$("$sim" explore "$@" -format json 2>/dev/null)
	rc=$?
	end=$(date +%s)
	printf 'simulate explore %s\n  exit %s, %s s, load %s: %s\n' "$*" "$rc" "$((end - start))" "$load" \
		"$(printf '%s' "$out" | jq -c '{max_delay_ms: .model.max_delay_ms, schedules, exhaustive,
			violations: [.violations[].property], reproduced: .counterexample.reproduced, stopped,
			coverage}' 2>/dev/null ||
			echo "no JSON")"
}
for d in 1s 3s 5s 6s 7s; do
	run -watchdog -faults pause-short,crash -max-delay $d
done
run -watchdog -faults pause-short,crash -first
run -watchdog -faults pause-long -bound ticks=2 -first
run -watchdog -fencing -faults pause-long -bound ticks=2
run -watchdog -fencing -faults pause-short,crash -budget 10m
