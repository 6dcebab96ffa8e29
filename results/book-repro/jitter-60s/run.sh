#!/bin/sh
# -profile book as it is now (-client book -rtt 1ms -jitter 250us) at the
# book's 60 s per cell, seed 1; then the shape targets. Run from the
# repository root; takes about 13 minutes. Starts a private redis-server.
set -eu
command -v jq >/dev/null || { echo "$0: needs jq (Debian: apt-get install jq)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=$tmp/simulate
go build -ldflags "-X github.com/lockmarket/lockmarket/internal/report/output.Commit=$(git rev-parse --short=12 HEAD)" \
	-o $bin ./cmd/simulate
# The output directory: $OUT, else results/book-repro/jitter-60s itself (the committed run).
out=${OUT:-results/book-repro/jitter-60s}
mkdir -p "$out"
echo "before: $(uptime)" > $out/load.txt
$bin run -profile book -duration 60s -seed 1 -out $out > $out/table.txt 2> $out/stderr.log
echo "after: $(uptime)" >> $out/load.txt
jq -f results/book-profile/targets.jq $out/results.json > $out/targets.json
