package faults

import (
	"context"
	"errors"
	"strings"
	"testing"

	tl "github.com/lockmarket/lockmarket/internal/timeline"
)

// TestTrace checks the recorded timeline of the pause faults in real
// time: unfenced, alice takes the lock, is paused, her lease runs out, bob
// takes it and commits, alice commits after him (marked) and the checkers
// find the relic sold twice; fenced, alice's commit is refused; under WATCH
// and Lua her commit is refused too.
//
// Only cases whose outcome does not depend on the machine's speed are
// here: alice's pause is a sleep longer than her lease (a sleep lasts at
// least what it asks), and bob buys while she is paused with a second of
// lease and of pause to spare. A watchdog's renewals race her lease's end
// on a loaded machine, so the watchdog's lesson (bob waits) is checked on
// the explorer's virtual clock instead: TestTraceVirtual.
func TestTrace(t *testing.T) {
	skipShort(t, "its pauses take real time; TestTraceVirtual checks the same lessons on the virtual clock")
	t.Parallel() // servers of its own
	cfg := pauseConfig(testConfig(t))
	soldTwice := []tl.Pattern{
		{Client: laneAlice, Kind: tl.Acquire, Detail: "lock:item:relic.seller"},
		{Client: laneAlice, Kind: tl.PauseStart},
		{Client: laneAlice, Kind: tl.LeaseExpired, Detail: "TTL passed"},
		{Client: laneBob, Kind: tl.Acquire, Clean: true},
		{Client: laneBob, Kind: tl.Commit, Clean: true, Detail: "relic into bob's inventory"},
		{Client: laneAlice, Kind: tl.Commit, Violation: true, Detail: "relic into alice's inventory"},
		{Kind: tl.Finding, Violation: true, Detail: "bought 2 times"},
	}
	refused := []tl.Pattern{
		{Client: laneAlice, Kind: tl.Acquire},
		{Client: laneAlice, Kind: tl.PauseStart},
		{Client: laneAlice, Kind: tl.LeaseExpired},
		{Client: laneBob, Kind: tl.Commit, Clean: true},
		{Client: laneAlice, Kind: tl.CommitRefused, Detail: "EXEC aborted"},
		{Client: laneAlice, Kind: tl.Result, Detail: "lock was lost"},
		{Kind: tl.Finding, Clean: true, Detail: "no violation"},
	}
	cases := []struct {
		f     Fault
		v     Variant
		steps []tl.Pattern
	}{
		{Pause, "fine", soldTwice},
		{PauseProcess, "fine", soldTwice},
		{Pause, "fine" + FencedSuffix, refused},
		{PauseProcess, "fine" + FencedSuffix, refused},
		{Pause, "watch", []tl.Pattern{
			{Client: laneAlice, Kind: tl.PauseStart},
			{Client: laneBob, Kind: tl.Commit},
			{Client: laneAlice, Kind: tl.CommitRefused, Detail: "EXEC aborted: a watched key changed (WATCH market:"},
		}},
		{Pause, "lua", []tl.Pattern{
			{Client: laneAlice, Kind: tl.PauseStart},
			{Client: laneBob, Kind: tl.Commit, Detail: "script applied"},
			{Client: laneAlice, Kind: tl.CommitRefused, Detail: "listing_not_found"},
		}},
	}
	type traced struct {
		timeline tl.Timeline
		res      Result
		err      error
	}
	got := make([]traced, len(cases))
	sideBySide(len(cases), pausesAtOnce, func(i int) {
		got[i].timeline, got[i].res, got[i].err = Trace(context.Background(), cases[i].f, cases[i].v, cfg)
	})
	for i, tc := range cases {
		t.Run(string(tc.f)+"/"+string(tc.v), func(t *testing.T) {
			timeline, res, err := got[i].timeline, got[i].res, got[i].err
			if err != nil {
				t.Fatal(err)
			}
			if k := timeline.Follow(tc.steps...); k >= 0 {
				var out strings.Builder
				timeline.Text(&out, 100, true)
				t.Fatalf("step %d (%v) not found in order:\n%s", k, tc.steps[k], out.String())
			}
			if timeline.Violations != res.Violations() {
				t.Errorf("timeline counts %d violations, the trial %d", timeline.Violations, res.Violations())
			}
			if correct(tc.v) && len(timeline.Marked()) > 0 {
				t.Errorf("%s marks %v", tc.v, timeline.Marked())
			}
		})
	}
	if _, _, err := Trace(context.Background(), Stall, "fine", cfg); !errors.Is(err, ErrNotTraceable) {
		t.Errorf("tracing a stall: %v, want ErrNotTraceable", err)
	}
	if _, _, err := Trace(context.Background(), Pause, "mutex", cfg); !errors.Is(err, ErrConfig) {
		t.Errorf("tracing pause/mutex: %v, want ErrConfig", err)
	}
}
