package demo_test

import (
	"context"
	"maps"
	"testing"

	"github.com/lockmarket/lockmarket/internal/service/demo"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// TestSeed checks that the demo set-up creates its users, items and
// listings once, and that a second run changes nothing.
func TestSeed(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		m, err := market.New(b.Client, "demo")
		if err != nil {
			t.Fatal(err)
		}
		rep, err := demo.Seed(ctx, m, market.Fine)
		if err != nil {
			t.Fatal(err)
		}
		if rep != (demo.Report{Users: 5, Items: 9, Listings: 6}) {
			t.Fatalf("first seed: %+v", rep)
		}
		before := redistest.Snapshot(t, b.Client)
		rep, err = demo.Seed(ctx, m, market.Lua)
		if err != nil {
			t.Fatal(err)
		}
		if rep != (demo.Report{}) {
			t.Fatalf("second seed: %+v", rep)
		}
		if after := redistest.Snapshot(t, b.Client); !maps.Equal(before, after) {
			t.Fatalf("second seed changed the market:\nbefore %v\nafter  %v", before, after)
		}
		ls, total, err := m.Listings(ctx, 0, 1)
		if err != nil || total != 6 || ls[0].Item != "arrows" || ls[0].Price != 15 {
			t.Fatalf("listings %v total %d: %v", ls, total, err)
		}
		if rep, err := m.Audit(ctx); err != nil {
			t.Fatal(err)
		} else if rep.Total() != 0 {
			t.Fatalf("audit: %+v %v", rep.Violations, rep.Details)
		}
	})
}
