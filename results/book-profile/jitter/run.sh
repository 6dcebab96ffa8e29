#!/bin/sh
# Calibration of -profile book's jitter: the book's command sequences
# (-client book) with 1 ms added to every round trip plus an exponential
# random part of mean J per reply (-jitter J), every scenario and strategy,
# 10 s per cell, seed 1; targets.jq computes the shape targets of each run.
# Run from the repository root; takes about 10 minutes. Each run starts its
# own private redis-server.
set -eu
. results/book-profile/series.sh
series_start results/book-profile/jitter
for j in 0 250us 500us 1ms; do
	series_run calibration-$j "-jitter $j" -client book -rtt 1ms -jitter $j -seed 1 -duration 10s
done
