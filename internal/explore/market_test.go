package explore_test

import (
	"slices"
	"testing"

	"github.com/lockmarket/lockmarket/internal/explore"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// TestStrategyTargets: under a pause past the lease, the fine lock
// without fencing sells a listing twice; fenced, and under Lua, every
// schedule keeps the market's invariants.
func TestStrategyTargets(t *testing.T) {
	b := redistest.Real(t)
	m := explore.DefaultModel()
	m.FaultKinds = []string{explore.FaultPauseLong}
	// Two buyers on one listing (the seller's third client left out) and
	// one advance of the clock, the pause's end: enough to break the fine
	// lock, and a test of seconds.
	m.Clients = 2
	m.Ticks = 1
	for _, tc := range []struct {
		s       market.Strategy
		fencing bool
		broken  bool
	}{
		{market.Fine, false, true},
		{market.Fine, true, false},
		{market.Lua, false, false},
	} {
		tg, err := explore.Strategy(tc.s, tc.fencing)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(tg.Name, func(t *testing.T) {
			o := explore.Options{}
			if tc.broken {
				o.StopAtFirst = true
			}
			res, broken := search(t, b.Client, tg, m, o)
			if tc.broken {
				if !slices.Equal(broken, []string{explore.Resource}) {
					t.Fatalf("broken %v, want resource", broken)
				}
				t.Logf("%s", res.Violations[0].Message)
				return
			}
			if len(broken) > 0 || !res.Exhaustive || res.Schedules == 0 {
				t.Errorf("broken %v, exhaustive %v, %d schedules; want nothing broken, exhaustively",
					broken, res.Exhaustive, res.Schedules)
			}
		})
	}
}

func TestStrategyUnknown(t *testing.T) {
	if _, err := explore.Strategy("nope", false); err == nil {
		t.Error("Strategy(nope): no error")
	}
}
