#!/bin/sh
# Calibration of -profile book: the book's command sequences (-client book)
# at five added round trips, every scenario and strategy, 10 s per cell;
# targets.jq computes the shape targets of each run. Run from the
# repository root; takes about 12 minutes. Each run starts its own private
# redis-server.
set -eu
command -v jq >/dev/null || { echo "$0: needs jq (Debian: apt-get install jq)" >&2; exit 2; }
bin=$(mktemp -d)/simulate
go build -o $bin ./cmd/simulate
# The output directory: $OUT, else results/book-profile itself (the committed run).
out=${OUT:-results/book-profile}
mkdir -p "$out"
: > $out/load.txt
: > $out/targets.txt
for rtt in 0 150us 300us 500us 1ms; do
	echo "before -rtt $rtt: $(uptime)" >> $out/load.txt
	$bin run -client book -rtt $rtt -duration 10s -format json \
		> $out/calibration-$rtt.json 2> $out/calibration-$rtt.log
	echo "after -rtt $rtt: $(uptime)" >> $out/load.txt
	jq -c -f results/book-profile/targets.jq $out/calibration-$rtt.json >> $out/targets.txt
done
