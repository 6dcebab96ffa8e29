package shipped

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"

	"github.com/lockmarket/lockmarket/explore"
)

// Watchdog is bsm/redislock on the client's Redis, kept alive as its
// users keep it: Obtain with the explorer's lease (no retry), then a
// renewal goroutine, started with the go statement, that refreshes the
// lease every third of it on a time.Ticker until the section is over
// (the section's end taking precedence over a tick).
// renewals counts the refreshes that succeeded, over every schedule.
func Watchdog(name string, renewals *atomic.Int64) *explore.Target {
	return &explore.Target{
		Name:    name,
		Clients: 2,
		Client: func(ctx context.Context, c *explore.Client) error {
			lk, err := redislock.New(c.Redis()).Obtain(ctx, c.Key("lock:job"), c.Lease(), nil)
			if errors.Is(err, redislock.ErrNotObtained) {
				return nil
			}
			if err != nil {
				return err
			}
			c.Holding(c.Lease())
			stop, done := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				tick := time.NewTicker(c.Lease() / 3)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					// The end of the section goes first: a tick that came
					// while a refresh was in flight may be ready beside it,
					// and Go picks among ready cases at random.
					select {
					case <-stop:
						return
					default:
					}
					if err := lk.Refresh(ctx, c.Lease(), nil); err != nil {
						return // lost, or the schedule ended
					}
					renewals.Add(1)
					c.Holding(c.Lease())
				}
			}()
			err = work(ctx, c)
			close(stop)
			<-done
			if err != nil {
				return err
			}
			return release(ctx, c, lk)
		},
		Check: lostUpdate,
	}
}

// Retrying is bsm/redislock's Obtain with the retry strategy its
// documentation shows, every 100 ms up to three times
// (LimitRetry(LinearBackoff(100ms), 3)): the library waits on a
// time.Ticker between tries and under a context deadline of one lease
// that it sets itself. The lease is the explorer's; the section is the
// unfenced work, then Release.
func Retrying(name string) *explore.Target {
	return &explore.Target{
		Name:    name,
		Clients: 2,
		Client: func(ctx context.Context, c *explore.Client) error {
			opts := &redislock.Options{
				RetryStrategy: redislock.LimitRetry(redislock.LinearBackoff(100*time.Millisecond), 3),
			}
			lk, err := redislock.New(c.Redis()).Obtain(ctx, c.Key("lock:job"), c.Lease(), opts)
			if errors.Is(err, redislock.ErrNotObtained) || errors.Is(err, context.DeadlineExceeded) {
				return nil
			}
			if err != nil {
				return err
			}
			c.Holding(c.Lease())
			if err := work(ctx, c); err != nil {
				return err
			}
			return release(ctx, c, lk)
		},
		Check: lostUpdate,
	}
}

// release says the client has let go, then releases lk; a lease that ran
// out meanwhile (ErrLockNotHeld) is no error: the check judges it.
func release(ctx context.Context, c *explore.Client, lk *redislock.Lock) error {
	c.Released()
	if err := lk.Release(ctx); err != nil && !errors.Is(err, redislock.ErrLockNotHeld) {
		return err
	}
	return nil
}
