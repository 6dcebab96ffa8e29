package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/step"
	"github.com/lockmarket/lockmarket/internal/explore/targets"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"

	tl "github.com/lockmarket/lockmarket/internal/timeline"
)

// move is one step of a schedule played by hand: the first enabled action
// of kind by client whose command (Run) or length (Pause) contains what;
// for a Tick, the earliest one.
type move struct{ kind, client, what string }

func (m move) pick(en []action.Action) (action.Action, bool) {
	for _, a := range en {
		if a.Kind != m.kind || (m.client != "" && a.Client != m.client) {
			continue
		}
		if (a.Kind == action.Run && !strings.Contains(a.Command, m.what)) ||
			(a.Kind == action.Pause && a.Length != m.what) {
			continue
		}
		return a, true
	}
	return action.Action{}, false
}

// Moves of the generic workload: A and B each take the lock, read the
// counter (the listing), write it back plus one (the commit) and release.
var (
	startA   = move{action.Start, "A", ""}
	startB   = move{action.Start, "B", ""}
	acquireA = move{action.Run, "A", "SET EX NX"}
	acquireB = move{action.Run, "B", "SET EX NX"}
	readA    = move{action.Run, "A", "GET counter"}
	readB    = move{action.Run, "B", "GET counter"}
	commitB  = move{action.Run, "B", "counter"} // after readB: the write
	watchA   = move{action.Run, "A", "WATCH"}
	watchB   = move{action.Run, "B", "WATCH"}
	releaseB = move{action.Run, "B", "EVAL"}
	renewA   = move{action.Run, "A", "EVAL"} // the watchdog's renewal while A's commit waits
	tick     = move{action.Tick, "", ""}
)

// play steps through moves on e (each must be enabled at its turn) and
// records the schedule, run to its end with the first enabled command or
// tick at each step, as a timeline.
func play(t *testing.T, e *sched.Explorer, moves []move) (tl.Timeline, []result.Violation) {
	t.Helper()
	ctx := context.Background()
	var plan []action.Action
	for i, m := range moves {
		snap, err := step.Cut(ctx, e, plan)
		if err != nil {
			t.Fatal(err)
		}
		a, ok := m.pick(snap.Enabled)
		if !ok {
			t.Fatalf("move %d %+v: not among %v", i, m, snap.Enabled)
		}
		plan = append(plan, a)
	}
	timeline, violations, err := e.Record(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	return timeline, violations
}

// TestTraceVirtual replays the pause faults' schedules on the explorer's
// virtual clock, so that when a lease runs out and when a watchdog renews
// it is the schedule's choice, not the machine's speed: the lessons that
// TestTrace (real time) cannot check without racing timers.
//
// A is alice: she takes the lease lock (locking.Mutex, as the fine
// strategies do), reads, and stops before her commit; B is bob. Unfenced,
// a pause past the lease lets B take the lock and commit, and A's commit
// lands after his (the update is lost: the relic sold twice); fenced, A's
// commit is refused. With a watchdog, A's worker held at her commit while
// her process lives (TestTrace's in-process pause) has her lease renewed
// past its first end, so B's attempts fail and the two updates are
// serialised; a pause of the whole process (the watchdog frozen with it)
// shorter than the lease less the watchdog's margin keeps the lock too,
// and one past the lease loses the update again.
func TestTraceVirtual(t *testing.T) {
	b := redistest.Real(t)
	unfenced, err := targets.Recipe("6", false)
	if err != nil {
		t.Fatal(err)
	}
	fenced, err := targets.Recipe("6", true)
	if err != nil {
		t.Fatal(err)
	}
	// A's pause past her lease: the clock runs to its end, then B buys.
	pastLease := []move{startA, acquireA, readA, {action.Pause, "A", action.Long}, tick,
		startB, acquireB, readB, commitB, releaseB}
	fencedPastLease := []move{
		startA, acquireA, watchA, readA, {action.Pause, "A", action.Long}, tick,
		startB, acquireB, watchB, readB, commitB}
	soldTwice := []tl.Pattern{
		{Client: "A", Kind: tl.Acquire},
		{Client: "A", Kind: tl.PauseStart},
		{Kind: tl.LeaseExpired},
		{Client: "B", Kind: tl.Acquire, Clean: true},
		{Client: "B", Kind: tl.Result, Detail: "SET counter → OK"},
		{Client: "A", Kind: tl.Result, Detail: "SET counter → OK"},
		{Kind: tl.Finding, Violation: true, Detail: "resource: lost update"},
	}
	noViolation := tl.Pattern{Kind: tl.Finding, Clean: true, Detail: "no violation"}
	for _, tc := range []struct {
		name   string
		target *sched.Target
		moves  []move
		steps  []tl.Pattern
		broken bool // the resource's update is lost
		kept   bool // A's lease never runs out
	}{
		{"unfenced", unfenced, pastLease, soldTwice, true, false},
		{"fenced", fenced, fencedPastLease, []tl.Pattern{
			{Client: "A", Kind: tl.PauseStart},
			{Kind: tl.LeaseExpired},
			{Client: "B", Kind: tl.Acquire},
			{Client: "B", Kind: tl.Result, Detail: "EXEC → QUEUED, OK"},
			{Client: "A", Kind: tl.Result, Detail: "EXEC → error: aborted"},
			noViolation,
		}, false, false},
		// A's commit waits while the clock passes four renewal
		// intervals: the lease she took ran to 3 s, the watchdog's
		// renewals carry it past; B tries at 4 s and fails.
		{"watchdog/worker-held", targets.Watchdog(false), []move{startA, acquireA, readA,
			tick, renewA, tick, renewA, tick, renewA, tick, renewA, startB, acquireB}, []tl.Pattern{
			{Client: "A", Kind: tl.Acquire},
			{Client: "A", Kind: tl.LeaseStart, Detail: "extend"},
			{Client: "A", Kind: tl.LeaseStart, Detail: "extend"},
			{Client: "A", Kind: tl.LeaseStart, Detail: "extend"},
			{Client: "A", Kind: tl.LeaseStart, Detail: "extend"},
			{Client: "B", Kind: tl.AcquireFailed, Detail: "held by A"},
			{Client: "A", Kind: tl.Result, Detail: "SET counter → OK"},
			{Client: "B", Kind: tl.Acquire},
			{Client: "B", Kind: tl.Result, Detail: "GET counter → 1"},
			noViolation,
		}, false, true},
		// The whole process paused for half a lease, its watchdog with
		// it: the lease still runs, B waits.
		{"watchdog/process-paused-short", targets.Watchdog(false), []move{startA, acquireA, readA,
			{action.Pause, "A", action.Short}, startB, acquireB}, []tl.Pattern{
			{Client: "A", Kind: tl.Acquire},
			{Client: "A", Kind: tl.PauseStart},
			{Client: "B", Kind: tl.AcquireFailed, Detail: "held by A"},
			{Client: "A", Kind: tl.Result, Detail: "SET counter → OK"},
			noViolation,
		}, false, true},
		// Paused past the lease, the watchdog frozen too: sold twice.
		{"watchdog/process-paused-long", targets.Watchdog(false), pastLease, soldTwice, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := action.DefaultModel()
			m.Clients, m.TTL, m.Ticks, m.Attempts = 2, 3*time.Second, 10, 2
			e, err := sched.NewExplorer(context.Background(), b.Client, tc.target, m)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			timeline, violations := play(t, e, tc.moves)
			var out strings.Builder
			timeline.Text(&out, 100, true)
			if k := timeline.Follow(tc.steps...); k >= 0 {
				t.Fatalf("step %d (%v) not found in order:\n%s", k, tc.steps[k], out.String())
			}
			if broken := len(violations) > 0; broken != tc.broken {
				t.Errorf("violations %+v, want broken %v:\n%s", violations, tc.broken, out.String())
			}
			if !tc.kept {
				return
			}
			// B's failed attempts came while A's lease, renewed or not,
			// still ran; it never ran out.
			for _, ev := range timeline.Events {
				if ev.Kind == tl.LeaseExpired {
					t.Errorf("a lease ran out at %v:\n%s", ev.At, out.String())
				}
			}
		})
	}
}
