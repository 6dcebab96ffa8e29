package market_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// TestAuditCatchesEachKind tampers with a market behind its back, one
// invariant at a time, and checks the audit names the broken one.
func TestAuditCatchesEachKind(t *testing.T) {
	cases := []struct {
		name   string
		tamper func(ctx context.Context, c *redis.Client, k market.Keys, m *market.Market)
		want   market.Violations
	}{
		{"money created", func(ctx context.Context, c *redis.Client, k market.Keys, m *market.Market) {
			c.HIncrBy(ctx, k.User("seller"), "funds", 5)
		}, market.Violations{MoneyNotConserved: 1, NotPaidOnce: 1}},
		{"negative funds", func(ctx context.Context, c *redis.Client, k market.Keys, m *market.Market) {
			c.HIncrBy(ctx, k.User("buyer"), "funds", -1000)
			c.HIncrBy(ctx, k.User("seller"), "funds", 1000)
		}, market.Violations{NegativeFunds: 1, NotPaidOnce: 2}},
		{"item in two places", func(ctx context.Context, c *redis.Client, k market.Keys, m *market.Market) {
			c.SAdd(ctx, k.Inventory("buyer"), "gem")
		}, market.Violations{ItemMisplaced: 1}},
		{"item lost", func(ctx context.Context, c *redis.Client, k market.Keys, m *market.Market) {
			c.ZRem(ctx, k.Market(), market.Member("gem", "seller"))
		}, market.Violations{ItemMisplaced: 1}},
		{"sold at a price it was not listed at", func(ctx context.Context, c *redis.Client, k market.Keys, m *market.Market) {
			c.ZAdd(ctx, k.Market(), redis.Z{Score: 20, Member: market.Member("gem", "seller")})
			if _, err := m.Purchase(ctx, market.Lua, "buyer", "seller", "gem", 20); err != nil {
				panic(err)
			}
		}, market.Violations{NotPaidOnce: 1}},
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
				c.tamper(ctx, b.Client, m.Keys(), m)
				rep, err := m.Audit(ctx)
				must(t, err)
				if rep.Violations != c.want {
					t.Fatalf("violations %+v, want %+v (%v)", rep.Violations, c.want, rep.Details)
				}
			})
		}
	})
}
