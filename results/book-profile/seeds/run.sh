#!/bin/sh
# The check of -profile book (-client book -rtt 1ms -jitter 250us) with
# seeds 1, 2 and 3: the book's three scenarios under all four strategies,
# 10 s per cell; targets.jq computes the shape targets of each run. Run
# from the repository root; takes about 7 minutes. Each run starts its own
# private redis-server.
set -eu
command -v jq >/dev/null || { echo "$0: needs jq (Debian: apt-get install jq)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=$tmp/simulate
go build -ldflags "-X github.com/lockmarket/lockmarket/internal/report/output.Commit=$(git rev-parse --short=12 HEAD)" \
	-o $bin ./cmd/simulate
# The output directory: $OUT, else results/book-profile/seeds itself (the committed run).
out=${OUT:-results/book-profile/seeds}
mkdir -p "$out"
: > $out/load.txt
: > $out/targets.txt
for seed in 1 2 3; do
	echo "before seed $seed: $(uptime)" >> $out/load.txt
	$bin run -profile book -duration 10s -seed $seed -format json \
		> $out/seed-$seed.json 2> $out/seed-$seed.log
	echo "after seed $seed: $(uptime)" >> $out/load.txt
	jq -c -f results/book-profile/targets.jq $out/seed-$seed.json >> $out/targets.txt
done
