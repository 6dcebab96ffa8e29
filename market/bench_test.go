package market_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// The benchmarks time one List or one Purchase, uncontended, per strategy,
// against a private redis-server (skipped without one). Compare runs with
// benchstat:
//
//	go test -run '^$' -bench . -benchmem -count 10 ./market > new.txt
//	benchstat old.txt new.txt

const benchPrice = 10

var benchMarkets atomic.Int64

// benchMarket returns a fresh market on be with a seller owning n items
// (returned) and a buyer able to pay for all of them.
func benchMarket(tb testing.TB, be *redistest.Backend, n int) (*market.Market, []string) {
	tb.Helper()
	ctx := context.Background()
	m, err := newMarket(be.Client, "bench"+strconv.FormatInt(benchMarkets.Add(1), 10))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := m.CreateUser(ctx, "seller", "Seller", 1); err != nil {
		tb.Fatal(err)
	}
	if _, err := m.CreateUser(ctx, "buyer", "Buyer", int64(n)*benchPrice+1); err != nil {
		tb.Fatal(err)
	}
	items := make([]string, n)
	for i := range items {
		items[i] = "it" + strconv.Itoa(i)
		if err := m.GrantItem(ctx, "seller", items[i]); err != nil {
			tb.Fatal(err)
		}
	}
	return m, items
}

// BenchmarkList is one List per operation, each of a different item.
func BenchmarkList(b *testing.B) {
	be := redistest.Real(b)
	ctx := context.Background()
	for _, s := range market.Strategies {
		b.Run(string(s), func(b *testing.B) {
			if err := be.Client.FlushDB(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			m, items := benchMarket(b, be, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := m.List(ctx, s, "seller", items[i], benchPrice); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPurchase is one Purchase per operation, each of a different
// listing. The listings are made (with the Lua strategy, quickest) before
// the clock starts.
func BenchmarkPurchase(b *testing.B) {
	be := redistest.Real(b)
	ctx := context.Background()
	for _, s := range market.Strategies {
		b.Run(string(s), func(b *testing.B) {
			if err := be.Client.FlushDB(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			m, items := benchMarket(b, be, b.N)
			for i := 0; i < b.N; i++ {
				if _, err := m.List(ctx, market.Lua, "seller", items[i], benchPrice); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := m.Purchase(ctx, s, "buyer", "seller", items[i], benchPrice); err != nil {
					b.Fatal(fmt.Errorf("purchase %d: %w", i, err))
				}
			}
		})
	}
}
