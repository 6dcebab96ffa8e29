package gallery_test

import (
	"context"
	"slices"
	"testing"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/targets"
	"github.com/lockmarket/lockmarket/internal/failure/gallery"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestExplorerFindsEveryStagedFailure: each failure the gallery stages
// with hooks at the recipe's weak point is also found by the explorer
// from the recipe's code and its generic workload alone.
func TestExplorerFindsEveryStagedFailure(t *testing.T) {
	t.Parallel() // servers of its own
	b := redistest.Real(t)
	ctx := context.Background()
	// The property each staged failure breaks: an item sold twice by two
	// holders, a lock that blocks every later purchase, a late commit of
	// a holder paused past its lease, a writer inside a read.
	want := map[string]string{
		"1": result.MutualExclusion, "2": result.Liveness, "3": result.Liveness, "4": result.MutualExclusion,
		"5": result.MutualExclusion, "6": result.Resource, "9": result.MutualExclusion, "11": result.Resource,
	}
	for _, s := range gallery.Scenarios() {
		n := s.Recipe.ID
		t.Run(n, func(t *testing.T) {
			tg, err := targets.Recipe(n, false)
			if err != nil {
				t.Fatal(err)
			}
			if tg.Property != want[n] {
				t.Errorf("recipe %s is said to break %s, the gallery shows %s", n, tg.Property, want[n])
			}
			m := action.DefaultModel()
			m.FaultKinds = []action.Fault{action.FaultPauseLong, action.FaultCrash}
			e, err := sched.NewExplorer(ctx, b.Client, tg, m)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			res, err := e.Explore(ctx, sched.Options{Stop: []string{want[n]}, NoShrink: true})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(res.Violations, func(f result.Counterexample) bool { return f.Property == want[n] }) {
				t.Errorf("recipe %s: the explorer found %v in %d schedules, not %s", n, res.Violations, res.Schedules, want[n])
			}
		})
	}
}
