package targets_test

import (
	"slices"
	"testing"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/targets"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// TestStrategyTargets: under a pause past the lease, the fine and the
// coarse lock without fencing sell a listing twice though no two buyers
// ever hold the lock at once (found with the buyers' symmetry, and
// reproduced); fenced, and under Lua, every schedule keeps the market's
// invariants.
func TestStrategyTargets(t *testing.T) {
	b := redistest.Real(t)
	m := action.DefaultModel()
	m.FaultKinds = []action.Fault{action.FaultPauseLong}
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
		{market.Coarse, false, true},
		{market.Fine, true, false},
		{market.Lua, false, false},
	} {
		tg, err := targets.Strategy(tc.s, tc.fencing)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(tg.Name, func(t *testing.T) {
			res, broken := search(t, b.Client, tg, m, sched.Options{Workers: 2})
			if tc.s != market.Lua && !slices.Contains(res.Checked, result.MutualExclusion) {
				t.Errorf("checked %v: the fine lock's mutual exclusion is not checked", res.Checked)
			}
			if tc.broken {
				// Every schedule searched: the lock keeps mutual exclusion,
				// the resource breaks all the same (no fencing).
				if !slices.Equal(broken, []string{result.Resource}) || !res.Exhaustive {
					t.Fatalf(
						"broken %v (exhaustive %v), want resource alone", broken, res.Exhaustive,
					)
				}
				t.Logf("%s", res.Violations[0].Message)
				return
			}
			if len(broken) > 0 || !res.Exhaustive || res.Schedules == 0 {
				t.Errorf(
					"broken %v, exhaustive %v, %d schedules; want nothing broken, exhaustively",
					broken, res.Exhaustive, res.Schedules,
				)
			}
		})
	}
}

func TestStrategyUnknown(t *testing.T) {
	if _, err := targets.Strategy("nope", false); err == nil {
		t.Error("Strategy(nope): no error")
	}
}

// TestMarketSetUpOnce checks that the market, set up once and restored
// (Workload.PrepareOnce) before every other schedule, is searched as when
// it is set up before each: the same schedules, the same cuts, the same
// verdict, with the fine lock unfenced (broken) and fenced (kept).
func TestMarketSetUpOnce(t *testing.T) {
	b := redistest.Real(t)
	m := action.DefaultModel()
	m.FaultKinds = []action.Fault{action.FaultPauseLong}
	m.Clients = 2
	m.Ticks = 1
	for _, fencing := range []bool{false, true} {
		tg, err := targets.Strategy(market.Fine, fencing)
		if err != nil {
			t.Fatal(err)
		}
		if !tg.Workload.PrepareOnce {
			t.Fatalf("%s: set up before every schedule", tg.Name)
		}
		t.Run(tg.Name, func(t *testing.T) {
			once, brokenOnce := search(t, b.Client, tg, m, sched.Options{Workers: 1})
			each := *tg
			each.Workload.PrepareOnce = false
			every, brokenEvery := search(t, b.Client, &each, m, sched.Options{Workers: 1})
			if once.Schedules != every.Schedules || once.Pruned != every.Pruned ||
				once.Exhaustive != every.Exhaustive || !slices.Equal(brokenOnce, brokenEvery) {
				t.Errorf("set up once: %d schedules (+%d cut), exhaustive %v, broken %v; "+
					"before each: %d (+%d), %v, %v", once.Schedules, once.Pruned,
					once.Exhaustive, brokenOnce, every.Schedules, every.Pruned, every.Exhaustive,
					brokenEvery)
			}
			if want := !fencing; (len(brokenOnce) > 0) != want || !once.Exhaustive {
				t.Errorf("broken %v, exhaustive %v: want broken %v, exhaustively", brokenOnce,
					once.Exhaustive, want)
			}
		})
	}
}
