package targets

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/internal/timeline"
)

// TestStepsAndTimelineAgree: the steps of a schedule and its timeline name
// locking.Mutex's release script alike ("release"), read by one decoder.
func TestStepsAndTimelineAgree(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	target, err := Recipe("6", false)
	if err != nil {
		t.Fatal(err)
	}
	m := action.DefaultModel()
	m.Faults, m.FaultKinds = 0, nil
	e, err := sched.NewExplorer(ctx, b.Client, target, m)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	start := []action.Action{{Kind: action.Start, Client: "A"}}
	steps, _, err := e.Replay(ctx, start)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(
		steps,
		func(s action.Step) bool { return s.Action.Command == "EVAL release lock:L" },
	) {
		t.Errorf("no step EVAL release lock:L in %v", steps)
	}
	tl, _, err := e.Record(ctx, start)
	if err != nil {
		t.Fatal(err)
	}
	if i := tl.Follow(
		timeline.Pattern{Client: "A", Kind: timeline.Command, Detail: "‹release›"},
		timeline.Pattern{Client: "A", Kind: timeline.Release, Detail: "release script"}); i >= 0 {
		var ev []string
		for _, x := range tl.Events {
			ev = append(ev, string(x.Kind)+" "+x.Detail)
		}
		t.Errorf("the timeline lacks pattern %d: %s", i, strings.Join(ev, " | "))
	}
}
