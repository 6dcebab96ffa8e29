#!/bin/sh
# Builds cmd/market and results/classroom/findclass, and runs the class of
# 40 that asks "find a bug" together (see README.md), recording the commit,
# the machine and its load before and after into find-40.txt.
set -eu
cd "$(dirname "$0")/../.."
out=${OUT:-results/classroom/find-40.txt}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/market" ./cmd/market
go build -o "$tmp/findclass" ./results/classroom/findclass
{
	echo "# results/classroom/run.sh: 40 sessions from one address ask \"find a bug\" together"
	echo "# commit $(git rev-parse --short HEAD), $(nproc) cores, $(redis-server --version | cut -d' ' -f1-3)"
	echo "# command: $tmp/findclass -market $tmp/market -n 40"
	echo "# uptime before: $(uptime)"
	timeout 900 "$tmp/findclass" -market "$tmp/market" -n 40
	echo "# uptime after: $(uptime)"
} 2>&1 | tee "$out"
