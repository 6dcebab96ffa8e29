package market_test

import (
	"context"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/failure/bookform"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/internal/testsupport/roundtrip"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// roundTrips is the number of round trips of one uncontended, successful
// operation, by client form and strategy. They are exact, so they are
// asserted: a change that adds a round trip to a hot path fails here.
var roundTrips = map[markettrace.ClientForm]map[market.Strategy]struct{ list, purchase int64 }{
	markettrace.LeanClient: {
		market.Watch:  {list: 2, purchase: 2},
		market.Coarse: {list: 2, purchase: 2},
		market.Fine:   {list: 2, purchase: 2},
		market.Lua:    {list: 1, purchase: 1},
	},
	// The book's listings: WATCH, each read, MULTI...EXEC (4.5, 4.6);
	// under a lock, SETNX and EXPIRE before, WATCH, GET and MULTI DEL EXEC
	// after (6.2.3-6.2.5).
	markettrace.BookClient: {
		market.Watch:  {list: 3, purchase: 4},
		market.Coarse: {list: 7, purchase: 9},
		market.Fine:   {list: 7, purchase: 9},
		market.Lua:    {list: 1, purchase: 1},
	},
}

// sequences is what the client sends for one uncontended List and
// Purchase: one string per round trip, its commands in order. Beyond the
// book's commands, a listing counts itself (HINCRBY) and a purchase reads
// the seller's funds (the credit bound) with the buyer's and writes a
// receipt (XADD), and both read the types of the keys they write (TYPE)
// and the limits a write could meet (a listed count, the receipts' last
// ID: HGET, XINFO) with their last read, so the book form's round trips are the book's ("set+nx" is
// SET key value NX, which is SETNX; "set+ex+nx" the default lease lock,
// whose 10 s TTL go-redis sends in seconds).
var sequences = map[markettrace.ClientForm]map[market.Strategy]struct{ list, purchase []string }{
	markettrace.LeanClient: {
		market.Watch: {
			list:     []string{"watch sismember type type type hget", "multi zadd srem hincrby exec"},
			purchase: []string{"watch zscore hget hget type type type type type xinfo", "multi hincrby hincrby sadd zrem xadd exec"},
		},
		market.Coarse: {
			list:     []string{"set+ex+nx+get sismember type type type hget", "multi zadd srem hincrby eval exec"},
			purchase: []string{"set+ex+nx+get watch zscore hget hget type type type type type xinfo", "multi hincrby hincrby sadd zrem xadd eval exec"},
		},
		market.Lua: {list: []string{"evalsha"}, purchase: []string{"evalsha"}},
	},
	markettrace.BookClient: {
		market.Watch: {
			list:     []string{"watch", "sismember type type type hget", "multi zadd srem hincrby exec"},
			purchase: []string{"watch", "zscore", "hget hget type type type type type xinfo", "multi hincrby hincrby sadd zrem xadd exec"},
		},
		market.Coarse: {
			list: []string{"set+nx", "expire", "sismember type type type hget", "multi zadd srem hincrby exec",
				"watch", "get", "multi del exec"},
			purchase: []string{"set+nx", "expire", "watch", "zscore", "hget hget type type type type type xinfo",
				"multi hincrby hincrby sadd zrem xadd exec", "watch", "get", "multi del exec"},
		},
		market.Lua: {list: []string{"evalsha"}, purchase: []string{"evalsha"}},
	},
}

func init() {
	for _, f := range markettrace.ClientForms {
		sequences[f][market.Fine] = sequences[f][market.Coarse]
	}
}

func TestRoundTripsPerOperation(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	for _, f := range markettrace.ClientForms {
		for _, s := range market.Strategies {
			t.Run(string(f)+"/"+string(s), func(t *testing.T) {
				c := redis.NewClient(&redis.Options{Addr: b.Addr()})
				defer c.Close()
				counter := &roundtrip.Counter{Record: true}
				c.AddHook(counter)
				m, err := newMarket(c, "rt"+string(f)+string(s), bookform.Options(c, f)...)
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
				counter.Take()
				if _, err := m.List(ctx, s, "seller", "item", 5); err != nil {
					t.Fatal(err)
				}
				list := counter.Load().Sub(before)
				listSeq := counter.Take()
				before = counter.Load()
				if _, err := m.Purchase(ctx, s, "buyer", "seller", "item", 5); err != nil {
					t.Fatal(err)
				}
				buy := counter.Load().Sub(before)
				buySeq := counter.Take()
				t.Logf("%s/%-6s list: %d round trips (%d commands) %q; purchase: %d round trips (%d commands) %q",
					f, s, list.RoundTrips, list.Commands, listSeq, buy.RoundTrips, buy.Commands, buySeq)
				want := roundTrips[f][s]
				if list.RoundTrips != want.list || buy.RoundTrips != want.purchase {
					t.Errorf("round trips list=%d purchase=%d, want %d and %d", list.RoundTrips, buy.RoundTrips, want.list, want.purchase)
				}
				seq := sequences[f][s]
				if !slices.Equal(listSeq, seq.list) {
					t.Errorf("list sent %q, want %q", listSeq, seq.list)
				}
				if !slices.Equal(buySeq, seq.purchase) {
					t.Errorf("purchase sent %q, want %q", buySeq, seq.purchase)
				}
				audit(t, m)
			})
		}
	}
}
