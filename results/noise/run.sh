#!/bin/sh
# Reproduces results/noise: the same run twice, once as quiet as the
# machine gets and once beside two `yes >/dev/null` per CPU, to check that
# the two readings do not contradict each other (each names the same
# winner or says it cannot tell). Run from the repository root; takes
# about 3 minutes. Each run starts its own private redis-server.
set -eu
# The output directory: $OUT, else results/noise itself (the committed run).
out=${OUT:-results/noise}
mkdir -p "$out/quiet" "$out/loaded"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -ldflags "-X github.com/lockmarket/lockmarket/internal/report/output.Commit=$(git rev-parse --short=12 HEAD)" \
	-o "$bin/simulate" ./cmd/simulate

run() {
	uptime >"$out/$1/uptime.txt"
	"$bin/simulate" -scenarios 1x1,5x5 -duration 5s -rounds 5 -out "$out/$1" \
		>"$out/$1/table.txt" 2>"$out/$1/stderr.log"
	uptime >>"$out/$1/uptime.txt"
}

run quiet
# Two busy loops per CPU beside the second run, stopped when it ends.
pids=
for i in $(seq $((2 * $(nproc)))); do
	yes >/dev/null &
	pids="$pids $!"
done
trap 'kill $pids 2>/dev/null; rm -rf "$bin"' EXIT
sleep 5 # let the load average feel them
run loaded
