#!/bin/sh
# usage: first-run.sh REPO OUT
#
# Times what a newcomer's first minutes cost: a fresh clone of REPO, then,
# with an empty module cache (a new GOMODCACHE) and an empty build cache (a
# new GOCACHE), the download of the dependencies and the builds of
# cmd/simulate and cmd/market, one after the other as the README has them.
# The load average is read every 5 s throughout; OUT gets one line per step
# (wall time, CPU time, peak memory) and the load lines.
set -eu
repo=$1
out=$2
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"; kill "$sampler" 2>/dev/null || true' EXIT
git clone -q "$repo" "$work/src"
mkdir "$work/mod" "$work/cache"
export GOMODCACHE="$work/mod" GOCACHE="$work/cache" GOFLAGS=-modcacherw
(while :; do echo "load: $(date -u +%H:%M:%S) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 5; done) \
  >"$out.load" &
sampler=$!
cd "$work/src"
{
  echo "commit $(git rev-parse --short HEAD), $(go version | cut -d' ' -f3), $(nproc) CPUs"
  echo "start $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
  step() {
    name=$1
    shift
    /usr/bin/time -f "$name: %e s wall, %U s user, %S s sys, %M KB maxrss" "$@" 2>&1 | tail -1
  }
  step "go mod download" go mod download
  step "go build ./cmd/simulate" go build -o "$work/simulate" ./cmd/simulate
  step "go build ./cmd/market" go build -o "$work/market" ./cmd/market
  echo "end $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out"
kill "$sampler"
awk '{ if ($3 + 0 > peak) peak = $3 + 0 } END { print "peak 1-minute load average:", peak }' \
  "$out.load" >>"$out"
