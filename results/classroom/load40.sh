#!/bin/sh
# usage: sh results/classroom/load40.sh MARKET LOADCLASS
#
# Runs loadclass (40 pages of the demo page opened at once, see
# loadclass/main.go) twice against the market binary MARKET: first on the
# machine as it is (load-40-quiet.txt), then beside two busy loops per core
# (`yes > /dev/null`, started here and killed when the run ends:
# load-40-busy.txt). Each file starts with the commit, the machine, the
# command and the load, and ends with the load after. Build the binaries
# first, so that the runs time the pages and not the compiler:
#   go build -o /tmp/market ./cmd/market
#   go build -o /tmp/loadclass ./results/classroom/loadclass
set -u
cd "$(dirname "$0")/../.."
market=$1 loadclass=$2
dir=results/classroom
one() { # OUT BUSY
	out=$1 busy=$2
	pids=""
	if [ "$busy" -gt 0 ]; then
		for _ in $(seq "$busy"); do
			yes >/dev/null &
			pids="$pids $!"
		done
	fi
	{
		echo "# results/classroom/load40.sh: 40 pages opened at once, $busy busy loops beside"
		echo "# commit $(git rev-parse --short HEAD), $(nproc) cores, $(chromium --version 2>/dev/null)"
		echo "# command: $loadclass -market $market -n 40 -wait 5m"
		echo "# uptime before: $(uptime)"
		status=0
		"$loadclass" -market "$market" -n 40 -wait 5m 2>/dev/null || status=$?
		echo "# exit status $status"
		echo "# uptime after: $(uptime)"
	} >"$dir/$out"
	[ -n "$pids" ] && kill $pids
	cat "$dir/$out"
}
one load-40-quiet.txt 0
one load-40-busy.txt 4
