#!/bin/sh
# usage: sh results/explore/suite.sh [OLD] > results/explore/suite.txt
#
# Builds simulate from this tree and from commit OLD (default bacce0b,
# checked out with git worktree into a temporary directory) and runs a
# fixed suite of searches with each, the old build then the new one,
# command by command, so that both meet about the same load: the three
# exhaustive three-client searches, the two searches that need a budget
# (BUDGET, default 120s: the fenced fine market with its three clients,
# the fenced watchdog with two), the fenced fine market with two clients
# (5 minutes at most), and every recipe's fix with two clients. All run
# on 2 workers. Each line: the command; for each build
# the schedules, whether exhaustive, the seconds and the properties
# broken; the ratios old/new of the seconds and of the schedules. `uptime`
# before each command gives the load. It ends with the totals of the
# three-client searches.
set -u
old=${1:-bacce0b}
budget=${BUDGET:-120s}
dir=$(mktemp -d)
trap 'git worktree remove --force "$dir/old" 2>/dev/null; rm -rf "$dir"' EXIT
git worktree add --detach "$dir/old" "$old" > /dev/null 2>&1 || { echo "cannot check out $old" >&2; exit 1; }
go build -o "$dir/new" ./cmd/simulate || exit 1
(cd "$dir/old" && go build -o "$dir/oldsim" ./cmd/simulate) || exit 1
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); new: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo '+changes'); old: $(git -C "$dir/old" rev-parse --short HEAD)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(redis-server --version | cut -d' ' -f1-3)"
# one BUILD ARGS...: prints "schedules exhaustive seconds broken" of one search.
one() {
	b=$1
	shift
	"$dir/$b" explore -workers 2 -format json "$@" > "$dir/out.json" 2> /dev/null
	jq -r '"\(.schedules) \(.exhaustive) \(.elapsed_s * 10 | round / 10) \([.violations[].property] | join(",") | if . == "" then "none" else . end)"' "$dir/out.json" 2> /dev/null || echo "? ? ? error"
}
tot_old=0
tot_new=0
run() {
	kind=$1
	shift
	echo "load: $(uptime | sed 's/.*load/load/')"
	set -- "$@"
	o=$(one oldsim "$@")
	n=$(one new "$@")
	echo "simulate explore $*"
	echo "$o" "$n" | awk '{
		printf "  old: %s schedules, exhaustive %s, %s s, broken: %s\n", $1, $2, $3, $4
		printf "  new: %s schedules, exhaustive %s, %s s, broken: %s\n", $5, $6, $7, $8
		if ($7 > 0 && $5 > 0) printf "  old/new: %.1fx the seconds, %.1fx the schedules; verdict %s\n", $3 / $7, $1 / $5, ($4 == $8 ? "same" : "DIFFERENT")
	}'
	if [ "$kind" = three ]; then
		tot_old=$(echo "$o" | awk -v t="$tot_old" '{print t + $3}')
		tot_new=$(echo "$n" | awk -v t="$tot_new" '{print t + $3}')
	fi
}
run three -recipe 4 -fixed -clients 3
run three -recipe 6 -fixed -clients 3
run three -recipe-dir examples/recipes/correct -clients 3
run two -strategy fine -fencing -budget "$budget"
run two -strategy fine -fencing -clients 2 -budget 300s
run two -watchdog -fencing -faults pause-short,crash -budget "$budget"
for n in 1 2 3 4 5 6 9 11; do
	run two -recipe $n -fixed -clients 2
done
echo "load: $(uptime | sed 's/.*load/load/')"
echo "three-client searches, in all: old $tot_old s, new $tot_new s: $(echo "$tot_old $tot_new" | awk '{ if ($2 > 0) printf "%.1fx", $1 / $2 }') less wall time"
