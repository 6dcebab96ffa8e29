package mutex

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/explore"
	"github.com/lockmarket/lockmarket/explore/exploretest"
)

// locker is what the two mutexes have in common.
type locker interface {
	TryLock(ctx context.Context) (string, bool, error)
	Unlock(ctx context.Context, token string) error
}

// target runs a mutex of each client's own, made by newMutex, under the
// explorer: each client tries the lock once, says it holds it while it
// does, and releases it. Three clients: the race needs a third to take
// the lock the DEL freed.
func target(name string, newMutex func(c *explore.Client) locker) *explore.Target {
	return &explore.Target{
		Name:    name,
		Clients: 3,
		Client: func(ctx context.Context, c *explore.Client) error {
			m := newMutex(c)
			token, ok, err := m.TryLock(ctx)
			if err != nil || !ok {
				return err
			}
			c.Holding(c.Lease())
			// The work the lock protects goes here.
			c.Released()
			if err := m.Unlock(ctx, token); err != nil && !errors.Is(err, ErrNotHeld) {
				return err
			}
			return nil
		},
	}
}

func key(c *explore.Client) (*redis.Client, string) { return c.Redis(), c.Key("lock:job") }

// TestUnlockRace checks that the explorer finds the race in Mutex.Unlock:
// two clients that believe they hold the lock at once.
func TestUnlockRace(t *testing.T) {
	rdb := exploretest.Redis(t)
	tg := target("check-then-delete mutex", func(c *explore.Client) locker {
		rdb, key := key(c)
		return New(rdb, key, c.Lease())
	})
	res, err := explore.Check(context.Background(), rdb, tg, explore.Options{StopAtFirst: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Counterexamples) == 0 || res.Counterexamples[0].Property != explore.MutualExclusion {
		t.Fatalf("%d schedules, found %v; want the race (mutual_exclusion)", res.Schedules, res.Counterexamples)
	}
	f := res.Counterexamples[0]
	if len(f.Steps) == 0 {
		t.Fatalf("%s: no counterexample", f.Message)
	}
	t.Logf("found after %d schedules: %s\n%s", res.Schedules, f.Message, f)
}

// TestFixedMutex checks every schedule of the fixed mutex within the
// default bounds (one critical section per client, a pause or a crash).
func TestFixedMutex(t *testing.T) {
	rdb := exploretest.Redis(t)
	tg := target("fixed mutex", func(c *explore.Client) locker {
		rdb, key := key(c)
		return NewFixed(rdb, key, c.Lease())
	})
	res := exploretest.Check(t, rdb, tg, explore.Options{})
	if !res.Exhaustive {
		t.Errorf("%d schedules: the search did not cover every schedule", res.Schedules)
	}
}
