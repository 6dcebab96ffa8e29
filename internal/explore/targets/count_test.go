package targets

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/testsupport/race"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/redis/go-redis/v9"
)

// pingLock is a lock that is always free: taking it sends pings[client]
// PINGs (commands on no key), releasing it sends nothing.
type pingLock struct {
	rdb   redis.UniversalClient
	pings int
}

type pingHeld struct{}

func (l pingLock) Acquire(ctx context.Context, _ bool) (sched.Held, error) {
	for range l.pings {
		if err := l.rdb.Ping(ctx).Err(); err != nil {
			return nil, err
		}
	}
	return pingHeld{}, nil
}

func (pingHeld) Release(context.Context) error { return nil }

func (pingHeld) Extend(context.Context) error { return nil }

func (pingHeld) End() time.Duration { return -1 }

func binomial(n, k int) int {
	r := 1
	for i := 1; i <= k; i++ {
		r = r * (n - k + i) / i
	}
	return r
}

// TestScheduleCountIsBinomial checks that the search is exhaustive: two
// clients that send a and b commands, with no faults and the reduction
// off, have (a+b choose a) schedules. Each client starts (a step of its
// own), sends its pings, then the critical section's GET and SET.
func TestScheduleCountIsBinomial(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	cases := []struct{ pingsA, pingsB int }{{0, 0}, {1, 0}, {2, 1}, {3, 3}}
	if race.Enabled {
		cases = cases[:3] // the largest in the full run without -race
	}
	for _, tc := range cases {
		pings := []int{tc.pingsA, tc.pingsB}
		target := &sched.Target{
			Name: "pings", Checks: result.Properties(),
			Lock: &sched.Lock{Keys: sched.SingleLockKey, New: func(c *sched.Client) sched.Locker {
				return pingLock{rdb: c.Redis(), pings: pings[c.Index()]}
			}}}
		m := action.DefaultModel()
		m.Faults, m.FaultKinds = 0, nil
		e, err := sched.NewExplorer(ctx, b.Client, target, m)
		if err != nil {
			t.Fatal(err)
		}
		a, bb := tc.pingsA+3, tc.pingsB+3
		res, err := e.Explore(ctx, sched.Options{NoReduction: true})
		if err != nil {
			t.Fatal(err)
		}
		if want := binomial(a+bb, a); res.Schedules != want || !res.Exhaustive || res.Pruned != 0 {
			t.Errorf(
				"%d and %d steps: %d schedules (%d pruned, exhaustive %v), want %d", a, bb,
				res.Schedules, res.Pruned, res.Exhaustive, want,
			)
		}
		par, err := e.Explore(ctx, sched.Options{NoReduction: true, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		if par.Schedules != res.Schedules || !par.Exhaustive {
			t.Errorf(
				"%d and %d steps on two workers: %d schedules (exhaustive %v), want %d", a, bb,
				par.Schedules, par.Exhaustive, res.Schedules,
			)
		}
		// With the reduction, the pings (on no key) commute with
		// everything: fewer schedules, still exhaustive.
		red, err := e.Explore(ctx, sched.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !red.Exhaustive || red.Schedules > res.Schedules ||
			(tc.pingsA+tc.pingsB > 0 && red.Schedules >= res.Schedules) {
			t.Errorf(
				"%d and %d steps, reduced: %d schedules (exhaustive %v), unreduced %d", a, bb,
				red.Schedules, red.Exhaustive, res.Schedules,
			)
		}
		e.Close()
	}
}

// TestWorkersRunTheSameSchedules checks that a search on several workers
// runs the schedules one worker runs, and reports the same result: the
// same counts, and the same counterexample of each property. (With the
// state cache, which the workers share, the counts depend on which
// worker gets where first: TestStateCacheFindsTheSame.)
func TestWorkersRunTheSameSchedules(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	for _, fixed := range []bool{false, true} {
		target, err := Recipe("1", fixed)
		if err != nil {
			t.Fatal(err)
		}
		m := action.DefaultModel()
		m.FaultKinds = []action.Fault{action.FaultCrash}
		var results []*result.Result
		for _, workers := range []int{1, 3} {
			e, err := sched.NewExplorer(ctx, b.Client, target, m)
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.Explore(ctx, sched.Options{Workers: workers, NoStateCache: true})
			e.Close()
			if err != nil {
				t.Fatal(err)
			}
			results = append(results, res)
		}
		one, many := results[0], results[1]
		if one.Schedules != many.Schedules || one.Pruned != many.Pruned || !one.Exhaustive ||
			!many.Exhaustive {
			t.Errorf(
				"%s: one worker %d schedules (+%d pruned, exhaustive %v), three %d (+%d, %v)",
				target.Name, one.Schedules, one.Pruned, one.Exhaustive, many.Schedules, many.Pruned,
				many.Exhaustive,
			)
		}
		if len(one.Violations) != len(many.Violations) || fixed != (len(one.Violations) == 0) {
			t.Fatalf("%s: violations %v and %v", target.Name, one.Violations, many.Violations)
		}
		for i, v := range one.Violations {
			if w := many.Violations[i]; v.Property != w.Property ||
				action.CompareActions(v.Actions, w.Actions) != 0 {
				t.Errorf(
					"%s: %s found as %v by one worker, as %v by three", target.Name, v.Property,
					v.Actions, w.Actions,
				)
			}
		}
	}
}

// TestRandomModes: the random walk and pct find recipe 1's broken mutual
// exclusion, and a seed gives the same schedules again.
func TestRandomModes(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	target, err := Recipe("1", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []sched.Mode{sched.Random, sched.PCT} {
		var first []action.Action
		for run := range 2 {
			e, err := sched.NewExplorer(ctx, b.Client, target, action.DefaultModel())
			if err != nil {
				t.Fatal(err)
			}
			res, err := e.Explore(
				ctx,
				sched.Options{
					Mode:      mode,
					Seed:      3,
					Schedules: 200,
					Stop:      []string{result.MutualExclusion},
					NoShrink:  true,
				},
			)
			e.Close()
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Violations) == 0 || res.Violations[0].Property != result.MutualExclusion ||
				res.Exhaustive {
				t.Fatalf("%s: violations %v, exhaustive %v", mode, res.Violations, res.Exhaustive)
			}
			if run == 0 {
				first = res.Violations[0].Actions
			} else if action.CompareActions(first, res.Violations[0].Actions) != 0 {
				t.Errorf("%s, seed 3 twice: %v, then %v", mode, first, res.Violations[0].Actions)
			}
		}
	}
}

// TestStateCacheFindsTheSame: with the state cache, an exhaustive search
// runs no more schedules and finds the same properties broken as without
// it, for flawed recipes and their fixes, on one worker and on three.
func TestStateCacheFindsTheSame(t *testing.T) {
	if testing.Short() {
		t.Skip("six targets searched three times each, exhaustively: in the full run")
	}
	b := redistest.Real(t)
	ctx := context.Background()
	// Recipe 4 is the one whose violation needs a client that started
	// before a pause and sent its first command after it: its lease is
	// reckoned from its start (a reading of the clock that the state
	// must hold).
	cases := []struct {
		n     string
		fixed bool
	}{{"1", false}, {"1", true}, {"4", false}, {"6", false}}
	if race.Enabled {
		cases = []struct {
			n     string
			fixed bool
		}{{"1", false}, {"1", true}} // recipes 4 and 6 in the full run without -race
	}
	for _, tc := range cases {
		{
			n, fixed := tc.n, tc.fixed
			target, err := Recipe(n, fixed)
			if err != nil {
				t.Fatal(err)
			}
			m := action.DefaultModel()
			m.FaultKinds = []action.Fault{action.FaultPauseLong}
			m.Ticks = 1 // the pause's end: every violation here needs no more
			m.Steps = 4 // take, read, write, release
			var broken []string
			var counts []int
			opts := []sched.Options{{NoStateCache: true}, {}, {Workers: 3}}
			if n == "4" {
				opts = opts[:2] // three clients: the longest search here
			}
			for _, o := range opts {
				o.NoShrink = true
				e, err := sched.NewExplorer(ctx, b.Client, target, m)
				if err != nil {
					t.Fatal(err)
				}
				res, err := e.Explore(ctx, o)
				e.Close()
				if err != nil {
					t.Fatal(err)
				}
				var props []string
				for _, v := range res.Violations {
					props = append(props, v.Property)
				}
				got := fmt.Sprint(props)
				if broken == nil {
					broken = []string{got}
				} else if got != broken[0] {
					t.Errorf("%s, %+v: broken %s, without the cache "+
						"%s", target.Name, o, got, broken[0])
				}
				if !res.Exhaustive {
					t.Errorf("%s, %+v: not exhaustive", target.Name, o)
				}
				counts = append(counts, res.Schedules)
			}
			if counts[1] > counts[0] {
				t.Errorf(
					"%s: %d schedules with the cache, %d without", target.Name, counts[1],
					counts[0],
				)
			}
			t.Logf(
				"%s: broken %s; schedules without the cache, with it (and on three workers): %v",
				target.Name, broken[0], counts,
			)
		}
	}
}

// TestSameSearchSameCounts: one search, run three times on one worker,
// visits as many schedules and cuts as many, whatever the machine's
// timing. The watchdog's target has two goroutines per client (the
// critical section and the watchdog) whose moves within one step
// interleave as real time has it, and a sleep whose context may end
// just before it or just after: neither may shape the search.
func TestSameSearchSameCounts(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	m := action.DefaultModel()
	m.FaultKinds = []action.Fault{action.FaultCrash}
	m.MaxDelay = time.Second
	var counts []string
	for range 3 {
		e, err := sched.NewExplorer(ctx, b.Client, Watchdog(false), m)
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Explore(ctx, sched.Options{Workers: 1})
		e.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !res.Exhaustive || len(res.Violations) > 0 || res.Diverged > 0 {
			t.Fatalf(
				"exhaustive %v, violations %v, %d diverged; want a clean, exhaustive search",
				res.Exhaustive, res.Violations, res.Diverged,
			)
		}
		counts = append(counts, fmt.Sprintf("%d schedules (+%d pruned)", res.Schedules, res.Pruned))
	}
	if counts[0] != counts[1] || counts[0] != counts[2] {
		t.Errorf("three runs of one search: %v", counts)
	}
}
