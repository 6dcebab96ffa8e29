#!/usr/bin/env bash
# Times the race-detector test binaries of some packages in two checkouts,
# in ABBA order (base, new, new, base) so that both see the same load.
#
#   results/test-tiers/race-ab.sh BASE NEW OUT PKG...
#
# BASE and NEW are checkouts (git archive exports), PKG a package folder
# such as internal/failure/faults. The binaries are built first, untimed;
# each run is the binary alone (go test -race -count=1 -v, with CI=true),
# from its package's folder, its output in OUT/WHICH-NAME-RUN.out and one
# line per run in OUT/ab.log: wall time and the 1-minute load before and
# after.
set -u
base=$1 new=$2 out=$3
shift 3
mkdir -p "$out/bin"
for p in "$@"; do
  n=$(basename "$p")
  (cd "$base" && go test -race -c -o "$out/bin/base-$n.test" "./$p/") || exit 1
  (cd "$new" && go test -race -c -o "$out/bin/new-$n.test" "./$p/") || exit 1
done
run() { # WHICH PKG RUN
  local which=$1 p=$2 k=$3 n root
  n=$(basename "$p")
  if [ "$which" = base ]; then root=$base; else root=$new; fi
  local l0 t0 t1 l1 rc
  l0=$(cut -d' ' -f1 /proc/loadavg)
  t0=$(date +%s.%N)
  (cd "$root/$p" && CI=true "$out/bin/$which-$n.test" -test.count=1 -test.v -test.timeout 20m) \
    >"$out/$which-$n-$k.out" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  l1=$(cut -d' ' -f1 /proc/loadavg)
  printf "%s %-5s %-8s run%s rc=%d %6.1f s  load1 %s -> %s  (%s)\n" "$(date -u +%T)" "$which" "$n" "$k" "$rc" \
    "$(echo "$t1 - $t0" | bc)" "$l0" "$l1" "$(tail -1 "$out/$which-$n-$k.out")" >>"$out/ab.log"
}
for p in "$@"; do
  run base "$p" 1
  run new "$p" 1
  run new "$p" 2
  run base "$p" 2
done
