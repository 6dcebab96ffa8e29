package step_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/step"
	"github.com/lockmarket/lockmarket/internal/explore/targets"
	"github.com/lockmarket/lockmarket/internal/explore/view"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// plan cuts e after each of moves ("kind client", "pause A long", "tick"),
// taking the first enabled action that fits, and returns the last cut.
func plan(t *testing.T, e *sched.Explorer, moves ...string) *step.Snapshot {
	t.Helper()
	ctx := context.Background()
	var actions []action.Action
	snap, err := step.Cut(ctx, e, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range moves {
		f := strings.Fields(m)
		i := slices.IndexFunc(snap.Enabled, func(a action.Action) bool {
			return a.Kind == f[0] && (len(f) < 2 || a.Client == f[1]) &&
				(len(f) < 3 || a.Length == f[2])
		})
		if i < 0 {
			t.Fatalf("%q is not enabled after %v: %v", m, actions, snap.Enabled)
		}
		actions = append(actions, snap.Enabled[i])
		if snap, err = step.Cut(ctx, e, actions); err != nil {
			t.Fatal(err)
		}
	}
	return snap
}

// TestNarrate: recipe 6's lost update, stepped by hand, is said in plain
// words with stable token names; its causal chain names B, whose lease
// ran out, and the write that overwrote A's; the fenced fix refuses the
// late write and says the fence did it; the client views follow.
func TestNarrate(t *testing.T) {
	b := redistest.Mini(t)
	ctx := context.Background()
	open := func(fixed bool) *sched.Explorer {
		tg, err := targets.Recipe("6", fixed)
		if err != nil {
			t.Fatal(err)
		}
		e, err := sched.NewExplorer(ctx, b.Client, tg, action.DefaultModel())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	e := open(false)
	moves := []string{
		"start B",
		"run B",
		"start A",
		"pause A long",
		"tick",
		"run B",
		"run A",
		"run A",
		"run A",
		"run A",
		"run B",
	}
	snap := plan(t, e, moves...)
	if len(snap.Notes) != len(snap.Steps) {
		t.Fatalf("%d notes for %d steps", len(snap.Notes), len(snap.Steps))
	}
	for i, want := range map[int]string{
		1:  "(nil): the lock was free; B now holds it, with token B#1",
		4:  "B's lease on lock:L runs out",
		6:  "A now holds it, with token A#1",
		10: "B wrote counter = 1",
	} {
		if !strings.Contains(snap.Notes[i].Say, want) {
			t.Errorf("step %d says %q, want %q in it", i, snap.Notes[i].Say, want)
		}
	}
	// The same schedule cut again names its tokens the same.
	again := plan(t, e, moves...)
	if !slices.Equal(again.Notes, snap.Notes) {
		t.Errorf("a replay says otherwise:\n%v\n%v", again.Notes, snap.Notes)
	}
	b6 := snap.Views[1]
	if b6.Client != "B" || !b6.Believes || b6.Token != "B#1" || b6.LeaseUntilMS != 10000 ||
		b6.Read != "counter = (nil), so 0" {
		t.Errorf("B's view: %+v", b6)
	}
	snap = plan(t, e, append(moves, "run B")...)
	if len(snap.Chains) != 1 || snap.Chains[0].Property != result.Resource {
		t.Fatalf("chains %+v, want one of the resource", snap.Chains)
	}
	story := snap.Chains[0].Story
	for _, want := range []string{"B took the lock", "B's lease ran out", "A wrote counter = " +
		"1", "B wrote counter = 1 over it"} {
		if !strings.Contains(story, want) {
			t.Errorf("story %q lacks %q", story, want)
		}
	}
	if !slices.IsSortedFunc(
		snap.Chains[0].Links,
		func(a, b view.ChainLink) int { return a.Step - b.Step },
	) {
		t.Errorf("links out of order: %+v", snap.Chains[0].Links)
	}

	f := open(true)
	snap = plan(
		t, f, "start B", "run B", "pause B long", "tick", "start A", "run A", "run A", "run A",
		"run A", "run B", "run B",
	)
	last := snap.Notes[len(snap.Notes)-1]
	if !last.FenceRefused || !strings.Contains(last.Say, "the fence refuses B's write") ||
		!strings.Contains(last.Say, "A#1") {
		t.Errorf("the late write of B: %+v", last)
	}
	if len(snap.Violations) != 0 {
		t.Errorf("violations of the fenced fix: %v", snap.Violations)
	}
}
