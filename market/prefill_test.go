package market_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

func TestCreateListings(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		m, err := newMarket(b.Client, "bulk")
		must(t, err)
		_, err = m.CreateUser(ctx, "seller", "Seller", 0)
		must(t, err)
		_, err = m.CreateUser(ctx, "buyer", "Buyer", 10_000)
		must(t, err)
		items := make([]string, 50)
		prices := make([]int64, 50)
		for i := range items {
			items[i] = "bulk-" + strconv.Itoa(i)
			prices[i] = int64(100 + i)
		}
		must(t, m.CreateListings(ctx, "seller", items, prices))

		cases := []struct {
			name    string
			seller  string
			items   []string
			prices  []int64
			wantErr error
		}{
			{"item exists: nothing written", "seller", []string{"new-1", "bulk-3"}, []int64{5, 5}, market.ErrAlreadyExists},
			{"unknown seller", "nobody", []string{"new-2"}, []int64{5}, market.ErrUserNotFound},
			{"lengths differ", "seller", []string{"new-3"}, nil, market.ErrInvalid},
			{"bad price", "seller", []string{"new-4"}, []int64{0}, market.ErrInvalid},
			{"one item twice in a call", "seller", []string{"new-5", "new-5"}, []int64{5, 6}, market.ErrInvalid},
			{"bad item", "seller", []string{"a.b"}, []int64{1}, market.ErrInvalid},
			{"too many", "seller", make([]string, market.MaxBulkListings+1), make([]int64, market.MaxBulkListings+1), market.ErrInvalid},
			{"empty is a no-op", "seller", nil, nil, nil},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				err := m.CreateListings(ctx, c.seller, c.items, c.prices)
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("CreateListings = %v, want %v", err, c.wantErr)
				}
			})
		}

		listings, total, err := m.Listings(ctx, 0, 100)
		must(t, err)
		if total != 50 || len(listings) != 50 {
			t.Fatalf("market has %d listings (%d returned), want 50", total, len(listings))
		}
		if l := listings[0]; l.Item != "bulk-0" || l.Seller != "seller" || l.Price != 100 {
			t.Fatalf("cheapest listing %+v, want bulk-0 by seller at 100", l)
		}
		// A bulk listing is bought like any other, and the audit holds.
		for j, s := range market.Strategies {
			i := 10 + j // a distinct listing per strategy
			if _, err := m.Purchase(ctx, s, "buyer", "seller", items[i], prices[i]); err != nil {
				t.Fatalf("%s: purchase %s: %v", s, items[i], err)
			}
		}
		rep, err := m.Audit(ctx)
		must(t, err)
		if rep.Total() != 0 || rep.Items != 50 {
			t.Fatalf("audit: %d violations %v, %d items; want 0 and 50", rep.Total(), rep.Details, rep.Items)
		}
	})
}
