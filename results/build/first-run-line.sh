#!/bin/bash
# usage: first-run-line.sh REPO
#
# A newcomer's first run through the README's one-line build with
# progress: a fresh clone of REPO, an empty module cache and build cache,
# the dependencies downloaded, then the README's line (go build -v piped
# to a count of the packages, then the simulator) run as written, timed
# as a whole, with the load before and after.
set -eu
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
git clone -q "$1" "$work/src"
cd "$work/src"
export GOMODCACHE="$work/mod" GOCACHE="$work/cache" GOFLAGS=-modcacherw
echo "commit $(git rev-parse --short HEAD) start $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
go mod download
echo "downloaded after $(($(date +%s) - start)) s"
sed -n '/^go build -v/,/simulate$/p' README.md >"$work/line.sh"
cat "$work/line.sh"
/usr/bin/time -f "%e s wall, %U s user, %S s sys" sh "$work/line.sh"
echo "end $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
