#!/bin/sh
# Sharded searches against the whole search, on this machine. For each
# search: the whole search in one process, then its N shards
# (-shard i/N) as N processes at once, each with its own private
# redis-server, then simulate explore -merge of their JSON results. All
# with -workers 1, whose counts repeat run after run, and with which each
# shard records what it explored, so that -merge recounts the whole
# search's schedules (whole_count) beside what the shards ran
# (shard_schedules, shard_pruned).
#   1. recipe 6's fix, 3 clients, 4 shards: no violation, exhaustive, the
#      whole search's counts;
#   2. recipe 6 as published (flawed), 3 clients, 2 shards: its violation,
#      reproduced, exit 1;
#   3. recipe 2's fix under crashes with -no-reduction (no sleep sets, no
#      state cache), 4 shards: no record; the shards' counts add up to the
#      whole's exactly, as they must without the cache.
# Each line: the command, its exit status, the wall time, the load
# (uptime) when it started, the size of its JSON result, and what it
# reports (for a shard, the nodes of its record). A set of shards' line
# gives the wall time from the first start to the last end.
# Usage: results/explore/shards.sh SIMULATE >results/explore/shards.txt
set -u
sim=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "# $(uname -sr), $(nproc) cores, $($sim version)"
summary='{schedules, pruned, exhaustive, coverage, elapsed_s,
	violations: [.violations[] | {property, reproduced, steps: (.actions | length)}],
	shard: (.shard | if . then "\(.index)/\(.count), split at \(.split_depth): \(.subtrees) subtrees, \(.runs) runs" else null end),
	explored_nodes: .shard.explored.nodes,
	merged_shards, whole_count, shard_schedules, shard_pruned}'
line() { # line NAME RC START END LOAD FILE
	printf '%s\n  exit %s, %s s, load %s, %s bytes: %s\n' "$1" "$2" "$(($4 - $3))" "$5" \
		"$(wc -c <"$6")" "$(jq -c "$summary" "$6" 2>/dev/null || echo "no JSON")"
}
whole() { # whole NAME ARGS...
	name=$1
	shift
	load=$(uptime | sed 's/.*load average: //')
	start=$(date +%s)
	"$sim" explore "$@" -format json >"$dir/$name-whole.json" 2>/dev/null
	rc=$?
	line "simulate explore $*" "$rc" "$start" "$(date +%s)" "$load" "$dir/$name-whole.json"
}
shards() { # shards NAME N ARGS...
	name=$1
	n=$2
	shift 2
	load=$(uptime | sed 's/.*load average: //')
	start=$(date +%s)
	i=0
	while [ "$i" -lt "$n" ]; do
		("$sim" explore "$@" -shard "$i/$n" -format json >"$dir/$name-$i.json" 2>/dev/null
			echo $? >"$dir/$name-$i.rc"
			date +%s >"$dir/$name-$i.end") &
		i=$((i + 1))
	done
	wait
	end=0
	i=0
	while [ "$i" -lt "$n" ]; do
		e=$(cat "$dir/$name-$i.end")
		[ "$e" -gt "$end" ] && end=$e
		line "simulate explore $* -shard $i/$n" "$(cat "$dir/$name-$i.rc")" "$start" "$e" "$load" \
			"$dir/$name-$i.json"
		i=$((i + 1))
	done
	echo "  the $n shards at once: $((end - start)) s from the first start to the last end"
	files=$(i=0; while [ "$i" -lt "$n" ]; do printf '%s ' "$dir/$name-$i.json"; i=$((i + 1)); done)
	start=$(date +%s)
	# shellcheck disable=SC2086 # one word per file
	"$sim" explore -merge -format json $files >"$dir/$name-merged.json" 2>/dev/null
	rc=$?
	line "simulate explore -merge $name-0.json ... $name-$((n - 1)).json" "$rc" "$start" \
		"$(date +%s)" "$(uptime | sed 's/.*load average: //')" "$dir/$name-merged.json"
}
set -- -recipe 6 -fixed -clients 3 -workers 1
whole fixed "$@"
shards fixed 4 "$@"
set -- -recipe 6 -clients 3 -workers 1
whole flawed "$@"
shards flawed 2 "$@"
set -- -recipe 2 -fixed -faults crash -no-reduction -workers 1
whole plain "$@"
shards plain 4 "$@"
