package targets

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestBudget: a search whose budget runs out returns what it has, not an
// error, and says why it stopped.
func TestBudget(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	tg, err := Recipe("4", true)
	if err != nil {
		t.Fatal(err)
	}
	e, err := sched.NewExplorer(ctx, b.Client, tg, action.DefaultModel())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res, err := e.Explore(ctx, sched.Options{Budget: time.Nanosecond, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != result.StoppedBudget || res.Exhaustive || len(res.Violations) > 0 {
		t.Errorf(
			"stopped %q, exhaustive %v, %d violations; want budget, false, 0", res.Stopped,
			res.Exhaustive, len(res.Violations),
		)
	}
}

// TestInterruptKeepsWhatWasFound: random walks of recipe 1 break mutual
// exclusion (and liveness) in the first schedules and go on; the search's context ends
// after 40 advances of the clock. The result holds the violation, shortened
// and replayed on a fresh server, and says the search was interrupted.
func TestInterruptKeepsWhatWasFound(t *testing.T) {
	b := redistest.Real(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tg, err := Recipe("1", false)
	if err != nil {
		t.Fatal(err)
	}
	e, err := sched.NewExplorer(ctx, b.Client, tg, action.DefaultModel())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ticks := 0
	e.Stall = func(time.Duration) {
		if ticks++; ticks == 40 {
			cancel()
		}
	}
	res, err := e.Explore(ctx, sched.Options{Mode: "random", Seed: 1, Schedules: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != result.StoppedInterrupted || res.Exhaustive || ticks < 40 {
		t.Fatalf(
			"stopped %q, exhaustive %v after %d ticks; want interrupted, false, 40", res.Stopped,
			res.Exhaustive, ticks,
		)
	}
	var broken []string
	for _, f := range res.Violations {
		broken = append(broken, f.Property)
		if !f.Reproduced || f.Server == "" {
			t.Errorf(
				"%s: reproduced %v on %q, want true on a redis-server", f.Property, f.Reproduced,
				f.Server,
			)
		}
	}
	if !slices.Contains(broken, result.MutualExclusion) {
		t.Errorf("broken %v, want mutual_exclusion among them", broken)
	}
}

// TestUnsteadyIsNotAViolation: a violation that the search saw but that
// its schedule does not break again, on a fresh server, twice, is
// reported apart (Unsteady) and not as a violation. The target's end
// check says "broken" only the first time it is called.
func TestUnsteadyIsNotAViolation(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	var checks atomic.Int64
	target := &sched.Target{
		Name: "once", Checks: []string{result.Resource},
		Workload: sched.Workload{Run: func(ctx context.Context, c *sched.Client) error {
			return c.Redis().Incr(ctx, c.Prefix()+sched.CounterKey).Err()
		},
			End: func(
				context.Context, *sched.Explorer, sched.Snapshot,
			) ([]result.Violation, error) {
				if checks.Add(1) == 1 {
					v := result.Violation{Property: result.Resource, Message: "seen once"}
					return []result.Violation{v}, nil
				}
				return nil, nil
			}}}
	e, err := sched.NewExplorer(ctx, b.Client, target, action.DefaultModel())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res, err := e.Explore(ctx, sched.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Violations) != 0 || len(res.Unsteady) != 1 {
		t.Fatalf("violations %+v, unsteady %+v; want none and one", res.Violations, res.Unsteady)
	}
	u := res.Unsteady[0]
	if u.Property != result.Resource || u.Reproduced ||
		!strings.Contains(u.ReplayNote, "did not break resource") ||
		len(u.Actions) == 0 {
		t.Errorf("unsteady %+v", u)
	}
	if n := checks.Load(); n < 1+sched.ReplayTries {
		t.Errorf("%d checks: the search's, then %d replays at least", n, sched.ReplayTries)
	}
}

// TestStopReason tells a budget from an interruption, and a search that
// ended by itself from either.
func TestStopReason(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	budget, stop := sched.SearchContext(context.Background(), time.Nanosecond)
	defer stop()
	<-budget.Done()
	live, stop2 := sched.SearchContext(context.Background(), 0)
	defer stop2()
	for _, tc := range []struct {
		ctx  context.Context
		err  error
		want string
	}{
		{live, nil, ""},
		{live, errors.New("x"), ""},
		{budget, nil, ""},
		{budget, context.DeadlineExceeded, result.StoppedBudget},
		{done, context.Canceled, result.StoppedInterrupted},
	} {
		if got := sched.StopReason(tc.ctx, tc.err); got != tc.want {
			t.Errorf("stopReason(%v, %v) = %q, want %q", tc.ctx.Err(), tc.err, got, tc.want)
		}
	}
}
