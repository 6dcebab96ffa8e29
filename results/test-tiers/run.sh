#!/bin/sh
# usage: sh run.sh DIR [RUNS]
#
# Times `go test -short -count=1 ./...` in the checkout DIR with the build
# cache warm: a first run, not timed, compiles and links what the cache
# lacks; then RUNS timed runs (default 2), each between two `uptime`
# lines, since the load of other work on the machine moves the times.
# A run that fails says so ("Command exited with non-zero status").
cd "$1" || exit 1
runs=${2:-2}
t=$(mktemp)
echo "dir: $1"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
go version
go test -short -count=1 ./... > /dev/null 2>&1
i=0
while [ "$i" -lt "$runs" ]; do
	i=$((i + 1))
	echo "load: $(uptime)"
	/usr/bin/time -o "$t" -f "go test -short -count=1 ./...: %e s wall, %U s user, %S s sys" \
		go test -short -count=1 ./... > /dev/null 2>&1
	cat "$t"
done
echo "load: $(uptime)"
rm -f "$t"
