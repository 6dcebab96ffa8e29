package market_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

type clientKey struct{}

// TestFencingRefusesCommitAfterLeaseExpiry pauses a buyer that holds the
// lock past its lease, lets a second buyer take the lock and buy the same
// listing, then resumes the first: unfenced, both purchases commit (the
// item is sold twice); fenced, the first is refused with ErrLockLost.
func TestFencingRefusesCommitAfterLeaseExpiry(t *testing.T) {
	for _, f := range markettrace.ClientForms {
		for _, s := range []market.Strategy{market.Coarse, market.Fine} {
			for _, fenced := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/unfenced", f, s)
				if fenced {
					name = fmt.Sprintf("%s/%s/fenced", f, s)
				}
				t.Run(name, func(t *testing.T) {
					redistest.Run(t, func(t *testing.T, b *redistest.Backend) { fencingAfterExpiry(t, b, f, s, fenced) })
				})
			}
		}
	}
}

func fencingAfterExpiry(t *testing.T, b *redistest.Backend, f markettrace.ClientForm, s market.Strategy, fenced bool) {
	ctx := context.Background()
	var m *market.Market
	paused := false
	hook := func(ctx context.Context, _, op string) {
		if ctx.Value(clientKey{}) != "alice" || paused || op != "purchase" {
			return
		}
		paused = true // alice stalls here, past her lease
		lock := markettrace.KeysOf(m).MarketLock()
		if s == market.Fine {
			lock = markettrace.KeysOf(m).ItemLock("sword", "sam")
		}
		b.Expire(t, lock)
		bctx := context.WithValue(context.Background(), clientKey{}, "bob")
		if _, err := m.Purchase(bctx, s, "bob", "sam", "sword", 10); err != nil {
			t.Errorf("bob: %v", err)
		}
	}
	opts := []market.Option{market.WithLockTTL(5 * time.Second), markettrace.WithClient(f)}
	if fenced {
		opts = append(opts, market.WithFencing())
	}
	var err error
	m, err = newMarket(b.Client, "fence", opts...)
	must(t, err)
	user(t, m, "sam", 0)
	user(t, m, "alice", 100)
	user(t, m, "bob", 100)
	listed(t, m, s, "sam", "sword", 10)
	actx := markettrace.WithTrace(context.WithValue(ctx, clientKey{}, "alice"), &markettrace.Trace{BeforeCommit: hook})
	cost, err := m.Purchase(actx, s, "alice", "sam", "sword", 10)
	rep, aerr := m.Audit(ctx)
	must(t, aerr)
	if !fenced {
		if err != nil || rep.Total() == 0 {
			t.Fatalf("unfenced: alice %v, %d violations; want a double sale", err, rep.Total())
		}
		return
	}
	if !errors.Is(err, locking.ErrLockLost) || !errors.Is(err, locking.ErrNotHeld) || !cost.LockLost {
		t.Fatalf("fenced: alice %v (lock lost %v), want ErrLockLost", err, cost.LockLost)
	}
	if rep.Total() != 0 {
		t.Fatalf("fenced: %d violations: %v", rep.Total(), rep.Details)
	}
}

func TestFencedStrategiesWorkNormally(t *testing.T) {
	for _, f := range markettrace.ClientForms {
		for _, s := range []market.Strategy{market.Coarse, market.Fine} {
			t.Run(string(f)+"/"+string(s), func(t *testing.T) {
				redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
					ctx := context.Background()
					m, err := newMarket(b.Client, "fenced", market.WithFencing(), markettrace.WithClient(f))
					must(t, err)
					user(t, m, "sam", 0)
					user(t, m, "ann", 100)
					listed(t, m, s, "sam", "shield", 30)
					if _, err := m.Purchase(ctx, s, "ann", "sam", "shield", 30); err != nil {
						t.Fatal(err)
					}
					if _, err := m.Purchase(ctx, s, "ann", "sam", "shield", 30); !errors.Is(err, market.ErrListingNotFound) {
						t.Fatalf("second purchase: %v", err)
					}
					audit(t, m)
				})
			})
		}
	}
}

func TestLockFuncReplacesTheMutex(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		var keys []string
		released := 0
		lf := func(ctx context.Context, key string, ttl time.Duration) (markettrace.Lease, error) {
			keys = append(keys, key)
			return markettrace.Lease{Waits: 2, Release: func(context.Context) error { released++; return nil }}, nil
		}
		m, err := newMarket(b.Client, "lf", markettrace.WithLockFunc(lf))
		must(t, err)
		user(t, m, "sam", 0)
		user(t, m, "ann", 100)
		listed(t, m, market.Fine, "sam", "bow", 5)
		cost, err := m.Purchase(ctx, market.Coarse, "ann", "sam", "bow", 5)
		must(t, err)
		want := []string{markettrace.KeysOf(m).ItemLock("bow", "sam"), markettrace.KeysOf(m).MarketLock()}
		if len(keys) != 2 || keys[0] != want[0] || keys[1] != want[1] || released != 2 || cost.LockWaits != 2 {
			t.Fatalf("keys %v released %d waits %d; want %v, 2, 2", keys, released, cost.LockWaits, want)
		}
		audit(t, m)
	})
}
