#!/bin/sh
# usage: sh results/explore/recipes.sh > results/explore/recipes.txt
#
# Runs simulate explore on every recipe of examples/recipes/<class>/: the
# broken one (every violation, each counterexample replayed on a fresh
# redis-server) and its fix with two clients and with three, every fault
# the default model allows (the three-client searches for a broken
# recipe's mutual_exclusion stop at the first; the reentrant fix with three
# clients is searched under crashes only: every fault takes many minutes).
# Each run is one line: the command, its exit
# status, the schedules, whether the search was exhaustive, the seconds
# it took, the properties broken and whether the counterexample
# reproduced; `uptime` before each run gives the load it ran at.
set -u
sim=$(mktemp)
out=$(mktemp)
trap 'rm -f "$sim" "$out"' EXIT
go build -o "$sim" ./cmd/simulate || exit 1
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD), $(nproc) cores"
$sim version 2>/dev/null | head -1
run() {
	echo "load: $(uptime)"
	"$sim" explore -workers 2 -format json "$@" > "$out" 2> /dev/null
	rc=$?
	jq -r --arg cmd "simulate explore $*" --arg rc "$rc" \
		'"\($cmd)\n  exit \($rc): \(.schedules) schedules, exhaustive \(.exhaustive), \(.elapsed_s * 10 | round / 10) s, redis \(.redis.version // "?"); broken: \([.violations[].property] | join(", ") | if . == "" then "none" else . end)\(if .counterexample then "; counterexample (\(.counterexample.property), \(.counterexample.steps | length) steps) reproduced: \(.counterexample.reproduced)" else "" end)"' "$out"
}
r=examples/recipes
run -recipe-dir $r/check-then-delete/broken
run -recipe-dir $r/check-then-delete/broken -clients 3 -faults pause-long -check mutual_exclusion -first
run -recipe-dir $r/setnx-then-expire/broken
run -recipe-dir $r/reentrant-release/broken
run -recipe-dir $r/reentrant-release/broken -clients 3 -faults pause-long -check mutual_exclusion -first
run -recipe-dir $r/rw-leases/broken
run -recipe-dir $r/rw-leases/broken -ttls 10s,3s
run -recipe-dir $r/unlock-reports/broken
run -recipe-dir $r/rw-counter/broken
for c in check-then-delete setnx-then-expire reentrant-release unlock-reports rw-counter; do
	run -recipe-dir $r/$c/fixed -clients 2
done
run -recipe-dir $r/rw-leases/fixed -ttls 10s,3s -clients 2
for c in check-then-delete setnx-then-expire unlock-reports rw-counter; do
	run -recipe-dir $r/$c/fixed -clients 3
done
run -recipe-dir $r/rw-leases/fixed -ttls 10s,3s -clients 3
run -recipe-dir $r/reentrant-release/fixed -clients 3 -faults crash
echo "load: $(uptime)"
rm -f "$sim" "$out"
