package market_test

import (
	"context"
	"errors"
	"maps"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// maxStreamID is the last ID a stream can hold: an XADD after it fails.
const maxStreamID = "18446744073709551615-18446744073709551615"

// TestNoPartialWriteOnWrongTypes sets a key the operation writes to
// another type (or to its limit) behind the market's back: a key Redis
// would refuse a write to in the middle of a MULTI/EXEC or a script, after
// earlier writes had applied. Every strategy in every client form must
// refuse with ErrCorrupt before its first write, so nothing changes, and a
// retry with the same operation ID must not apply it either.
func TestNoPartialWriteOnWrongTypes(t *testing.T) {
	type corruption struct {
		name string
		list bool // corrupts what a listing writes, else a purchase
		set  func(ctx context.Context, rdb redis.UniversalClient, k markettrace.Keys) error
	}
	corruptions := []corruption{
		{"buyer inventory a string", false, func(ctx context.Context, rdb redis.UniversalClient, k markettrace.Keys) error {
			return rdb.Set(ctx, k.Inventory("ann"), "x", 0).Err()
		}},
		{"sales a string", false, func(ctx context.Context, rdb redis.UniversalClient, k markettrace.Keys) error {
			return rdb.Set(ctx, k.Sales(), "x", 0).Err()
		}},
		{"sales at the last ID", false, func(ctx context.Context, rdb redis.UniversalClient, k markettrace.Keys) error {
			return rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.Sales(), ID: maxStreamID, Values: []any{"x", "y"}}).Err()
		}},
		{"buyer a string", false, func(ctx context.Context, rdb redis.UniversalClient, k markettrace.Keys) error {
			return rdb.Set(ctx, k.User("ann"), "x", 0).Err()
		}},
		{"seller a string", false, func(ctx context.Context, rdb redis.UniversalClient, k markettrace.Keys) error {
			return rdb.Set(ctx, k.User("sam"), "x", 0).Err()
		}},
		{"market a string", false, func(ctx context.Context, rdb redis.UniversalClient, k markettrace.Keys) error {
			return rdb.Set(ctx, k.Market(), "x", 0).Err()
		}},
		{"listed counts a string", true, func(ctx context.Context, rdb redis.UniversalClient, k markettrace.Keys) error {
			return rdb.Set(ctx, k.Listed(), "x", 0).Err()
		}},
		{"listed count at its limit", true, func(ctx context.Context, rdb redis.UniversalClient, k markettrace.Keys) error {
			return rdb.HSet(ctx, k.Listed(), "pen", "9223372036854775807").Err()
		}},
		{"listed count not a number", true, func(ctx context.Context, rdb redis.UniversalClient, k markettrace.Keys) error {
			return rdb.HSet(ctx, k.Listed(), "pen", "many").Err()
		}},
		{"market a string (list)", true, func(ctx context.Context, rdb redis.UniversalClient, k markettrace.Keys) error {
			return rdb.Set(ctx, k.Market(), "x", 0).Err()
		}},
		{"seller inventory a string", true, func(ctx context.Context, rdb redis.UniversalClient, k markettrace.Keys) error {
			return rdb.Set(ctx, k.Inventory("sam"), "x", 0).Err()
		}},
	}
	forEach(t, func(t *testing.T, b *redistest.Backend, m *market.Market, s market.Strategy) {
		ctx := context.Background()
		k := markettrace.KeysOf(m)
		for _, c := range corruptions {
			must(t, b.Client.FlushAll(ctx).Err())
			user(t, m, "sam", 0)
			user(t, m, "ann", 100)
			listed(t, m, market.Lua, "sam", "cup", 10)
			must(t, m.GrantItem(ctx, "sam", "pen"))
			must(t, c.set(ctx, b.Client, k))
			before := redistest.Snapshot(t, b.Client)
			for try := range 2 {
				var err error
				if c.list {
					_, err = m.List(ctx, s, "sam", "pen", 5, market.OpID("op1"))
				} else {
					_, err = m.Purchase(ctx, s, "ann", "sam", "cup", 10, market.OpID("op1"))
				}
				if !errors.Is(err, market.ErrCorrupt) {
					t.Errorf("%s, attempt %d: %v; want ErrCorrupt", c.name, try+1, err)
				}
				if after := redistest.Snapshot(t, b.Client); !maps.Equal(before, after) {
					t.Fatalf("%s, attempt %d: the market changed:\nbefore %v\nafter  %v", c.name, try+1, before, after)
				}
			}
		}
	})
}
