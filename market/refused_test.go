package market_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// TestRefusedCommit makes Redis refuse the writes of a commit (OOM: over
// maxmemory with noeviction), so that EXEC discards the transaction: the
// operation fails with the refusal itself (redis.IsOOMError), not only
// with EXECABORT, and applies nothing. The lock strategies take a lock
// that writes nothing to Redis here, so that the commit is their first
// write.
func TestRefusedCommit(t *testing.T) {
	nop := func(context.Context, string, time.Duration) (markettrace.Lease, error) {
		return markettrace.Lease{}, nil
	}
	for _, s := range []market.Strategy{market.Watch, market.Coarse, market.Fine} {
		t.Run(string(s), func(t *testing.T) {
			b := redistest.Real(t)
			ctx := context.Background()
			m, err := newMarket(b.Client, "oom", markettrace.WithLockFunc(nop))
			must(t, err)
			user(t, m, "ann", 100)
			user(t, m, "sam", 0)
			listed(t, m, market.Lua, "sam", "cup", 10)
			must(t, m.GrantItem(ctx, "sam", "pen"))
			before := redistest.Snapshot(t, b.Client)
			for _, kv := range [][2]string{{"maxmemory-policy", "noeviction"}, {"maxmemory", "1"}} {
				must(t, b.Client.ConfigSet(ctx, kv[0], kv[1]).Err())
			}
			_, err = m.Purchase(ctx, s, "ann", "sam", "cup", 10)
			if !redis.IsOOMError(err) {
				t.Errorf("purchase over maxmemory: %v; want the OOM refusal", err)
			}
			_, err = m.List(ctx, s, "sam", "pen", 5)
			if !redis.IsOOMError(err) {
				t.Errorf("listing over maxmemory: %v; want the OOM refusal", err)
			}
			if after := redistest.Snapshot(t, b.Client); !maps.Equal(before, after) {
				t.Errorf("market changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}
