package market_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// TestOpIDAppliesOnce: under every strategy, a repeat of a List or a
// Purchase with the same operation ID applies nothing and succeeds as a
// replay; the same ID with other arguments is refused; the record has the
// market's TTL.
func TestOpIDAppliesOnce(t *testing.T) {
	for _, s := range market.Strategies {
		t.Run(string(s), func(t *testing.T) {
			redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
				ctx := context.Background()
				m, err := newMarket(b.Client, "once"+string(s), market.WithOpTTL(time.Hour))
				must(t, err)
				user(t, m, "sam", 0)
				user(t, m, "ann", 100)
				must(t, m.GrantItem(ctx, "sam", "cup"))
				for i := range 2 {
					cost, err := m.List(ctx, s, "sam", "cup", 30, market.OpID("list-1"))
					if err != nil || cost.Replayed != (i == 1) {
						t.Fatalf("list #%d: %v, replayed %v", i+1, err, cost.Replayed)
					}
				}
				for i := range 3 {
					cost, err := m.Purchase(ctx, s, "ann", "sam", "cup", 30, market.OpID("buy-1"))
					if err != nil || cost.Replayed != (i > 0) {
						t.Fatalf("purchase #%d: %v, replayed %v", i+1, err, cost.Replayed)
					}
				}
				ann, err := m.GetUser(ctx, "ann")
				must(t, err)
				if ann.Funds != 70 {
					t.Fatalf("ann has %d after one purchase replayed twice, want 70", ann.Funds)
				}
				if _, err := m.Purchase(ctx, s, "ann", "sam", "cup", 31, market.OpID("buy-1")); !errors.Is(err, market.ErrOpMismatch) {
					t.Fatalf("same ID, other price: %v, want ErrOpMismatch", err)
				}
				if _, err := m.List(ctx, s, "ann", "cup", 30, market.OpID("buy-1")); !errors.Is(err, market.ErrOpMismatch) {
					t.Fatalf("same ID, other operation: %v, want ErrOpMismatch", err)
				}
				if _, err := m.Purchase(ctx, s, "ann", "sam", "cup", 30, market.OpID("bad.id")); !errors.Is(err, market.ErrInvalid) {
					t.Fatalf("invalid ID: %v, want ErrInvalid", err)
				}
				if ttl := b.Client.PTTL(ctx, markettrace.KeysOf(m).Op("buy-1")).Val(); ttl <= 0 || ttl > time.Hour {
					t.Fatalf("record TTL %v, want within 1h", ttl)
				}
				audit(t, m)
			})
		})
	}
}

// TestOpIDConcurrentRepeats: many clients sending the same purchase with
// one ID at once (a client retrying while its first attempt is still in
// flight): exactly one applies, the others are replays.
func TestOpIDConcurrentRepeats(t *testing.T) {
	for _, s := range market.Strategies {
		t.Run(string(s), func(t *testing.T) {
			redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
				ctx := context.Background()
				m, err := newMarket(b.Client, "rep"+string(s))
				must(t, err)
				user(t, m, "sam", 0)
				user(t, m, "ann", 1000)
				for i := range 5 {
					listed(t, m, s, "sam", fmt.Sprintf("cup%d", i), 10)
				}
				var wg sync.WaitGroup
				var mu sync.Mutex
				applied, replays := 0, 0
				for range 20 {
					wg.Go(func() {
						cost, err := m.Purchase(ctx, s, "ann", "sam", "cup0", 10, market.OpID("same"))
						mu.Lock()
						defer mu.Unlock()
						switch {
						case err != nil:
							t.Errorf("purchase: %v", err)
						case cost.Replayed:
							replays++
						default:
							applied++
						}
					})
				}
				wg.Wait()
				if applied != 1 || replays != 19 {
					t.Fatalf("applied %d, replayed %d; want 1 and 19", applied, replays)
				}
				audit(t, m)
			})
		})
	}
}

// TestNoPartialPurchaseOnOutOfBandState: a seller whose funds were set
// near 2^63 behind the market's back cannot be credited; Redis would run
// the rest of a MULTI/EXEC anyway, so every strategy must refuse before
// writing anything.
func TestNoPartialPurchaseOnOutOfBandState(t *testing.T) {
	for _, s := range market.Strategies {
		t.Run(string(s), func(t *testing.T) {
			redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
				ctx := context.Background()
				m, err := newMarket(b.Client, "partial"+string(s))
				must(t, err)
				user(t, m, "sam", 0)
				user(t, m, "ann", 100)
				listed(t, m, s, "sam", "cup", 10)
				k := markettrace.KeysOf(m)
				for _, funds := range []string{fmt.Sprint(int64(math.MaxInt64 - 5)), "lots"} {
					must(t, b.Client.HSet(ctx, k.User("sam"), "funds", funds).Err())
					_, err = m.Purchase(ctx, s, "ann", "sam", "cup", 10)
					if !errors.Is(err, market.ErrCorrupt) {
						t.Fatalf("seller funds %s: %v, want ErrCorrupt", funds, err)
					}
					ann, err := m.GetUser(ctx, "ann")
					must(t, err)
					if ann.Funds != 100 || len(ann.Inventory) != 0 {
						t.Fatalf("seller funds %s: ann has %d and %v: the purchase applied in part", funds, ann.Funds, ann.Inventory)
					}
					if n := b.Client.ZCard(ctx, k.Market()).Val(); n != 1 {
						t.Fatalf("seller funds %s: %d listings, want the cup still listed", funds, n)
					}
					if n := b.Client.XLen(ctx, k.Sales()).Val(); n != 0 {
						t.Fatalf("seller funds %s: %d receipts, want none", funds, n)
					}
				}
			})
		})
	}
}

// TestReceipts: every purchase leaves a receipt that names the buyer, the
// seller, the item, the price and the operation ID, newest first.
func TestReceipts(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		m, err := newMarket(b.Client, "receipts")
		must(t, err)
		user(t, m, "sam", 0)
		user(t, m, "ann", 100)
		user(t, m, "bob", 100)
		for i, s := range market.Strategies {
			item := fmt.Sprintf("cup%d", i)
			listed(t, m, s, "sam", item, int64(10+i))
			buyer := []string{"ann", "bob"}[i%2]
			if _, err := m.Purchase(ctx, s, buyer, "sam", item, int64(10+i), market.OpID("op"+item)); err != nil {
				t.Fatal(err)
			}
		}
		got, err := m.Receipts(ctx, "ann", 10)
		must(t, err)
		if len(got) != 2 || got[0].Item != "cup2" || got[1].Item != "cup0" ||
			got[0].Price != 12 || got[0].Seller != "sam" || got[0].Op != "opcup2" {
			t.Fatalf("ann's receipts %+v, want cup2 then cup0", got)
		}
		got, err = m.Receipts(ctx, "sam", 3)
		must(t, err)
		if len(got) != 3 {
			t.Fatalf("sam's receipts %+v, want the 3 newest of 4", got)
		}
		if _, err := m.Receipts(ctx, "sam", 0); !errors.Is(err, market.ErrInvalid) {
			t.Fatalf("limit 0: %v, want ErrInvalid", err)
		}
	})
}
