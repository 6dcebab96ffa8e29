package market_test

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// TestNewRefusesOptions checks that an option that cannot apply is refused
// when the market is made, not ignored.
func TestNewRefusesOptions(t *testing.T) {
	b := redistest.Mini(t)
	lock := func(context.Context, string, time.Duration) (markettrace.Lease, error) {
		return markettrace.Lease{}, nil
	}
	for _, tc := range []struct {
		name string
		opts []market.Option
	}{
		{"lock TTL below 1ms", []market.Option{market.WithLockTTL(time.Microsecond)}},
		{"operation TTL below 1ms", []market.Option{market.WithOpTTL(0)}},
		{"list timeout below 1ms", []market.Option{market.WithTimeouts(0, time.Second)}},
		{"purchase timeout negative", []market.Option{market.WithTimeouts(time.Second, -time.Second)}},
		{"backoff beside a LockFunc", []market.Option{markettrace.WithLockFunc(lock), market.WithBackoff(locking.DefaultBackoff)}},
		{"unknown client form", []market.Option{markettrace.WithClient("fast")}},
	} {
		if _, err := market.New(b.Client, "opts", tc.opts...); !errors.Is(err, market.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", tc.name, err)
		}
	}
	if _, err := market.New(b.Client, "opts", market.WithBackoff(locking.DefaultBackoff),
		market.WithTimeouts(time.Millisecond, time.Millisecond)); err != nil {
		t.Errorf("valid options refused: %v", err)
	}
}

// TestFencingRefusesALeaseWithoutToken: under WithFencing, the lease of a
// LockFunc that stores no token cannot be checked at the commit, so the
// operation fails with ErrInvalid, applies nothing and gives the lock
// back, instead of running unfenced.
func TestFencingRefusesALeaseWithoutToken(t *testing.T) {
	b := redistest.Mini(t)
	ctx := context.Background()
	released := 0
	lock := func(context.Context, string, time.Duration) (markettrace.Lease, error) {
		return markettrace.Lease{Release: func(context.Context) error { released++; return nil }}, nil
	}
	m, err := newMarket(b.Client, "tokenless", markettrace.WithLockFunc(lock), market.WithFencing())
	must(t, err)
	user(t, m, "ann", 100)
	user(t, m, "sam", 0)
	listed(t, m, market.Lua, "sam", "cup", 10)
	before := redistest.Snapshot(t, b.Client)
	for _, s := range []market.Strategy{market.Coarse, market.Fine} {
		if _, err := m.Purchase(ctx, s, "ann", "sam", "cup", 10); !errors.Is(err, market.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", s, err)
		}
	}
	if after := redistest.Snapshot(t, b.Client); !maps.Equal(before, after) {
		t.Errorf("market changed:\nbefore %v\nafter  %v", before, after)
	}
	if released != 2 {
		t.Errorf("%d leases released, want 2", released)
	}
}
