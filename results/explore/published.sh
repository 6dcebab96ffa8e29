#!/bin/sh
# The recipes of internal/explore/targets/testdata/published, each run once through
# simulate explore -recipe-dir, one at a time, with its flags: one line a
# run (exit status, the search's first line, the verdict).
# Usage: sh results/explore/published.sh > results/explore/published.txt
set -u
sim=$(mktemp -d)
trap 'rm -rf "$sim"' EXIT
go build -o "$sim/simulate" ./cmd/simulate || exit 2
echo "start $(date -u +%FT%H:%MZ) commit $(git rev-parse --short HEAD) load $(uptime | sed 's/.*average: //')"
while IFS='|' read -r name flags; do
  out=$("$sim/simulate" explore -recipe-dir "internal/explore/targets/testdata/published/$name" $flags 2>&1)
  rc=$?
  search=$(echo "$out" | grep -E '^search:' | head -1 | cut -c1-60)
  verdict=$(echo "$out" | grep -E '^(No violation|No verdict|mutual_exclusion: |holders: |liveness: |ownership: |resource: |lease: )' |
    head -1 | cut -c1-110)
  echo "$name [$flags] exit=$rc | $search | $verdict"
done <<'RUNS'
redsync|-clients 2
redislock-bsm|-clients 2
node-redlock|-clients 2
python-redis-lock|-clients 2
redis-py|-clients 2
pottery|-clients 2
laravel|-clients 2
symfony|-clients 2
spring-registry-6|-clients 2
redisson-lock|-clients 2 -faults pause-short,crash
redisson-lock|-clients 2 -first
redisson-rwlock|-clients 2 -first
redisson-rwlock|-clients 3 -ttls 10s,3s -faults pause-short -check mutual_exclusion
redisson-lock-2016|-clients 2 -first -check ownership
redisson-rwlock-2019|-clients 3 -ttls 10s,3s -faults pause-short -check mutual_exclusion -first
laravel-5.5|-clients 2 -first
laravel-5.5|-clients 3 -faults pause-long -check mutual_exclusion -first
spring-registry-5|-clients 2 -first
spring-registry-5|-clients 3 -faults pause-long -check mutual_exclusion -first
RUNS
echo "end $(date -u +%FT%H:%MZ) load $(uptime | sed 's/.*average: //')"
