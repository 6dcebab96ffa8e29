#!/bin/sh
# Reproduces results/book-repro: the book's three scenarios under all four
# strategies with -profile book, 60 s per cell as in the book; then the
# check of the profile's targets (10 s per cell) and today's lean forms at
# 10 s per cell for comparison. Run from the repository root; takes about
# 20 minutes. Each run starts its own private redis-server.
set -eu
command -v jq >/dev/null || { echo "$0: needs jq (Debian: apt-get install jq)" >&2; exit 2; }
bin=$(mktemp -d)/simulate
go build -o $bin ./cmd/simulate
# The output directory: $OUT, else results/book-repro itself (the committed run).
out=${OUT:-results/book-repro}
mkdir -p "$out"
echo "before the 60 s reproduction: $(uptime)" > $out/load.txt
$bin run -profile book -duration 60s -out $out > $out/table.txt 2> $out/stderr.log
echo "after the 60 s reproduction: $(uptime)" >> $out/load.txt
jq -f results/book-profile/targets.jq $out/results.json > $out/targets.json
mkdir -p $out/check-10s $out/lean-10s
$bin run -profile book -duration 10s -format json > $out/check-10s/results.json 2> $out/check-10s/stderr.log
echo "after the 10 s check: $(uptime)" >> $out/load.txt
jq -f results/book-profile/targets.jq $out/check-10s/results.json > $out/check-10s/targets.json
$bin run -duration 10s -format json > $out/lean-10s/results.json 2> $out/lean-10s/stderr.log
echo "after the lean run: $(uptime)" >> $out/load.txt
