#!/bin/sh
# Reproduces results/scale: the simulator with more workers, with markets
# prefilled to 10^4..10^6 listings, and lua 5x5 against redis-benchmark's
# ceiling on the same server. Run from the repository root; takes about
# 10 minutes. Each simulate run starts its own private redis-server.
set -eu
. results/free-port.sh
bin=$(mktemp -d)/simulate
go build -o $bin ./cmd/simulate
# The output directory: $OUT, else results/scale itself (the committed run).
out=${OUT:-results/scale}
mkdir -p "$out/workers"
uptime > $out/load.txt
$bin run -scenarios 1x1,5x5,20x20,50x50 -duration 10s -out $out/workers \
	>$out/workers/table.txt 2>$out/workers/stderr.log
for n in 10000 100000 1000000; do
	mkdir -p $out/prefill-$n
	$bin run -scenarios 5x5 -duration 10s -prefill $n -out $out/prefill-$n \
		>$out/prefill-$n/table.txt 2>$out/prefill-$n/stderr.log
done
uptime >> $out/load.txt

# lua 5x5 on one server, then redis-benchmark's SET and EVAL ceilings on it.
port=$(free_port 1)
redis-server --port $port --bind 127.0.0.1 --save "" --appendonly no >/dev/null 2>&1 &
pid=$!
until redis-cli -p $port ping >/dev/null 2>&1; do sleep 0.1; done
mkdir -p $out/ceiling
$bin run -redis 127.0.0.1:$port -scenarios 5x5 -strategies lua,fine -duration 10s -format json \
	>$out/ceiling/sim.json 2>$out/ceiling/stderr.log
for c in 5 10; do
	# -q still prints progress lines ending in \r: keep the final lines.
	redis-benchmark -h 127.0.0.1 -p $port -c $c -n 200000 -q -t set | tr '\r' '\n' | grep 'requests per second' >>$out/ceiling/redis-benchmark-c$c.txt
	redis-benchmark -h 127.0.0.1 -p $port -c $c -n 200000 -q eval "return 1" 0 | tr '\r' '\n' | grep 'requests per second' >>$out/ceiling/redis-benchmark-c$c.txt
done
kill $pid
uptime >> $out/load.txt
