#!/bin/sh
# The explorer's commands per second against the round-trip bound, in
# one run on one server: a redis-server this script starts on a loopback
# port, the explorer's search (-workers 1: one command in flight at a
# time) counted by the server's total_commands_processed, then
# redis-benchmark with one client and no pipelining (-c 1 -P 1: one
# round trip per command) on the same server, then the search again.
# Each line gives the load (uptime) when it started.
# Usage: results/explore/rate.sh SIMULATE [SEARCH FLAGS...] >results/explore/rate.txt
set -u
sim=$1
shift
[ $# -gt 0 ] || set -- -recipe 6 -fixed -clients 3
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
dir=$(mktemp -d)
redis-server --bind 127.0.0.1 --port "$port" --save "" --appendonly no --dir "$dir" \
	>"$dir/server.log" 2>&1 &
server=$!
trap 'kill "$server"; rm -rf "$dir"' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
echo "# $(uname -sr), $(nproc) cores, $($sim version), $(redis-server --version | cut -d' ' -f1-3)"
load() { uptime | sed 's/.*load average: //'; }
processed() { redis-cli -p "$port" info stats | tr -d '\r' | sed -n 's/^total_commands_processed://p'; }
search() {
	l=$(load)
	before=$(processed)
	"$sim" explore "$@" -workers 1 -redis "redis://127.0.0.1:$port" -format json >"$dir/search.json" \
		2>/dev/null
	rc=$?
	after=$(processed)
	jq -r --arg l "$l" --arg rc "$rc" --arg n "$((after - before - 1))" --arg args "$*" \
		'"simulate explore \($args) -workers 1\n  exit \($rc), load \($l): \(.schedules) schedules (+\(.pruned) cut), \($n) commands in \(.elapsed_s * 10 | round / 10) s: \(($n | tonumber) / .elapsed_s | round) commands/s"' \
		"$dir/search.json"
}
search "$@"
echo "redis-benchmark -p PORT -c 1 -P 1 -n 20000 -t ping,set,get,incr (load $(load))"
redis-benchmark -p "$port" -c 1 -P 1 -n 20000 -t ping,set,get,incr -q 2>/dev/null | tr '\r' '\n' |
	grep 'requests per second' | sed 's/^/  /'
search "$@"
