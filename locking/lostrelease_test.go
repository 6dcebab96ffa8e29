package locking_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/locking"
)

// TestLostReleaseIsRetried: a release sent while Redis is down (killed
// with an append-only file, so the lock comes back when it restarts) is
// sent again in the background once Redis answers: the lock does not
// block everyone until its lease ends.
func TestLostReleaseIsRetried(t *testing.T) {
	for _, kind := range []struct {
		name string
		opts []locking.MutexOption
	}{
		{"plain", nil},
		{"wakeups", []locking.MutexOption{locking.WithWakeups()}},
	} {
		t.Run(kind.name, func(t *testing.T) {
			b := redistest.Real(t, "--appendonly", "yes", "--appendfsync", "always")
			ctx := context.Background()
			const key, lease = "{lost}:lock", time.Minute
			c := redis.NewClient(&redis.Options{Addr: b.Addr(), MaxRetries: -1})
			t.Cleanup(func() { c.Close() })
			m := locking.NewMutex(c, key, lease, kind.opts...)
			l, err := m.TryAcquire(ctx)
			must(t, err)
			b.Server.Kill()
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			err = l.Release(rctx)
			cancel()
			if err == nil {
				t.Fatal("a release with Redis down succeeded")
			}
			must(t, b.Server.Restart(ctx))
			// Settle waits for the background release; it gives up, and
			// fails the test, long before the lease would end.
			sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			must(t, m.Settle(sctx))
			if n := b.Client.Exists(ctx, key).Val(); n != 0 {
				t.Fatalf("the lock is still held after Redis came back (TTL %v): the release was not retried",
					b.Client.PTTL(ctx, key).Val())
			}
		})
	}
}
