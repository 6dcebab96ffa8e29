#!/bin/sh
# usage: [FLAGS=...] sh slowest.sh OUT [PACKAGE...]
#        LOG=FILE sh slowest.sh OUT
#
# Runs `go test -race -count=1 -timeout 20m $FLAGS -json` of the packages
# (default ./...) with CI=true, as CI does (.ci/run's FLAGS are "-p 3"),
# and writes to OUT the ten slowest tests (top-level tests and subtests
# alike, by the go command's elapsed time), then each package's time,
# between two `uptime` lines; OUT.json keeps the events.
#
# With LOG, it runs nothing: it reads the same from FILE, the log of a
# verbose run (`CI=true GOFLAGS=-v bash .ci/run`), whose go test prints
# each package's output whole, its "--- PASS: Name (S.SSs)" lines, then
# its "ok" line.
set -u
out=$1
shift
if [ -n "${LOG:-}" ]; then
	{
		echo "from the log $LOG"
		echo "slowest tests (seconds, package, test):"
		awk '/^ *--- (PASS|FAIL): / { t = $3; s = $4; gsub(/[()s]/, "", s); n++; name[n] = t; secs[n] = s }
			($1 == "ok" || $1 == "FAIL") && NF >= 2 {
				for (i = 1; i <= n; i++) print secs[i], $2, name[i]
				n = 0 }' "$LOG" | sort -rn | head -10
		echo "packages (seconds, package):"
		awk '($1 == "ok" || $1 == "FAIL") && $3 ~ /^[0-9.]+s$/ { s = $3; sub(/s$/, "", s); print s, $2 }' \
			"$LOG" | sort -rn
	} >"$out"
	exit 0
fi
[ $# -gt 0 ] || set -- ./...
{
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo none)"
	go version
	echo "load: $(uptime)"
} >"$out"
flags=${FLAGS:-}
# shellcheck disable=SC2086 # FLAGS is a list of flags
CI=true /usr/bin/time -o "$out.time" \
	-f "go test -race -count=1 -timeout 20m $flags -json $*: %e s wall, %U s user, %S s sys" \
	go test -race -count=1 -timeout 20m $flags -json "$@" >"$out.json" 2>&1
echo "exit status $?" >>"$out"
cat "$out.time" >>"$out"
rm -f "$out.time"
echo "load: $(uptime)" >>"$out"
# The events of an ended test: {"Time":...,"Action":"pass","Package":P,"Test":T,"Elapsed":S}.
echo "slowest tests (seconds, package, test):" >>"$out"
grep -E '"Action":"(pass|fail)","Package":"[^"]*","Test":' "$out.json" |
	sed -E 's/.*"Package":"([^"]*)","Test":"([^"]*)","Elapsed":([0-9.]+).*/\3 \1 \2/' |
	sort -rn | head -10 >>"$out"
echo "packages (seconds, package):" >>"$out"
grep -E '"Action":"(pass|fail)","Package":"[^"]*","Elapsed":' "$out.json" |
	sed -E 's/.*"Package":"([^"]*)","Elapsed":([0-9.]+).*/\2 \1/' | sort -rn >>"$out"
