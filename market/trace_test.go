package market_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// TestTrace checks which hooks each strategy calls, and that a trace
// added to a context that carries one calls both, the newer first.
func TestTrace(t *testing.T) {
	b := redistest.Mini(t)
	ctx := context.Background()
	m, err := newMarket(b.Client, "trace")
	must(t, err)
	user(t, m, "buyer", 100)
	user(t, m, "seller", 0)
	for _, s := range market.Strategies {
		var calls []string
		outer := markettrace.WithTrace(ctx, &markettrace.Trace{
			BeforeCommit: func(_ context.Context, s, op string) {
				calls = append(calls, fmt.Sprintf("outer %s %s", s, op))
			},
			Exec: func(time.Duration) { calls = append(calls, "outer exec") },
		})
		inner := markettrace.WithTrace(outer, &markettrace.Trace{
			BeforeCommit: func(_ context.Context, s, op string) {
				calls = append(calls, fmt.Sprintf("inner %s %s", s, op))
			},
		})
		item := "item-" + string(s)
		must(t, m.GrantItem(ctx, "seller", item))
		if _, err := m.List(inner, s, "seller", item, 5); err != nil {
			t.Fatal(err)
		}
		want := []string{fmt.Sprintf("inner %s list", s), fmt.Sprintf("outer %s list", s)}
		if s == market.Watch {
			want = append(want, "outer exec")
		}
		if !slices.Equal(calls, want) {
			t.Errorf("%s: hooks called %q, want %q", s, calls, want)
		}
	}
}
