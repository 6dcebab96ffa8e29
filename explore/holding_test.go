package explore_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/lockmarket/lockmarket/explore"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/redis/go-redis/v9"
)

// extendScript extends the lock only while it holds the caller's token.
var extendScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`)

// watchdogLock is a correct lock with a watchdog: SET NX PX with the
// client's token, a goroutine that extends it a third of the lease later
// and says it holds it again, and a compare-and-delete release. The
// watchdog is stopped once the lock is released: a renewal it sent may
// run, and its reply land, after Released. n counts the renewals that
// succeeded over every schedule, and those whose reply landed after
// Released.
func watchdogLock(n *renewals) *explore.Target {
	return &explore.Target{
		Name: "set nx with a watchdog",
		Client: func(ctx context.Context, c *explore.Client) error {
			rdb, key, token := c.Redis(), c.Key("lock:job"), "token-"+c.Name()
			ok, err := rdb.SetNX(ctx, key, token, c.Lease()).Result()
			if err != nil || !ok {
				return err
			}
			c.Holding(c.Lease())
			stop, cancel := context.WithCancel(ctx)
			defer cancel()
			var released atomic.Bool
			c.Go(func() {
				if c.Sleep(stop, c.Lease()/3) != nil {
					return
				}
				ok, err := extendScript.Run(ctx, rdb, []string{key}, token,
					c.Lease().Milliseconds()).Bool()
				if err != nil || !ok {
					return
				}
				n.all.Add(1)
				if released.Load() {
					n.late.Add(1)
				}
				c.Holding(c.Lease())
			})
			released.Store(true)
			c.Released()
			return releaseScript.Run(ctx, rdb, []string{key}, token).Err()
		},
	}
}

// renewals counts a watchdog's renewals that succeeded: all of them, and
// those whose reply landed after Released.
type renewals struct{ all, late atomic.Int64 }

// twiceInOneCall takes the lock twice in one call of Client, the second
// time with a bare SET that takes it from whoever holds it: the second
// Holding, from the client's own goroutine after Released, is a hold.
func twiceInOneCall() *explore.Target {
	return &explore.Target{
		Name: "takes the lock twice, the second time blindly",
		Client: func(ctx context.Context, c *explore.Client) error {
			rdb, key, token := c.Redis(), c.Key("lock:job"), "token-"+c.Name()
			ok, err := rdb.SetNX(ctx, key, token, c.Lease()).Result()
			if err != nil || !ok {
				return err
			}
			c.Holding(c.Lease())
			c.Released()
			if err := releaseScript.Run(ctx, rdb, []string{key}, token).Err(); err != nil {
				return err
			}
			if err := rdb.Set(ctx, key, token, c.Lease()).Err(); err != nil {
				return err
			}
			c.Holding(c.Lease())
			c.Released()
			return releaseScript.Run(ctx, rdb, []string{key}, token).Err()
		},
	}
}

// TestHoldingAfterReleased: a watchdog's renewal whose Holding lands
// after Released renews nothing, so a correct lock with a watchdog keeps
// mutual exclusion through the schedules where it does; a hold taken anew
// by the client's own goroutine after Released still counts.
func TestHoldingAfterReleased(t *testing.T) {
	rdb, stop := redistest.Embedded()
	defer stop()
	var n renewals
	for _, tc := range []struct {
		target *explore.Target
		broken bool
	}{
		{watchdogLock(&n), false},
		{twiceInOneCall(), true},
	} {
		t.Run(tc.target.Name, func(t *testing.T) {
			res, err := explore.Check(context.Background(), rdb, tc.target,
				explore.Options{NoFaults: true})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Exhaustive || res.Diverged > 0 || len(res.Unsteady) > 0 {
				t.Fatalf("exhaustive %v, %d diverged, %d unsteady: no verdict",
					res.Exhaustive, res.Diverged, len(res.Unsteady))
			}
			t.Logf("%d schedules", res.Schedules)
			if got := len(res.Counterexamples) > 0; got != tc.broken {
				t.Errorf("broken %v, want %v:\n%v", got, tc.broken, res.Counterexamples)
			}
		})
	}
	if n.late.Load() == 0 {
		t.Errorf("of %d renewals, none landed after Released", n.all.Load())
	}
}
