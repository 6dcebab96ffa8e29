package market_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/failure/pausedholder"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// TestLostReleaseDoesNotBlockCoarse kills redis-server (fsync-always
// append-only file) while a coarse purchase holds the market's lock, just
// before its commit, and restarts it: the lock comes back from the file,
// and its release, lost while Redis was down, is sent again once Redis
// answers. The next coarse purchase gets the lock within its own time
// (10 s), long before the lock's one-minute lease would have ended.
func TestLostReleaseDoesNotBlockCoarse(t *testing.T) {
	b := redistest.Real(t, "--appendonly", "yes", "--appendfsync", "always")
	m, err := newMarket(b.Client, "lost", market.WithLockTTL(time.Minute))
	must(t, err)
	user(t, m, "ann", 100)
	user(t, m, "sam", 0)
	listed(t, m, market.Lua, "sam", "cup", 10)
	listed(t, m, market.Lua, "sam", "pen", 10)
	kill := pausedholder.WithBeforeCommit(context.Background(), func(context.Context, string, string) { b.Server.Kill() })
	if _, err := m.Purchase(kill, market.Coarse, "ann", "sam", "cup", 10); err == nil {
		t.Fatal("a purchase whose Redis was killed before its commit succeeded")
	}
	must(t, b.Server.Restart(context.Background()))
	if _, err := m.Purchase(context.Background(), market.Coarse, "ann", "sam", "pen", 10); err != nil {
		t.Fatalf("the purchase after the restart: %v (lock %s, TTL %v)", err,
			markettrace.KeysOf(m).MarketLock(), b.Client.PTTL(context.Background(), markettrace.KeysOf(m).MarketLock()).Val())
	}
}
