package targets_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/targets"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/internal/timeline"
)

// redlockModel is the bounds of the Redlock tests: one attempt at the
// lock per client and no advance of the clock (one makes the search ten
// times longer and finds nothing more), with faults of the given kinds,
// one per schedule.
func redlockModel(faults ...action.Fault) action.Model {
	m := action.DefaultModel()
	m.Attempts, m.Ticks = 1, 0
	m.FaultKinds = faults
	if len(faults) == 0 {
		m.Faults = 0
	}
	return m
}

// TestRedlockHolds: without node faults, every schedule of two clients
// on three nodes keeps mutual exclusion.
func TestRedlockHolds(t *testing.T) {
	// an exhaustive search of ~5 s (10 s with -race): the full run has it
	redistest.SkipShort(t, redistest.NeedServer)
	b := redistest.Real(t)
	tg, err := targets.Redlock(3)
	if err != nil {
		t.Fatal(err)
	}
	res, broken := search(t, b.Client, tg, redlockModel(), sched.Options{})
	if len(broken) > 0 || !res.Exhaustive || res.Schedules == 0 {
		t.Errorf(
			"broken %v, exhaustive %v, %d schedules; want nothing broken, exhaustively", broken,
			res.Exhaustive, res.Schedules,
		)
	}
}

// TestRedlockNodeFaults: a node that restarts empty, or whose clock jumps
// forward, lets two clients each hold a majority. The explorer finds it
// from the code alone, shortens it, and it replays on a fresh
// redis-server.
func TestRedlockNodeFaults(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		nodes  int
		faults []action.Fault
		jump   time.Duration
		kind   string // the fault the counterexample must hold
		say    string // what its timeline says of the fault
	}{
		{"restart", 3, []action.Fault{action.FaultNodeRestart}, 0, action.Restart,
			"restarts empty"},
		{"restart of one of " +
			"five", 5, []action.Fault{action.FaultNodeRestart}, 0, action.Restart,
			"restarts empty"},
		{"clock jump", 3, []action.Fault{action.FaultClockJump}, 0, action.Jump,
			"clock jumps 10s forward"},
		// A jump of less than a lease breaks it once time passes: here a
		// pause of half a lease, whose end advances the clock, and the
		// lease on the jumped node runs out at that tick (ticks shorten
		// the leases on every node).
		{"short clock jump and a " +
			"pause", 3, []action.Fault{action.FaultClockJump, action.FaultPauseShort},
			6 * time.Second,
			action.Jump, "clock jumps 6s forward"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg, err := targets.Redlock(tc.nodes)
			if err != nil {
				t.Fatal(err)
			}
			m := redlockModel(tc.faults...)
			m.Faults = len(tc.faults)
			m.Ticks = len(tc.faults) - 1
			m.Jump = tc.jump
			e, err := sched.NewExplorer(ctx, b.Client, tg, m)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			res, err := e.Explore(ctx, sched.Options{Stop: []string{result.MutualExclusion}})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Violations) != 1 || res.Violations[0].Property != result.MutualExclusion {
				t.Fatalf("violations %+v, want mutual_exclusion", res.Violations)
			}
			f := res.Violations[0]
			t.Logf("%d schedules; %s (%d steps)", res.Schedules, f.Message, len(f.Steps))
			for _, s := range f.Steps {
				t.Logf("  %-8s %-2s %s", action.FormatMS(s.ClockMS), s.Action.Client, s.Text)
			}
			if !slices.ContainsFunc(
				f.Actions,
				func(a action.Action) bool { return a.Kind == tc.kind },
			) {
				t.Errorf("the counterexample has no %s", tc.kind)
			}
			rep, err := sched.Reproduce(ctx, e.Target(), e.Model(), f)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Reproduced || rep.Server == "" {
				t.Fatalf("not reproduced: %+v", rep)
			}
			// The fault in the node's lane, a holder's lease lost, the
			// finding.
			found := timeline.Pattern{
				Client: timeline.Checker, Kind: timeline.Finding, Detail: result.MutualExclusion,
			}
			if i := rep.Timeline.Follow(timeline.Pattern{Kind: timeline.Result, Detail: tc.say},
				timeline.Pattern{Kind: timeline.LeaseExpired}, found); i >= 0 {
				var buf strings.Builder
				rep.Timeline.Text(&buf, 100, true)
				t.Errorf(
					"the timeline lacks step %d of: the fault (%q), a lease lost, the finding:\n%s",
					i, tc.say, buf.String(),
				)
			}
		})
	}
}

// TestNodeFaultsNeedNodes: a node fault on a target of one server is an
// error, not a fault that never strikes.
func TestNodeFaultsNeedNodes(t *testing.T) {
	b := redistest.Mini(t)
	tg, _ := targets.Recipe("1", true)
	m := action.DefaultModel()
	m.FaultKinds = []action.Fault{action.FaultNodeRestart}
	if e, err := sched.NewExplorer(context.Background(), b.Client, tg, m); err == nil {
		e.Close()
		t.Error("node-restart on recipe 1 fixed: no error")
	}
	if _, err := targets.Redlock(0); err == nil {
		t.Error("Redlock(0): no error")
	}
	fs, err := action.ParseFaults("node-restart,clock-jump,crash")
	if err != nil ||
		!slices.Equal(
			fs,
			[]action.Fault{action.FaultNodeRestart, action.FaultClockJump, action.FaultCrash},
		) {
		t.Errorf("ParseFaults: %v, %v", fs, err)
	}
	if _, err := action.ParseFaults("node-crash"); err == nil {
		t.Error("ParseFaults(node-crash): no error")
	}
}
