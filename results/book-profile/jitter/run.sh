#!/bin/sh
# Calibration of -profile book's jitter: the book's command sequences
# (-client book) with 1 ms added to every round trip plus an exponential
# random part of mean J per reply (-jitter J), every scenario and strategy,
# 10 s per cell, seed 1; targets.jq computes the shape targets of each run.
# Run from the repository root; takes about 10 minutes. Each run starts its
# own private redis-server.
set -eu
command -v jq >/dev/null || { echo "$0: needs jq (Debian: apt-get install jq)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=$tmp/simulate
go build -ldflags "-X github.com/lockmarket/lockmarket/internal/report/output.Commit=$(git rev-parse --short=12 HEAD)" \
	-o $bin ./cmd/simulate
# The output directory: $OUT, else results/book-profile/jitter itself (the committed run).
out=${OUT:-results/book-profile/jitter}
mkdir -p "$out"
: > $out/load.txt
: > $out/targets.txt
for j in 0 250us 500us 1ms; do
	echo "before -jitter $j: $(uptime)" >> $out/load.txt
	$bin run -client book -rtt 1ms -jitter $j -seed 1 -duration 10s -format json \
		> $out/calibration-$j.json 2> $out/calibration-$j.log
	echo "after -jitter $j: $(uptime)" >> $out/load.txt
	jq -c -f results/book-profile/targets.jq $out/calibration-$j.json >> $out/targets.txt
done
