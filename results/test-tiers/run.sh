#!/bin/sh
# usage: sh run.sh RUNS DIR...
#
# Times `go test $FLAGS ./...` (FLAGS defaults to "-short -count=1", the
# fast tier; FLAGS=-count=1 times the full run) in each checkout DIR with
# the build cache warm: first, untimed, every test binary is built and
# none run (-run '^$'), and the docs tests run once (they build the
# programs through go run, whose cache keeps them); then RUNS rounds, each
# timing one run in every DIR in turn (so that two trees compared see the
# same load), each run between two `uptime` lines, since the load of other
# work on the machine moves the times. A run that fails says so ("Command
# exited with non-zero status") and names the tests and packages that
# failed.
flags=${FLAGS:--short -count=1}
runs=$1
shift
t=$(mktemp)
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
go version
for d in "$@"; do
	(cd "$d" && go test $flags -run '^$' ./... > /dev/null 2>&1 && go test -count=1 ./docs/ > /dev/null 2>&1)
done
i=0
while [ "$i" -lt "$runs" ]; do
	i=$((i + 1))
	for d in "$@"; do
		echo "load: $(uptime)"
		(cd "$d" && /usr/bin/time -o "$t" -f "$d: go test $flags ./...: %e s wall, %U s user, %S s sys" \
			go test $flags ./... > "$t.log" 2>&1)
		cat "$t"
		grep -E '^(--- FAIL|FAIL)' "$t.log"
	done
done
echo "load: $(uptime)"
rm -f "$t" "$t.log"
