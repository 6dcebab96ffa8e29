package pausedholder_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/failure/pausedholder"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

func TestMain(m *testing.M) { redistest.Main(m) }

var cast = pausedholder.Cast{Seller: "sam", Holder: "ann", Rival: "bob", Item: "idol", Price: 100}

// newMarket is a fresh market holding cast's users and listing.
func newMarket(t *testing.T, b *redistest.Backend, opts ...market.Option) *market.Market {
	t.Helper()
	ctx := context.Background()
	m, err := market.New(b.Client, "ph", append([]market.Option{market.WithLedger(market.NewLedger()),
		market.WithLockTTL(10 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	for u, funds := range cast.Funds() {
		if _, err := m.CreateUser(ctx, u, u, funds); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.GrantItem(ctx, cast.Seller, cast.Item); err != nil {
		t.Fatal(err)
	}
	if _, err := m.List(ctx, market.Lua, cast.Seller, cast.Item, cast.Price); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestTrial plays the scenario under each strategy, the lease made to run
// out: the unfenced lease lock lets A commit after B (the audit finds the
// item sold twice); the fenced lock, WATCH and the Lua script refuse A.
func TestTrial(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		for _, tc := range []struct {
			s       market.Strategy
			fencing bool
			errA    error // nil: A's commit lands after B's
		}{
			{market.Fine, false, nil},
			{market.Fine, true, locking.ErrLockLost},
			{market.Watch, false, market.ErrListingNotFound},
			{market.Lua, false, market.ErrListingNotFound},
		} {
			name := string(tc.s)
			if tc.fencing {
				name += "+fencing"
			}
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				var opts []market.Option
				if tc.fencing {
					opts = append(opts, market.WithFencing())
				}
				m := newMarket(t, b, opts...)
				defer m.Delete(ctx)
				lapsed := false
				var errB error
				a, err := pausedholder.Trial{
					Holder: pausedholder.NewHookHolder(m, tc.s, cast, "stops", 0),
					Lapse: func(context.Context) error {
						b.Expire(t, markettrace.KeysOf(m).ItemLock(cast.Item, cast.Seller))
						lapsed = true
						return nil
					},
					Rival: func(ctx context.Context) {
						_, errB = m.Purchase(ctx, tc.s, cast.Rival, cast.Seller, cast.Item, cast.Price)
					},
				}.Run(ctx)
				if err != nil || !lapsed {
					t.Fatalf("trial: %v (lapsed %v)", err, lapsed)
				}
				if errB != nil {
					t.Fatalf("B's purchase: %v", errB)
				}
				rep, err := m.Audit(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if tc.errA == nil {
					if a.Err != nil || rep.Violations.ItemMisplaced == 0 {
						t.Errorf("A: %v; audit %+v; want A's late commit and the item in two places", a.Err, rep.Violations)
					}
					return
				}
				if !errors.Is(a.Err, tc.errA) || rep.Total() != 0 {
					t.Errorf("A: %v, want %v; audit %v", a.Err, tc.errA, rep.Details)
				}
			})
		}
	})
}

// TestTrialLapseFails: a lease that cannot be made to lapse fails the
// trial, and A has been let go on (its purchase returned) by then.
func TestTrialLapseFails(t *testing.T) {
	b := redistest.Mini(t)
	m := newMarket(t, b)
	errLapse := errors.New("no lapse")
	rivalRan := false
	_, err := pausedholder.Trial{
		Holder: pausedholder.NewHookHolder(m, market.Fine, cast, "stops", 0),
		Lapse:  func(context.Context) error { return errLapse },
		Rival:  func(context.Context) { rivalRan = true },
	}.Run(context.Background())
	if !errors.Is(err, errLapse) || rivalRan {
		t.Fatalf("err %v, rival ran %v; want the lapse's error and no rival", err, rivalRan)
	}
	if u, err := m.GetUser(context.Background(), cast.Holder); err != nil || len(u.Inventory) != 1 {
		t.Errorf("A's purchase did not complete: %+v, %v", u, err)
	}
}
