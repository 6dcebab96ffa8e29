package explore_test

import (
	"context"
	"testing"

	"github.com/lockmarket/lockmarket/internal/explore"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

func TestQuick(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	for _, r := range explore.Recipes {
		for _, fixed := range []bool{false, true} {
			tg, err := explore.Recipe(r, fixed)
			if err != nil {
				t.Fatal(err)
			}
			m := explore.DefaultModel()
			m.Clients = tg.Clients
			e, err := explore.New(ctx, b.Client, tg, m)
			if err != nil {
				t.Fatal(err)
			}
			o := explore.Options{}
			if !fixed {
				o.Stop = []string{tg.Property}
			}
			res, err := e.Explore(ctx, o)
			e.Close()
			if err != nil {
				t.Fatalf("%s: %v", tg.Name, err)
			}
			t.Logf("%s: schedules %d pruned %d exhaustive %v elapsed %v", tg.Name, res.Schedules, res.Pruned, res.Exhaustive, res.Elapsed)
			for _, v := range res.Violations {
				t.Logf("   %s: %s (%d steps)", v.Property, v.Message, len(v.Steps))
				for _, s := range v.Steps {
					t.Logf("      %s %-30s %s %s", explore.FmtMS(s.ClockMS), s.Action, s.Text, s.Violation)
				}
			}
		}
	}
}
