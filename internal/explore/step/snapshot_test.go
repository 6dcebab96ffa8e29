package step_test

import (
	"context"
	"errors"
	"testing"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/step"
	"github.com/lockmarket/lockmarket/internal/explore/targets"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// find returns the first enabled action of kind by client, or fails.
func find(t *testing.T, snap *step.Snapshot, kind, client string) action.Action {
	t.Helper()
	for _, a := range snap.Enabled {
		if a.Kind == kind && a.Client == client {
			return a
		}
	}
	t.Fatalf("no %s of %s among %v", kind, client, snap.Enabled)
	return action.Action{}
}

// TestCut steps recipe 1 by hand, as a class would: A and B start, then
// A's GET, B's GET, A's SET, B's SET breaks mutual exclusion at B's SET; cut one step
// earlier it has not broken yet. A counterexample found from a prefix
// starts with the prefix; recipe 6 fenced has none.
func TestCut(t *testing.T) {
	b := redistest.Mini(t)
	ctx := context.Background()
	open := func(recipe string, fixed bool) *sched.Explorer {
		tg, err := targets.Recipe(recipe, fixed)
		if err != nil {
			t.Fatal(err)
		}
		m := action.DefaultModel()
		m.Clients = tg.Clients
		e, err := sched.NewExplorer(ctx, b.Client, tg, m)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	e := open("1", false)
	var plan []action.Action
	snap, err := step.Cut(ctx, e, plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Clients) != 2 || len(snap.Steps) != 0 || len(snap.Enabled) == 0 || snap.Complete {
		t.Fatalf("start: %+v", snap)
	}
	for _, c := range []string{"A", "B"} {
		plan = append(plan, find(t, snap, action.Start, c))
		if snap, err = step.Cut(ctx, e, plan); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []string{"A", "B", "A", "B"} {
		plan = append(plan, find(t, snap, action.Run, c))
		if snap, err = step.Cut(ctx, e, plan); err != nil {
			t.Fatal(err)
		}
	}
	if len(snap.Steps) != 6 || len(snap.Violations) != 1 ||
		snap.Violations[0].Property != result.MutualExclusion ||
		snap.Violations[0].Step != 5 ||
		snap.Steps[5].Violation != result.MutualExclusion {
		t.Fatalf(
			"after A GET, B GET, A SET, B SET: steps %+v, violations %+v", snap.Steps,
			snap.Violations,
		)
	}
	if len(snap.Holders) != 2 {
		t.Errorf("holders %+v, want A and B", snap.Holders)
	}
	if back, err := step.Cut(ctx, e, plan[:5]); err != nil || len(back.Violations) != 0 ||
		len(back.Holders) != 1 {
		t.Fatalf("cut before B's SET: %+v, %v", back, err)
	}
	stray := action.Action{Kind: action.Run, Client: "Z"}
	if _, err := step.Cut(ctx, e, append(plan[:3:3], stray)); !errors.Is(err, sched.ErrNotEnabled) {
		t.Fatalf("an action not enabled: %v", err)
	}

	e6 := open("6", false)
	start, err := step.Cut(ctx, e6, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := []action.Action{find(t, start, action.Start, "A")}
	res, err := step.FindFrom(ctx, e6, first, sched.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Violations) != 1 || res.Violations[0].Property != result.Resource ||
		!res.Violations[0].Actions[0].Same(first[0]) {
		t.Fatalf("recipe 6 from A's first step: %+v", res.Violations)
	}
	only := sched.Options{Check: []string{result.MutualExclusion}}
	if _, err := step.FindFrom(ctx, e, plan, only); !errors.Is(err, step.ErrNothingToFind) {
		t.Fatalf("find after mutual exclusion broke: %v", err)
	}
}
