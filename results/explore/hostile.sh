#!/bin/sh
# usage: sh results/explore/hostile.sh > results/explore/hostile.txt
#
# Runs simulate explore -recipe-dir on recipe directories made to hurt
# the process or the server (a script that is a link to /dev/zero, a
# FIFO, a link out of the directory, a 300 MB sparse file, a manifest of
# a million steps, steps sending SHUTDOWN or CONFIG SET), then on
# manifests whose search would prove nothing (an acquire's or a release's
# ok that never matches, a key not made from ${lock}) and on an extension
# that hands EXPIRE milliseconds. All run against one redis-server started
# here; each line: the case, the exit status, the milliseconds it took,
# the first line it wrote on stderr (or its verdict), and what the server
# answers PING afterwards.
set -u
tmp=$(mktemp -d)
sim="$tmp/simulate"
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1; rm -rf "$tmp"' EXIT
go build -o "$sim" ./cmd/simulate || exit 1
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes --dir "$tmp" \
	--logfile "$tmp/redis.log" >/dev/null
sleep 0.5
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD), $(nproc) cores,"\
	"$(redis-server --version | cut -d' ' -f1-3)"
echo "load: $(uptime)"
good='{"ops": {
  "acquire": {"script": "acquire.lua", "keys": ["${lock}"], "args": ["${token}", "${ttl}"], "ok": [1]},
  "release": {"steps": [{"cmd": ["DEL", "${lock}"]}], "ok": [1]}}}'
mk() { mkdir -p "$tmp/$1"; printf '%s' "$2" > "$tmp/$1/recipe.json"; }
mk zero "$good"; ln -s /dev/zero "$tmp/zero/acquire.lua"
mk fifo "$good"; mkfifo "$tmp/fifo/acquire.lua"
echo 'return 1' > "$tmp/x.lua"
mk outside "$good"; ln -s ../x.lua "$tmp/outside/acquire.lua"
mk big "$good"; truncate -s 300M "$tmp/big/acquire.lua"
mk million "{\"ops\": {\"acquire\": {\"steps\": [$(python3 -c 'print(",".join(["{\"cmd\": [\"GET\", \"${lock}\"]}"] * 1000000))')], \"ok\": [1]}}}"
step() {
	mk "$1" "{\"ops\": {\"acquire\": {\"steps\": [{\"cmd\": [\"SET\", \"\${lock}\", \"1\", \"NX\"]}], \"ok\": [\"OK\"]},
  \"release\": {\"steps\": [{\"cmd\": $2}], \"ok\": [1]}}}"
}
step shutdown '["SHUTDOWN", "NOSAVE"]'
step config '["CONFIG", "SET", "maxmemory", "1"]'
set_lock() {
	mk "$1" "{\"ops\": {
  \"acquire\": {\"steps\": [{\"cmd\": [\"SET\", \"$4\", \"\${token}\", \"NX\", \"PX\", \"\${ttl}\"]}], \"ok\": $2},
  \"release\": {\"steps\": [{\"cmd\": [\"GET\", \"\${lock}\"], \"save\": \"v\"},
    {\"cmd\": [\"DEL\", \"\${lock}\"], \"if\": {\"eq\": [\"\${v}\", \"\${token}\"]}}], \"ok\": $3}}}"
}
set_lock acquire-never-ok '[1]' '[1]' '${lock}'
set_lock release-never-ok '["OK"]' '["1"]' '${lock}'
set_lock key-outside '["OK"]' '[1]' 'mylock'
mk expire-ms '{"ttl_unit": "ms", "ops": {
  "acquire": {"steps": [{"cmd": ["SET", "${lock}", "${token}", "NX", "PX", "${ttl}"]}], "ok": ["OK"]},
  "release": {"steps": [{"cmd": ["DEL", "${lock}"]}], "ok": [1]},
  "extend": {"script": "extend.lua", "keys": ["${lock}"], "args": ["${token}", "${ttl}"], "ok": [1]}}}'
printf '%s\n' "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('EXPIRE', KEYS[1], ARGV[2]) end" \
	'return 0' > "$tmp/expire-ms/extend.lua"
for c in zero fifo outside big million shutdown config acquire-never-ok release-never-ok key-outside expire-ms; do
	start=$(date +%s%N)
	timeout 60 "$sim" explore -redis "redis://127.0.0.1:$port" -recipe-dir "$tmp/$c" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	ms=$(( ($(date +%s%N) - start) / 1000000 ))
	what=$(grep -v '^explore: [0-9]* schedules' "$tmp/err" | tr '\n' ' ' | sed "s|$tmp|TMP|g" | cut -c1-150)
	if [ "$rc" = 1 ]; then what="broken: $(grep -oE '^(mutual_exclusion|resource|liveness|ownership|lease):' "$tmp/out" |
		tr '\n' ' ')| $(grep -E '^lease: ' "$tmp/out" | cut -c1-150)"; fi
	echo "$c: exit $rc, $ms ms, PING $(redis-cli -p "$port" ping) | $what"
done
echo "server keys left: $(redis-cli -p "$port" dbsize); maxmemory $(redis-cli -p "$port" config get maxmemory | tail -1)"
echo "load: $(uptime)"
