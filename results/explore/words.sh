#!/bin/sh
# usage: sh results/explore/words.sh > results/explore/words.txt
#
# Runs simulate explore on the recipes of examples/recipes that show the
# manifest's words (refused, arithmetic on placeholders, reply, give_up,
# unheld): each broken recipe (its counterexample replayed on a fresh
# redis-server) and each fix, with two clients under every fault of the
# default model, and the fair queue of give-up with three. Each run is one
# line: the command, its exit status, the schedules, whether the search was
# exhaustive, the seconds it took, the properties broken and whether the
# counterexample reproduced; `uptime` before each run gives the load.
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
for c in refusal-by-error lease-arithmetic unheld-release; do
	run -recipe-dir $r/$c/broken
	run -recipe-dir $r/$c/fixed
done
run -recipe-dir $r/reply-from-step
run -recipe-dir $r/give-up/broken -clients 3 -first
run -recipe-dir $r/give-up/fixed
run -recipe-dir $r/give-up/fixed -clients 3 -faults pause-short,pause-long
run -recipe-dir $r/give-up/fixed -clients 3 -faults crash -first
echo "load: $(uptime)"
