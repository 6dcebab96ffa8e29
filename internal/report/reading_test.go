package report

import (
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/latency"
	"github.com/lockmarket/lockmarket/internal/schema"
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

func TestReading(t *testing.T) {
	one, five := sim.Scenario{Listers: 1, Buyers: 1}, sim.Scenario{Listers: 5, Buyers: 5}
	tests := []struct {
		name string
		rows []Row
		want []string // substrings of the reading, in order
		none bool
	}{
		{
			name: "watch keeps up, then falls behind as λ·w grows",
			rows: []Row{
				cell(one, market.Watch, 20_000, 20_000, 2_000, 50*time.Microsecond),
				cell(one, market.Fine, 18_000, 18_000, 0, 0),
				cell(one, market.Lua, 40_000, 40_000, 0, 0),
				cell(five, market.Watch, 50_000, 5_000, 40_000, 200*time.Microsecond),
				cell(five, market.Coarse, 12_000, 12_000, 0, 0),
				cell(five, market.Fine, 30_000, 25_000, 0, 0),
				cell(five, market.Lua, 60_000, 55_000, 0, 0),
			},
			want: []string{
				"1x1: lua bought most (4,000/s, watch 2,000, fine 1,800).",
				// λ = (20,000 + 0)/10 s = 2,000/s; w = 50 µs; λ·w = 0.1.
				"watch: 0.10 retries per purchase; 2,000 writes/s", "(λ) and a 50µs window (w) give λ·w = 0.10",
				"expects 90% of EXECs to commit, 91% did.",
				"5x5: lua bought most (5,500/s, watch 500, coarse 1,200, fine 2,500).",
				// λ = (50,000 + 5,000·4/5)/10 s = 5,400/s; λ·w = 1.08.
				"watch: 8.00 retries per purchase; 5,400 writes/s", "give λ·w = 1.08", "expects 34%", "11% did.",
				"Verdict: lua bought most in 2 of 2 scenarios, so use it wherever the logic fits a script;",
				"WATCH where it kept up (1x1 watch/fine 1.11× at λ·w 0.10), a lock (fine) where λ·w grew",
				"(5x5 watch/fine 0.20× at λ·w 1.08).",
			},
		},
		{
			name: "a lock beats watch everywhere",
			rows: []Row{
				cell(five, market.Watch, 50_000, 100, 30_000, time.Millisecond),
				cell(five, market.Coarse, 12_000, 3_000, 0, 0),
			},
			want: []string{"5x5: coarse bought most (300/s, watch 10).",
				"Verdict: coarse bought most in 1 of 1 scenarios; a lock (coarse) beat WATCH everywhere",
				"(5x5 watch/coarse 0.03× at λ·w 5.01)"},
		},
		{
			name: "a tenth behind is keeping up",
			rows: []Row{
				cell(one, market.Watch, 10_000, 9_500, 1_000, 50*time.Microsecond),
				cell(one, market.Fine, 10_000, 10_000, 0, 0),
			},
			want: []string{"Verdict: fine bought most in 1 of 1 scenarios; WATCH kept up with the locks everywhere",
				"(1x1 watch/fine 0.95× at λ·w"},
		},
		{
			name: "no watch",
			rows: []Row{cell(one, market.Fine, 10, 10, 0, 0), cell(one, market.Lua, 20, 20, 0, 0)},
			want: []string{"1x1: lua bought most (2/s, fine 1).", "Verdict: lua bought most in 1 of 1 scenarios, so use it wherever the logic fits a script."},
		},
		{
			name: "nothing bought",
			rows: []Row{cell(one, market.Fine, 10, 0, 0, 0)},
			none: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines := Reading(Document{Rows: tt.rows})
			if tt.none {
				if lines != nil {
					t.Fatalf("reading %q, want none", lines)
				}
				return
			}
			for _, l := range lines {
				if n := len([]rune(l)); n > schema.Width {
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
