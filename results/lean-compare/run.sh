#!/bin/sh
# Reproduces results/lean-compare: the lean form of commit 58c29f2 and of
# commit fcf1f0c, back to back, twice each, 10 s per cell. Run from the
# repository root (a git clone); takes about 3 minutes.
set -eu
# The output directory: $OUT, else results/lean-compare itself (the committed run).
out=${OUT:-results/lean-compare}
mkdir -p "$out"
for c in 58c29f2 fcf1f0c; do
	d=$(mktemp -d)
	git archive $c | tar -x -C $d
	(cd $d && go build -o $d/simulate ./cmd/simulate)
	eval "bin_$c=$d/simulate"
done
echo "start $(uptime)" > $out/load.txt
for i in 1 2; do
	$bin_58c29f2 -scenarios 5x1,5x5 -strategies watch,coarse -duration 10s -format json > $out/58c29f2-$i.json
	$bin_fcf1f0c -scenarios 5x1,5x5 -strategies watch,coarse -duration 10s -format json > $out/fcf1f0c-$i.json
done
echo "end $(uptime)" >> $out/load.txt
