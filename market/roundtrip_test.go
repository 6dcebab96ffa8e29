package market_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/internal/testsupport/roundtrip"
	"github.com/lockmarket/lockmarket/market"
)

// roundTrips is the number of round trips of one uncontended, successful
// operation, by strategy. They are exact, so they are asserted: a change
// that adds a round trip to a hot path fails here.
var roundTrips = map[market.Strategy]struct{ list, purchase int64 }{
	market.Watch:  {list: 2, purchase: 2},
	market.Coarse: {list: 2, purchase: 2},
	market.Fine:   {list: 2, purchase: 2},
	market.Lua:    {list: 1, purchase: 1},
}

func TestRoundTripsPerOperation(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	for _, s := range market.Strategies {
		t.Run(string(s), func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: b.Addr()})
			defer c.Close()
			counter := &roundtrip.Counter{}
			c.AddHook(counter)
			m, err := newMarket(c, "rt"+string(s))
			must(t, err)
			user(t, m, "buyer", 1000)
			user(t, m, "seller", 0)
			// Warm up once so that every script is cached on the server.
			listed(t, m, s, "seller", "warm", 1)
			if _, err := m.Purchase(ctx, s, "buyer", "seller", "warm", 1); err != nil {
				t.Fatal(err)
			}
			must(t, m.GrantItem(ctx, "seller", "item"))

			before := counter.Load()
			if _, err := m.List(ctx, s, "seller", "item", 5); err != nil {
				t.Fatal(err)
			}
			list := counter.Load().Sub(before)
			before = counter.Load()
			if _, err := m.Purchase(ctx, s, "buyer", "seller", "item", 5); err != nil {
				t.Fatal(err)
			}
			buy := counter.Load().Sub(before)
			t.Logf("%-6s list: %d round trips (%d commands); purchase: %d round trips (%d commands)",
				s, list.RoundTrips, list.Commands, buy.RoundTrips, buy.Commands)
			want := roundTrips[s]
			if list.RoundTrips != want.list || buy.RoundTrips != want.purchase {
				t.Errorf("round trips list=%d purchase=%d, want %d and %d", list.RoundTrips, buy.RoundTrips, want.list, want.purchase)
			}
			audit(t, m)
		})
	}
}
