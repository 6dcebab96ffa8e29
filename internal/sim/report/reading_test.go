package report

import (
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/report/latency"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/market"
)

// cell is a 10 s cell of sc under s that bought bought items; a Watch cell
// also sent execs EXECs, retries of them aborted, with windows of w each.
func cell(sc sim.Scenario, s market.Strategy, listed, bought, retries int64, w time.Duration) Row {
	r := sim.Result{Scenario: sc, Strategy: s, Duration: 10 * time.Second, Elapsed: 10 * time.Second,
		Listed: listed, Bought: bought, Retries: retries, Wait: &latency.Histogram{}}
	if s == market.Watch {
		r.Execs = bought + retries
		r.Window = time.Duration(r.Execs) * w
	}
	return FromResult(r)
}

// sliced is a row like cell's measured in len(bought) rounds of 2 s,
// bought[i] in round i+1.
func sliced(sc sim.Scenario, s market.Strategy, listed, retries int64, w time.Duration, bought ...int64) Row {
	total := int64(0)
	for _, b := range bought {
		total += b
	}
	d := time.Duration(len(bought)) * 2 * time.Second
	res := sim.Result{Scenario: sc, Strategy: s, Duration: d, Elapsed: d,
		Listed: listed, Bought: total, Retries: retries, Wait: &latency.Histogram{}}
	if s == market.Watch {
		res.Execs = total + retries
		res.Window = time.Duration(res.Execs) * w
	}
	r := FromResult(res)
	var sl []Slice
	for i, b := range bought {
		sl = append(sl, Slice{Round: i + 1, ElapsedS: 2, Bought: b, BoughtPerS: float64(b) / 2})
	}
	r.SetSlices(sl)
	return r
}

func TestReading(t *testing.T) {
	one, five := sim.Scenario{Listers: 1, Buyers: 1}, sim.Scenario{Listers: 5, Buyers: 5}
	tests := []struct {
		name         string
		rows         []Row
		illustrative bool
		want         []string // substrings of the reading, in order
		not          []string // substrings it must not have
		none         bool
	}{
		{
			name: "lua ahead beyond its intervals; WATCH ahead, then behind as λ·w grows",
			rows: []Row{
				sliced(one, market.Watch, 20_000, 2_000, 50*time.Microsecond, 4_200, 3_800, 4_000, 4_000, 4_000),
				sliced(one, market.Fine, 18_000, 0, 0, 3_600, 3_500, 3_700, 3_600, 3_600),
				sliced(one, market.Lua, 40_000, 0, 0, 8_000, 7_000, 9_000, 8_000, 8_000),
				sliced(five, market.Watch, 50_000, 40_000, 200*time.Microsecond, 1_000, 1_000, 1_000, 1_000, 1_000),
				sliced(five, market.Coarse, 12_000, 0, 0, 2_400, 2_400, 2_400, 2_400, 2_400),
				sliced(five, market.Fine, 30_000, 0, 0, 5_000, 4_000, 6_000, 5_000, 5_000),
				sliced(five, market.Lua, 60_000, 0, 0, 11_000, 10_000, 12_000, 11_000, 11_000),
			},
			want: []string{
				"1x1: lua bought most (closest: lua/watch 1.99× (95% CI 1.82–2.19, 5 rounds)): lua 4,000/s (3,500–4,500),",
				"watch 2,000/s (1,900–2,100), fine 1,800/s (1,750–1,850).",
				// λ = (20,000 + 0)/10 s = 2,000/s; w = 50 µs; λ·w = 0.1.
				"watch: 0.10 retries per purchase; 2,000 writes/s", "(λ) and a 50µs window (w) give λ·w = 0.10",
				"expects 90% of EXECs to commit, 91% did.",
				"5x5: lua bought most (closest: lua/fine 2.21× (95% CI 2.01–2.44, 5 rounds)): lua 5,500/s (5,000–6,000)",
				// λ = (50,000 + 5,000·4/5)/10 s = 5,400/s; λ·w = 1.08.
				"watch: 8.00 retries per purchase; 5,400 writes/s", "give λ·w = 1.08", "expects 34%", "11% did.",
				"Verdict: lua bought most in 2 of 2 scenarios, so use it wherever the logic fits a script;",
				"WATCH where it was ahead (1x1 watch/fine 1.11× (95% CI 1.07–1.15, 5 rounds) at λ·w 0.10),",
				"a lock (fine) where λ·w grew (5x5 watch/fine 0.20× (95% CI 0.17–0.24, 5 rounds) at λ·w 1.08).",
			},
			not: []string{"cannot tell", "quieter"},
		},
		{
			name: "an interval spanning 1: the run cannot tell",
			rows: []Row{
				sliced(five, market.Fine, 30_000, 0, 0, 5_000, 6_100, 5_000),
				sliced(five, market.Lua, 60_000, 0, 0, 6_000, 6_000, 6_000),
				sliced(five, market.Coarse, 12_000, 0, 0, 2_000, 2_000, 2_000),
			},
			want: []string{
				"5x5: the run cannot tell lua from fine (lua/fine 1.12× (95% CI 0.84–1.49, 3 rounds)): lua 3,000/s (3,000–3,000),",
				"Verdict: the run cannot tell which strategy bought most in any scenario.",
				"measure longer (-duration 60s), in more rounds (-rounds 6), or on a quieter machine.",
			},
			not: []string{"bought most,"},
		},
		{
			name: "WATCH against a lock undecided",
			rows: []Row{
				sliced(five, market.Watch, 50_000, 100, time.Millisecond, 900, 1_100, 1_000),
				sliced(five, market.Coarse, 12_000, 0, 0, 1_000, 1_000, 1_000),
				sliced(five, market.Lua, 60_000, 0, 0, 6_000, 6_000, 6_000),
			},
			want: []string{"5x5: lua bought most (closest: lua/watch 6.02× (95% CI 4.69–7.73, 3 rounds))",
				"Verdict: lua bought most in 1 of 1 scenarios, so use it wherever the logic fits a script;",
				"the run cannot tell WATCH from the best lock in 5x5 watch/coarse 1.00× (95% CI 0.78–1.28, 3 rounds)",
				"in more rounds"},
		},
		{
			name: "one slice: no spread, no winner",
			rows: []Row{sliced(one, market.Fine, 10, 0, 0, 10), sliced(one, market.Lua, 20, 0, 0, 40)},
			want: []string{"1x1: the run cannot tell lua from fine (lua/fine 4.00× over 1 round)",
				"Verdict: the run cannot tell", "(-rounds 5)"},
		},
		{
			name:         "miniredis: the illustrative line, no verdict",
			illustrative: true,
			rows: []Row{
				sliced(five, market.Fine, 30_000, 0, 0, 1_000, 1_000, 1_000),
				sliced(five, market.Lua, 60_000, 0, 0, 6_000, 6_000, 6_000),
			},
			want: []string{"illustrative only, and no verdict is drawn from them"},
			not:  []string{"Verdict", "bought most", "cannot tell"},
		},
		{
			name: "nothing bought",
			rows: []Row{cell(one, market.Fine, 10, 0, 0, 0)},
			none: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines := Reading(Document{Rows: tt.rows, Illustrative: tt.illustrative, DurationS: 10})
			if tt.none {
				if lines != nil {
					t.Fatalf("reading %q, want none", lines)
				}
				return
			}
			for _, l := range lines {
				if n := len([]rune(l)); n > output.Width {
					t.Errorf("line of %d characters: %q", n, l)
				}
			}
			text := strings.Join(lines, " ")
			at := 0
			for _, w := range tt.want {
				i := strings.Index(text[at:], w)
				if i < 0 {
					t.Fatalf("reading lacks %q after offset %d:\n%s", w, at, strings.Join(lines, "\n"))
				}
				at += i + len(w)
			}
			for _, n := range tt.not {
				if strings.Contains(text, n) {
					t.Errorf("reading has %q:\n%s", n, strings.Join(lines, "\n"))
				}
			}
		})
	}
}

func TestReadingEndsTheTables(t *testing.T) {
	doc := sample()
	for _, format := range []string{"table", "markdown"} {
		var b strings.Builder
		if err := Render(&b, format, doc, false); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		i := strings.Index(out, "Reading:")
		if i < 0 || !strings.Contains(out[i:], "Verdict: ") {
			t.Errorf("%s has no reading ending in a verdict:\n%s", format, out)
		}
	}
}
