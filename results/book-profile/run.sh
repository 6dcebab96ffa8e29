#!/bin/sh
# Calibration of -profile book: the book's command sequences (-client book)
# at five added round trips, every scenario and strategy, 10 s per cell;
# targets.jq computes the shape targets of each run. Run from the
# repository root; takes about 12 minutes. Each run starts its own private
# redis-server.
set -eu
. results/book-profile/series.sh
series_start results/book-profile
for rtt in 0 150us 300us 500us 1ms; do
	series_run calibration-$rtt "-rtt $rtt" -client book -rtt $rtt -duration 10s
done
