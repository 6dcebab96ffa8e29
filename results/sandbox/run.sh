#!/bin/sh
# Builds cmd/market and results/sandbox/class, and runs the class of 40
# attacking the sandbox (then 60 sessions at rest), recording the commit,
# the machine and its load before and after into class-40.txt.
set -eu
cd "$(dirname "$0")/../.."
out=${OUT:-results/sandbox/class-40.txt}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/market" ./cmd/market
go build -o "$tmp/class" ./results/sandbox/class
{
	echo "# results/sandbox/run.sh: 40 sessions attacking the sandbox at once, then 60 at rest"
	echo "# commit $(git rev-parse --short HEAD), $(nproc) cores, $(redis-server --version | cut -d' ' -f1-3)"
	echo "# command: $tmp/class -market $tmp/market -n 40"
	echo "# uptime before: $(uptime)"
	timeout 600 "$tmp/class" -market "$tmp/market" -n 40
	echo "# uptime after: $(uptime)"
} 2>&1 | tee "$out"
