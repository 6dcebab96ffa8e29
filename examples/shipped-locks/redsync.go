package shipped

import (
	"context"
	"errors"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"

	"github.com/lockmarket/lockmarket/explore"
)

// Redsync is go-redsync/redsync v4 on the client's Redis, with the
// explorer's lease. With context false it locks as redsync's README
// shows, Lock() and Unlock() with the default tries (32, 50 to 250 ms
// apart on a timer); with context true, LockContext and UnlockContext
// with the client's context and tries tries. redsync sends each command
// from a goroutine of its own, one per pool.
func Redsync(name string, context_ bool, tries int) *explore.Target {
	return &explore.Target{
		Name:    name,
		Clients: 2,
		Client: func(ctx context.Context, c *explore.Client) error {
			rs := redsync.New(goredis.NewPool(c.Redis()))
			opts := []redsync.Option{redsync.WithExpiry(c.Lease())}
			if context_ {
				opts = append(opts, redsync.WithTries(tries))
			}
			m := rs.NewMutex(c.Key("lock:job"), opts...)
			var err error
			if context_ {
				err = m.LockContext(ctx)
			} else {
				err = m.Lock()
			}
			var taken *redsync.ErrTaken
			if errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken) {
				return nil // not obtained
			}
			if err != nil {
				return err
			}
			c.Holding(c.Lease())
			if err := work(ctx, c); err != nil {
				return err
			}
			c.Released()
			if context_ {
				_, err = m.UnlockContext(ctx)
			} else {
				_, err = m.Unlock()
			}
			if errors.Is(err, redsync.ErrLockAlreadyExpired) || errors.As(err, &taken) {
				return nil
			}
			return err
		},
		Check: lostUpdate,
	}
}
