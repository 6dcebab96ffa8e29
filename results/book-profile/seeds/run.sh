#!/bin/sh
# The check of -profile book (-client book -rtt 1ms -jitter 250us) with
# seeds 1, 2 and 3: the book's three scenarios under all four strategies,
# 10 s per cell; targets.jq computes the shape targets of each run. Run
# from the repository root; takes about 7 minutes. Each run starts its own
# private redis-server.
set -eu
. results/book-profile/series.sh
series_start results/book-profile/seeds
for seed in 1 2 3; do
	series_run seed-$seed "seed $seed" -profile book -duration 10s -seed $seed
done
