#!/bin/sh
# usage: [BUSY=N] sh bare.sh OUT [bare]
#
# Runs `go test -count=1 -v ./...` in the current checkout and writes to
# OUT its outcome: the commit, whether redis-server and chromium are on
# PATH, the load before and after, the wall and CPU time, each package's
# ok/FAIL line and each package's line of skips (redistest's summary),
# then every skipped test with the line it logged before it skipped (its
# reason) and the count of skips that logged none. OUT.log keeps the
# whole output. With "bare", PATH is a new directory that holds only go,
# git, a C compiler (so that the build cache is the same) and the basic
# tools the tests and the go command call: no redis-server, no redis-cli,
# no chromium. With BUSY=N, N busy loops (`yes > /dev/null`) run beside
# the tests and are killed when they end.
set -u
out=$1
busy=${BUSY:-0}
pids=""
i=0
while [ "$i" -lt "$busy" ]; do
	yes >/dev/null &
	pids="$pids $!"
	i=$((i + 1))
done
if [ "${2:-}" = bare ]; then
	bin=$(mktemp -d)
	for t in go gofmt git sh bash dash env cat ls mkdir rm cp mv sed grep awk mawk uname tr head \
		tail date sleep id mktemp find xargs basename dirname tar gzip uptime printf echo test expr wc \
		sort uniq cut tee true false chmod touch ln readlink realpath gcc cc as ld ar nproc ps kill \
		diff cmp stat od; do
		p=$(command -v "$t") && ln -s "$p" "$bin/$t"
	done
	PATH=$bin
	export PATH
fi
{
	echo "commit $(git rev-parse --short HEAD), PATH=$PATH, $busy busy loops beside"
	echo "redis-server: $(command -v redis-server || echo none), chromium: $(command -v chromium || echo none)"
	echo "start $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out"
/usr/bin/time -o "$out.time" -f "go test -count=1 -v ./...: %e s wall, %U s user, %S s sys" \
	go test -count=1 -v ./... >"$out.log" 2>&1
status=$?
echo "exit status $status" >>"$out"
echo "end $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out"
for p in $pids; do kill "$p"; done
cat "$out.time" >>"$out"
rm -f "$out.time"
grep -E '^(--- FAIL|FAIL|ok|panic)|^redistest:' "$out.log" >>"$out"
# A skip in -v output is "--- SKIP: Name (0.00s)" (a subtest's comes
# after its parent's end), its reason the last line the test logged,
# "    file.go:N: reason", after its "=== RUN", "=== CONT" or "=== NAME".
skips() {
	awk '/^=== (RUN|CONT|NAME) / { cur = $3 }
		/^ +[^ ]+\.go:[0-9]+: ./ { if (cur != "") last[cur] = $0 }
		/^ *--- SKIP: / { n++; r = last[$3]; if (r == "") none++; sub(/^ +/, "", r)
			print "skip: " $3 ": " (r == "" ? "NO REASON" : r) }
		END { printf "%d skips, %d without a reason\n", n, none }' "$1"
}
skips "$out.log" >>"$out"
[ "${2:-}" = bare ] && rm -rf "$bin"
exit "$status"
