package explore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/lockmarket/lockmarket/explore"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// find returns the first enabled action of kind by client, or fails.
func find(t *testing.T, snap *explore.Snapshot, kind, client string) explore.Action {
	t.Helper()
	for _, a := range snap.Enabled {
		if a.Kind == kind && a.Client == client {
			return a
		}
	}
	t.Fatalf("no %s of %s among %v", kind, client, snap.Enabled)
	return explore.Action{}
}

// TestCut steps recipe 1 by hand, as a class would: A and B start, then
// A's GET, B's GET, A's SET, B's SET breaks mutual exclusion at B's SET; cut one step
// earlier it has not broken yet. A counterexample found from a prefix
// starts with the prefix; recipe 6 fenced has none.
func TestCut(t *testing.T) {
	b := redistest.Mini(t)
	ctx := context.Background()
	open := func(recipe string, fixed bool) *explore.Explorer {
		tg, err := explore.Recipe(recipe, fixed)
		if err != nil {
			t.Fatal(err)
		}
		m := explore.DefaultModel()
		m.Clients = tg.Clients
		e, err := explore.New(ctx, b.Client, tg, m)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	e := open("1", false)
	var plan []explore.Action
	snap, err := explore.Cut(ctx, e, plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Clients) != 2 || len(snap.Steps) != 0 || len(snap.Enabled) == 0 || snap.Complete {
		t.Fatalf("start: %+v", snap)
	}
	for _, c := range []string{"A", "B"} {
		plan = append(plan, find(t, snap, explore.Start, c))
		if snap, err = explore.Cut(ctx, e, plan); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []string{"A", "B", "A", "B"} {
		plan = append(plan, find(t, snap, explore.Run, c))
		if snap, err = explore.Cut(ctx, e, plan); err != nil {
			t.Fatal(err)
		}
	}
	if len(snap.Steps) != 6 || len(snap.Violations) != 1 ||
		snap.Violations[0].Property != explore.MutualExclusion ||
		snap.Violations[0].Step != 5 ||
		snap.Steps[5].Violation != explore.MutualExclusion {
		t.Fatalf(
			"after A GET, B GET, A SET, B SET: steps %+v, violations %+v", snap.Steps,
			snap.Violations,
		)
	}
	if len(snap.Holders) != 2 {
		t.Errorf("holders %+v, want A and B", snap.Holders)
	}
	if back, err := explore.Cut(ctx, e, plan[:5]); err != nil || len(back.Violations) != 0 ||
		len(back.Holders) != 1 {
		t.Fatalf("cut before B's SET: %+v, %v", back, err)
	}
	stray := explore.Action{Kind: explore.Run, Client: "Z"}
	if _, err := explore.Cut(ctx, e, append(plan[:3:3], stray)); !errors.Is(err, explore.ErrNotEnabled) {
		t.Fatalf("an action not enabled: %v", err)
	}

	e6 := open("6", false)
	start, err := explore.Cut(ctx, e6, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := []explore.Action{find(t, start, explore.Start, "A")}
	res, err := explore.FindFrom(ctx, e6, first, explore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Violations) != 1 || res.Violations[0].Property != explore.Resource ||
		!res.Violations[0].Actions[0].Same(first[0]) {
		t.Fatalf("recipe 6 from A's first step: %+v", res.Violations)
	}
	only := explore.Options{Check: []string{explore.MutualExclusion}}
	if _, err := explore.FindFrom(ctx, e, plan, only); !errors.Is(err, explore.ErrNothingToFind) {
		t.Fatalf("find after mutual exclusion broke: %v", err)
	}
}
