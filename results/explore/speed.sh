#!/bin/sh
# usage: OLD_REV=af3c21a NEW_REV=$(git rev-parse --short HEAD) \
#        sh results/explore/speed.sh OLD NEW [ROUNDS] > results/explore/speed.txt
#
# The two searches of the step's speed bar, side by side: -recipe 6
# -fixed -clients 3 and -strategy fine -fencing -clients 2, each run by
# the simulate binary OLD and then by NEW, search after search and round
# after round (ROUNDS, default 1), so that both builds meet about the
# same load. Every search runs on its build's default workers (the cores,
# 2, at af3c21a; twice the cores, 4, since bf13c87) and a private
# redis-server of its own (-redis auto, REDIS_URL unset). Each line: the
# load when it started (uptime), the build, the schedules (+cut), whether
# exhaustive, the seconds and the properties broken. It ends with each
# build's total seconds and their ratio.
# Build the binaries first, e.g.:
#   git worktree add --detach /tmp/old af3c21a
#   (cd /tmp/old && go build -o /tmp/sim-old ./cmd/simulate)
#   go build -o /tmp/sim-new ./cmd/simulate
set -u
old=$1
new=$2
rounds=${3:-1}
unset REDIS_URL
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores," \
	"$(redis-server --version | cut -d' ' -f1-3)"
echo "# old: ${OLD_REV:-?}, $("$old" version 2>&1 | head -1)"
echo "# new: ${NEW_REV:-?}, $("$new" version 2>&1 | head -1)"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
tot_old=0
tot_new=0
# one NAME BIN ARGS...: runs one search and prints its line; adds its
# seconds to NAME's total.
one() {
	name=$1
	bin=$2
	shift 2
	l=$(uptime | sed 's/.*load average: //')
	"$bin" explore -format json "$@" >"$out" 2>/dev/null
	rc=$?
	line=$(jq -r '"\(.schedules) (+\(.pruned)) exhaustive \(.exhaustive) \(.elapsed_s * 10 | round / 10) s broken \([.violations[].property] | join(",") | if . == "" then "none" else . end)"' "$out" 2>/dev/null || echo "? error")
	echo "  $name: exit $rc, load $l: $line"
	s=$(jq -r '.elapsed_s' "$out" 2>/dev/null || echo 0)
	if [ "$name" = old ]; then
		tot_old=$(echo "$tot_old $s" | awk '{print $1 + $2}')
	else
		tot_new=$(echo "$tot_new $s" | awk '{print $1 + $2}')
	fi
}
r=1
while [ "$r" -le "$rounds" ]; do
	for args in "-recipe 6 -fixed -clients 3" "-strategy fine -fencing -clients 2"; do
		echo "simulate explore $args (round $r)"
		# shellcheck disable=SC2086
		one old "$old" $args
		# shellcheck disable=SC2086
		one new "$new" $args
	done
	r=$((r + 1))
done
echo "in all: old $tot_old s, new $tot_new s: $(echo "$tot_old $tot_new" | awk '{ if ($2 > 0) printf "%.2fx", $1 / $2 }') less wall time (load $(uptime | sed 's/.*load average: //'))"
