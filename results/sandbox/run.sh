#!/bin/sh
# Builds cmd/market and results/sandbox/class, and runs the class of 40
# attacking the sandbox (then 60 sessions at rest), recording the commit,
# the machine and its load before and after into class-40.txt. With
# MIXED=1 it runs the mixed class instead (34 honest students beside 6
# attackers from two addresses, for 150 s) into mixed-40.txt; with REST=N,
# N sessions at rest after no attack, into rest-N.txt.
set -eu
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/market" ./cmd/market
go build -o "$tmp/class" ./results/sandbox/class
if [ "${MIXED:-}" = 1 ]; then
	out=${OUT:-results/sandbox/mixed-40.txt}
	args="-honest 34 -duration 150s"
	what="34 honest students beside 6 attackers from two addresses"
elif [ -n "${REST:-}" ]; then
	out=${OUT:-results/sandbox/rest-$REST.txt}
	args="-n 0 -rest $REST"
	what="$REST sessions of a plain pasted lock at rest"
else
	out=${OUT:-results/sandbox/class-40.txt}
	args="-n 40"
	what="40 sessions attacking the sandbox at once, then 60 at rest"
fi
{
	echo "# results/sandbox/run.sh: $what"
	echo "# commit $(git rev-parse --short HEAD), $(nproc) cores, $(redis-server --version | cut -d' ' -f1-3)"
	echo "# command: $tmp/class -market $tmp/market $args"
	echo "# uptime before: $(uptime)"
	# shellcheck disable=SC2086
	timeout 900 "$tmp/class" -market "$tmp/market" $args
	echo "# uptime after: $(uptime)"
} 2>&1 | tee "$out"
