# The shape targets of -profile book, computed from one results.json:
# ratios of items bought between strategies in the same scenario, WATCH's
# retries per purchase (in shape at 1x1: watch/fine 0.1-0.6 and fewer
# than 20 retries per purchase), the audit and the round trip measured; and how far the run's ratios are
# from the book's (distance_to_book, used by the calibration to choose
# among the settings that meet every target).
def row(s; st): [.rows[] | select(.scenario == s and .strategy == st)][0];
def ratio(s; a; b): row(s; a).bought / row(s; b).bought;
def bookratio(s; a; b): row(s; a).book.bought / row(s; b).book.bought;
def rpp(s): row(s; "watch").retries_per_purchase;
def bookrpp(s): row(s; "watch").book | .retries / .bought;
def r3: . * 1000 | round / 1000;
def between(x; lo; hi): x >= lo and x <= hi;
# decades between ours and the book's; 0 when the book printed a bound
# (WATCH's "<200" bought) and ours is beyond it on the bound's side.
def decades(ours; book): (ours / book | log / (10 | log)) | if . < 0 then -. else . end;
def below(ours; book): if ours <= book then 0 else decades(ours; book) end;
def above(ours; book): if ours >= book then 0 else decades(ours; book) end;
{
  client, rtt_configured_ms, rtt_ms, jitter_ms: (.jitter_ms // 0), seed,
  watch_per_fine_1x1: ratio("1x1"; "watch"; "fine") | r3,
  watch_per_fine_5x1: ratio("5x1"; "watch"; "fine") | r3,
  watch_per_fine_5x5: ratio("5x5"; "watch"; "fine") | r3,
  watch_per_coarse_5x1: ratio("5x1"; "watch"; "coarse") | r3,
  watch_per_coarse_5x5: ratio("5x5"; "watch"; "coarse") | r3,
  coarse_per_fine_1x1: ratio("1x1"; "coarse"; "fine") | r3,
  coarse_per_fine_5x1: ratio("5x1"; "coarse"; "fine") | r3,
  coarse_per_fine_5x5: ratio("5x5"; "coarse"; "fine") | r3,
  lua_per_fine_5x5: ratio("5x5"; "lua"; "fine") | r3,
  watch_retries_per_purchase_1x1: rpp("1x1"),
  watch_retries_per_purchase_5x1: rpp("5x1"),
  watch_retries_per_purchase_5x5: rpp("5x5"),
  watch_window_ms: {"1x1": row("1x1"; "watch").conflict.window_ms, "5x1": row("5x1"; "watch").conflict.window_ms,
    "5x5": row("5x5"; "watch").conflict.window_ms},
  violations: ([.rows[].violations] | add),
  distance_to_book: ([
    below(ratio("5x1"; "watch"; "fine"); bookratio("5x1"; "watch"; "fine")),
    below(ratio("5x5"; "watch"; "fine"); bookratio("5x5"; "watch"; "fine")),
    decades(ratio("1x1"; "watch"; "fine"); bookratio("1x1"; "watch"; "fine")),
    decades(ratio("1x1"; "coarse"; "fine"); bookratio("1x1"; "coarse"; "fine")),
    decades(ratio("5x1"; "coarse"; "fine"); bookratio("5x1"; "coarse"; "fine")),
    decades(ratio("5x5"; "coarse"; "fine"); bookratio("5x5"; "coarse"; "fine")),
    decades(ratio("5x5"; "lua"; "fine"); bookratio("5x5"; "lua"; "fine")),
    decades(rpp("1x1"); bookrpp("1x1")),
    above(rpp("5x1"); bookrpp("5x1")),
    above(rpp("5x5"); bookrpp("5x5"))
  ] | add / length | r3)
}
| . + {
  met: {
    watch_per_fine_le_0_05: (.watch_per_fine_5x1 <= 0.05 and .watch_per_fine_5x5 <= 0.05),
    watch_below_coarse: (.watch_per_coarse_5x1 < 1 and .watch_per_coarse_5x5 < 1),
    coarse_per_fine_0_1_to_0_9: (between(.coarse_per_fine_1x1; 0.1; 0.9) and between(.coarse_per_fine_5x1; 0.1; 0.9)
      and between(.coarse_per_fine_5x5; 0.1; 0.9)),
    lua_per_fine_ge_2: (.lua_per_fine_5x5 >= 2),
    watch_retries_5x5_above_1x1: (.watch_retries_per_purchase_5x5 > .watch_retries_per_purchase_1x1),
    watch_1x1_in_shape: (between(.watch_per_fine_1x1; 0.1; 0.6) and .watch_retries_per_purchase_1x1 < 20),
    audit_clean: (.violations == 0),
    rtt_measured: (.rtt_ms > 0)
  }
}
| . + {all_met: ([.met[]] | all)}
