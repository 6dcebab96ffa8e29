#!/usr/bin/env bash
# compare.sh OLD NEW OUTDIR: runs the simulate commands of the README and
# docs/ (measurements with short bounds) with two builds of cmd/simulate,
# masks what a rerun changes, and diffs. "exact" compares after masking
# durations, rates, load averages, versions, tokens, ports and the
# exploration's periodic progress lines; "shape" masks every number too
# (measurements), and the line breaks and column widths numbers move.
# Run from the repository's root; a redis-server on PATH.
set -u
old=$1 new=$2 out=$3
mkdir -p "$out"
R=examples/recipes
cmds=(
"exact|-h"
"exact|help run"
"exact|help explore"
"exact|help faults"
"exact|help gallery"
"exact|help report"
"exact|help window"
"exact|version -h"
"exact|run -h"
"exact|faults -h"
"exact|bogus"
"exact|-duration 0"
"exact|-scenarios 1x1,5x5 -rounds 100 -duration 10ms"
"exact|-scenarios 5000x5000"
"exact|faults -fault nope"
"exact|faults -timeline nope"
"exact|gallery -recipes 99"
"exact|window -rtts 5s"
"exact|report"
"exact|explore"
"exact|explore -recipe 99"
"exact|explore -recipe 4 -fixed -nodes 3"
"exact|explore -recipe 4 -bound ticks"
"exact|report -in results/repro/results.json"
"exact|report -in results/repro/results.json -wide"
"exact|report -in results/repro/results.json -format markdown"
"exact|report -in results/repro/results.json -format csv"
"exact|report -in results/repro/results.json -format json"
"exact|window -in results/window/window.json -format markdown"
"exact|window -in results/window/window.json"
"exact|window -in results/window/window.json -format csv"
"exact|explore -recipe 4 -first"
"exact|explore -recipe 4 -fixed"
"exact|explore -recipe 6 -fixed -format json"
"exact|explore -recipe 11 -fixed -faults pause-long,crash"
"exact|explore -recipe 4 -mode random -seed 7 -schedules 500"
"exact|explore -watchdog -faults pause-short,crash -first"
"exact|explore -watchdog -faults pause-long -first"
"exact|explore -strategy fine -first"
"exact|explore -strategy fine -fencing -clients 2"
"exact|explore -redlock -faults node-restart -first"
"exact|explore -redlock -faults clock-jump -first"
"exact|explore -redlock -faults none -bound attempts=1,ticks=0"
"exact|explore -acquire $R/correct/acquire.lua -release $R/correct/release.lua -extend $R/correct/extend.lua"
"exact|explore -acquire $R/broken/acquire.lua -release $R/broken/release.lua -extend $R/broken/extend.lua -format json"
"exact|explore -recipe-dir $R/check-then-delete/broken -first"
"exact|explore -recipe-dir $R/check-then-delete/fixed"
"exact|explore -recipe-dir $R/rw-leases/broken -ttls 10s,3s -faults pause-short"
"exact|explore -recipe-dir $R/setnx-then-expire/broken -faults crash -first"
"exact|explore -recipe 6 -first -v"
"shape|gallery -timeline 6"
"shape|gallery"
"shape|gallery -recipes 4,5,6 -format json"
"shape|gallery -format csv"
"shape|gallery -format markdown -wide"
"shape|-scenarios 1x1 -strategies watch,lua -duration 200ms -rounds 2"
"shape|-scenarios 1x1 -strategies fine -duration 200ms -rounds 1 -format json"
"shape|-scenarios 1x1 -strategies coarse -duration 100ms -rounds 1 -prefill 1000 -format csv"
"shape|-profile book -scenarios 1x1 -strategies watch -duration 200ms -rounds 1"
"shape|window -rtts 0,1ms -clients lean -strategies watch -duration 200ms"
"shape|faults -fault pause -trials 1 -strategies watch,fine"
"shape|faults -fault pause -trials 1 -strategies fine -format markdown"
"shape|faults -fault stall -trials 1 -strategies watch -duration 200ms -format csv"
"shape|faults -fault pause-process -trials 1 -strategies fine -format json"
"shape|faults -timeline pause/fine"
)
mask_exact() {
  sed -E -e 's/[0-9]+(\.[0-9]+)?(ns|µs|us|ms|s|m[0-9.]*s?|h)\b/<T>/g' \
    -e 's/load average[^;)]*/load average <L>/g' -e 's/"(elapsed|load|avg)[a-z_0-9]*": [0-9.e+-]+/"\1": <N>/g' \
    -e 's/[0-9a-f]{12,40}/<H>/g' -e 's/(go_version|program|cpu_model)": "[^"]*"/\1": "<V>"/g' \
    -e 's#/tmp/[^ ]*#<TMP>#g' -e 's/[0-9]+(\.[0-9]+)? s\b/<T>/g' -e 's/[0-9,]+ schedules\/s/<R>/g' \
    -e 's/[0-9a-f]{8}…/<K>/g' -e 's/\([0-9]+ more cut by the reduction\)/(<N> more cut by the reduction)/' \
    -e 's/"pruned": [0-9]+/"pruned": <N>/' \
    -e '/^explore: [0-9]+ schedules, <T>, found: /d' -e 's/127\.0\.0\.1:[0-9]+/<ADDR>/g' -e 's/"(elapsed_s|elapsed_ms|schedules_per_s)": [0-9.e+-]+/"\1": <N>/g'
}
# a measurement's figures change a table's column widths and which fields
# of a progress line fit 100 columns: runs of spaces and rules collapse, and
# a progress line keeps what comes before its figures.
mask_shape() { sed -E 's/^(\[[0-9]+\/[0-9]+\] .*) bought .*/\1 bought .../' | tr '\n' ' ' | mask_exact | sed -E -e 's/[0-9][0-9,.]*/<N>/g' -e 's/[+-]<N>%/<N>%/g' -e 's/ +/ /g' -e 's/─+/─/g'; }
i=0; diffs=0
for c in "${cmds[@]}"; do
  i=$((i+1)); kind=${c%%|*}; args=${c#*|}
  for which in old new; do
    bin=$old; [ $which = new ] && bin=$new
    if [ -z "${REMASK:-}" ]; then
    # shellcheck disable=SC2086
    timeout 300 $bin $args >"$out/$i.$which.out" 2>"$out/$i.$which.err"; echo "exit $?" >>"$out/$i.$which.out"
    fi
    for s in out err; do
      if [ $kind = exact ]; then mask_exact <"$out/$i.$which.$s" >"$out/$i.$which.$s.m"; else mask_shape <"$out/$i.$which.$s" >"$out/$i.$which.$s.m"; fi
    done
  done
  if cmp -s "$out/$i.old.out.m" "$out/$i.new.out.m" && cmp -s "$out/$i.old.err.m" "$out/$i.new.err.m"; then
    echo "same  $kind  simulate $args ($(wc -l <"$out/$i.new.out") lines out, $(wc -l <"$out/$i.new.err") err)"
  else
    diffs=$((diffs+1)); echo "DIFF  $kind  simulate $args   (see $out/$i.*)"
  fi
done
echo "$i commands, $diffs differ"
