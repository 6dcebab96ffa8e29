#!/bin/sh
# Reproduces results/window: the round-trip sweep at 5 listers/5 buyers,
# both client forms, all strategies, 10 s per cell. Run from the
# repository root; takes about 10 minutes. It starts its own private
# redis-server.
set -eu
bin=$(mktemp -d)/simulate
go build -o $bin ./cmd/simulate
# The output directory: $OUT, else results/window itself (the committed run).
out=${OUT:-results/window}
mkdir -p "$out"
echo "before: $(uptime)" > $out/load.txt
$bin window -rtts 0,250us,500us,1ms,2ms,4ms -duration 10s -out $out > $out/table.txt 2> $out/stderr.log
echo "after: $(uptime)" >> $out/load.txt
