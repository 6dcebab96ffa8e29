package market_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// TestAuditCatchesEachKind tampers with a market behind its back, one
// invariant at a time, and checks the audit names the broken one.
func TestAuditCatchesEachKind(t *testing.T) {
	cases := []struct {
		name   string
		tamper func(ctx context.Context, c *redis.Client, k markettrace.Keys, m *market.Market)
		want   market.Violations
	}{
		{"money created", func(ctx context.Context, c *redis.Client, k markettrace.Keys, m *market.Market) {
			c.HIncrBy(ctx, k.User("seller"), "funds", 5)
		}, market.Violations{MoneyNotConserved: 1, NotPaidOnce: 1}},
		{"negative funds", func(ctx context.Context, c *redis.Client, k markettrace.Keys, m *market.Market) {
			c.HIncrBy(ctx, k.User("buyer"), "funds", -1000)
			c.HIncrBy(ctx, k.User("seller"), "funds", 1000)
		}, market.Violations{NegativeFunds: 1, NotPaidOnce: 2}},
		{"item in two places", func(ctx context.Context, c *redis.Client, k markettrace.Keys, m *market.Market) {
			c.SAdd(ctx, k.Inventory("buyer"), "gem")
		}, market.Violations{ItemMisplaced: 1}},
		{"item lost", func(ctx context.Context, c *redis.Client, k markettrace.Keys, m *market.Market) {
			c.ZRem(ctx, k.Market(), markettrace.Member("gem", "seller"))
		}, market.Violations{ItemMisplaced: 1}},
		{"sold at a price it was not listed at", func(ctx context.Context, c *redis.Client, k markettrace.Keys, m *market.Market) {
			c.ZAdd(ctx, k.Market(), redis.Z{Score: 20, Member: markettrace.Member("gem", "seller")})
			if _, err := m.Purchase(ctx, market.Lua, "buyer", "seller", "gem", 20); err != nil {
				panic(err)
			}
		}, market.Violations{NotPaidOnce: 1}},
		{"sold twice", func(ctx context.Context, c *redis.Client, k markettrace.Keys, m *market.Market) {
			if _, err := m.Purchase(ctx, market.Lua, "buyer", "seller", "gem", 10); err != nil {
				panic(err)
			}
			if _, err := m.CreateUser(ctx, "buyer2", "Buyer 2", 100); err != nil {
				panic(err)
			}
			c.ZAdd(ctx, k.Market(), redis.Z{Score: 10, Member: markettrace.Member("gem", "seller")})
			if _, err := m.Purchase(ctx, market.Lua, "buyer2", "seller", "gem", 10); err != nil {
				panic(err)
			}
		}, market.Violations{ItemMisplaced: 1, NotPaidOnce: 1}},
		{"receipt without payment", func(ctx context.Context, c *redis.Client, k markettrace.Keys, m *market.Market) {
			c.ZRem(ctx, k.Market(), markettrace.Member("gem", "seller"))
			c.SAdd(ctx, k.Inventory("buyer"), "gem")
			c.XAdd(ctx, &redis.XAddArgs{Stream: k.Sales(), Values: []any{"buyer", "buyer", "seller", "seller", "item", "gem", "price", 10, "op", ""}})
		}, market.Violations{NotPaidOnce: 2}},
		{"funds beyond int64 in sum", func(ctx context.Context, c *redis.Client, k markettrace.Keys, m *market.Market) {
			c.HSet(ctx, k.User("buyer"), "funds", int64(math.MaxInt64-10))
			c.HSet(ctx, k.User("seller"), "funds", int64(math.MaxInt64-10))
		}, market.Violations{MoneyNotConserved: 1, NotPaidOnce: 2}},
	}
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				m, err := newMarket(b.Client, "audit"+string(rune('a'+i)))
				must(t, err)
				user(t, m, "buyer", 100)
				user(t, m, "seller", 0)
				listed(t, m, market.Lua, "seller", "gem", 10)
				audit(t, m)
				c.tamper(ctx, b.Client, markettrace.KeysOf(m), m)
				rep, err := m.Audit(ctx)
				must(t, err)
				if rep.Violations != c.want {
					t.Fatalf("violations %+v, want %+v (%v)", rep.Violations, c.want, rep.Details)
				}
			})
		}
	})
}

// TestAuditFromStateAlone: a Market made later, in another process, with
// no ledger, audits the sales made by others correctly: clean when they
// were, a double sale found when there was one.
func TestAuditFromStateAlone(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		seller, err := newMarket(b.Client, "state")
		must(t, err)
		user(t, seller, "sam", 0)
		user(t, seller, "ann", 100)
		user(t, seller, "bob", 100)
		for i, s := range market.Strategies {
			item := fmt.Sprintf("cup%d", i)
			listed(t, seller, s, "sam", item, 10)
			if _, err := seller.Purchase(ctx, s, "ann", "sam", item, 10); err != nil {
				t.Fatal(err)
			}
		}
		later, err := market.New(b.Client, "state")
		must(t, err)
		rep, err := later.Audit(ctx)
		must(t, err)
		if rep.Total() != 0 || rep.LedgerChecked {
			t.Fatalf("later audit %+v %v (ledger %v), want clean from state", rep.Violations, rep.Details, rep.LedgerChecked)
		}
		// cup0 sold again to bob, as a lock lost mid-purchase would.
		b.Client.ZAdd(ctx, markettrace.KeysOf(seller).Market(), redis.Z{Score: 10, Member: markettrace.Member("cup0", "sam")})
		if _, err := later.Purchase(ctx, market.Lua, "bob", "sam", "cup0", 10); err != nil {
			t.Fatal(err)
		}
		rep, err = later.Audit(ctx)
		must(t, err)
		if rep.NotPaidOnce != 1 || rep.ItemMisplaced != 1 {
			t.Fatalf("after a double sale: %+v %v, want one sale not paid once and one item in two places", rep.Violations, rep.Details)
		}
	})
}
