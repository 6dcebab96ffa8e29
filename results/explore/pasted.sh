#!/bin/sh
# Builds cmd/market, serves it on a free loopback port (-redis auto), and
# asks its explorer, as the page does, to find a bug from step 0 in pasted
# locks and in recipe 6, one search at a time, each within the service's
# search budget (1 minute). For each search it prints the bounds, how it
# ended, the schedules and seconds, each property's verdict, and the load
# before and after; then the correct example with its extension on the
# command line, searched through without a budget. Writes pasted.txt (or
# $OUT). Needs redis-server, curl and jq.
set -eu
cd "$(dirname "$0")/../.."
. results/free-port.sh
out=${OUT:-results/explore/pasted.txt}
tmp=$(mktemp -d)
go build -o "$tmp/market" ./cmd/market
go build -o "$tmp/simulate" ./cmd/simulate
port=$(free_port 1)
"$tmp/market" -addr "127.0.0.1:$port" -redis auto -name pasted >"$tmp/market.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
base="http://127.0.0.1:$port/api/explore/sessions"
i=0
until curl -fs "http://127.0.0.1:$port/healthz" >/dev/null; do
	i=$((i + 1))
	[ "$i" -lt 300 ] || { echo "the market did not start" >&2; exit 1; }
	sleep 0.1
done

take="if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end return 0"
tokenRelease="if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
delRelease="redis.call('DEL', KEYS[1]) return 1"
ownExtend="if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"

# find NAME BODY: a session of BODY, a search from step 0, its end.
find() {
	id=$(curl -fsS -X POST -H 'Content-Type: application/json' -d "$2" "$base" | jq -r .id)
	echo "## $1"
	echo "# uptime before: $(uptime)"
	curl -fsS -X POST -H 'Content-Type: application/json' -d '{}' "$base/$id/find" >/dev/null
	while :; do
		st=$(curl -fsS "$base/$id")
		[ "$(echo "$st" | jq -r .find.state)" = running ] || break
		sleep 1
	done
	echo "# uptime after: $(uptime)"
	echo "$st" | jq -r '"model: " + .model,
		"find: " + .find.state + ", " + (.find.schedules | tostring) + " schedules, " +
		((.find.elapsed_ms / 1000 * 10 | round) / 10 | tostring) + " s of a " +
		(.find.budget_ms / 1000 | tostring) + " s budget" + (if .find.note then "; " + .find.note else "" end),
		"lock search: " + (.find.result.schedules | tostring) + " schedules, exhaustive " +
		(.find.result.exhaustive | tostring) +
		(if .find.result.counterexample then ", found " + .find.result.counterexample.property else "" end),
		(if .find.unpromised then "not-promised search: " + (.find.unpromised.schedules | tostring) +
			" schedules" + (if .find.unpromised.counterexample then ", shown " +
			.find.unpromised.counterexample.property else ", none" end) else empty end),
		(.find.properties[] | "  " + .property + ": " + .verdict)'
	curl -fsS -X DELETE "$base/$id" >/dev/null
	echo
}

lua() { # lua ACQUIRE RELEASE EXTEND [EXTRA]: a session's body
	jq -nc --arg a "$1" --arg r "$2" --arg x "$3" --argjson extra "${4:-{\}}" \
		'{lua: {acquire: $a, release: $r, extend: $x}} + $extra'
}

{
	echo "# results/explore/pasted.sh: a find from step 0 through the service, one at a time"
	echo "# commit $(git rev-parse --short HEAD), $(nproc) cores, $(redis-server --version | cut -d' ' -f1-3)"
	find "a DEL release, 3 clients (default)" "$(lua "$take" "$delRelease" "")"
	find "a DEL release, 2 clients" "$(lua "$take" "$delRelease" "" '{"clients":2}')"
	find "recipe 6's algorithm, 3 clients (default)" "$(lua "$take" "$tokenRelease" "")"
	find "recipe 6's algorithm renewed by its owner, 3 clients (default)" "$(lua "$take" "$tokenRelease" "$ownExtend")"
	find "recipe 6's algorithm, 2 clients" "$(lua "$take" "$tokenRelease" "" '{"clients":2}')"
	find "recipe 6 (the gallery's, 2 clients)" '{"recipe":"6"}'
	# The same scripts on the command line, one worker, no budget: how
	# long the whole search takes at this load.
	c=examples/recipes/correct
	echo "## simulate explore -acquire $c/acquire.lua -release $c/release.lua -extend $c/extend.lua -clients 3 -workers 1"
	echo "# uptime before: $(uptime)"
	"$tmp/simulate" explore -redis auto -acquire $c/acquire.lua -release $c/release.lua -extend $c/extend.lua \
		-clients 3 -workers 1 2>&1 | grep -E '^(checked|search|No violation|Broken)' || true
	echo "# uptime after: $(uptime)"
} 2>&1 | tee "$out"
