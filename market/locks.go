package market

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/locking"
)

// ErrLockLost is returned by a fenced Coarse or Fine operation (see
// WithFencing) whose lock had expired or passed to another client before
// its commit: nothing was written. It wraps locking.ErrNotHeld.
var ErrLockLost = fmt.Errorf("lock lost before commit: %w", locking.ErrNotHeld)

// Lease is one hold of the lock a Coarse or Fine operation runs under, as
// returned by a LockFunc.
type Lease struct {
	// Key is the lock's Redis key.
	Key string
	// Token is the value stored at Key while this lease holds the lock;
	// empty if the lock stores none (then WithFencing cannot check it).
	Token string
	// Waits is how many attempts failed before the lock was taken.
	Waits int
	// Release gives the lock back; it returns locking.ErrNotHeld if the
	// lease had been lost. Nil means there is nothing to release.
	Release func(ctx context.Context) error
}

// LockFunc takes the lock on key with a lease of ttl, waiting until ctx
// ends; it returns an error wrapping locking.ErrNotAcquired when it gave
// up.
type LockFunc func(ctx context.Context, key string, ttl time.Duration) (Lease, error)

// WithLockFunc makes the Coarse and Fine strategies take their locks with
// f instead of a locking.Mutex, e.g. to run the market under one of the
// flawed recipes of package locking/flawed and watch what breaks.
func WithLockFunc(f LockFunc) Option { return func(m *Market) { m.lockFunc = f } }

// WithFencing makes the Coarse and Fine strategies commit only while their
// lock is still theirs: the commit's transaction also WATCHes the lock key
// and first checks that it still holds the lease's token, so a holder that
// was paused past its lease (and perhaps replaced by another) has its
// write refused with ErrLockLost instead of applying it beside the new
// holder's. Leases without a token are not fenced.
func WithFencing() Option { return func(m *Market) { m.fencing = true } }

func (m *Market) fenced(l Lease) bool { return m.fencing && l.Token != "" }

// mutexLock is the default LockFunc: a locking.Mutex with the market's
// backoff.
func (m *Market) mutexLock(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	l, err := locking.NewMutex(m.rdb, key, ttl, locking.WithBackoff(m.backoff)).Acquire(ctx)
	if err != nil {
		return Lease{}, err
	}
	return Lease{Key: key, Token: l.Token(), Waits: l.Waits, Release: l.Release}, nil
}

// checkLease fails with ErrLockLost unless the lock key, WATCHed by tx,
// still holds the lease's token.
func checkLease(ctx context.Context, tx *redis.Tx, l Lease) error {
	v, err := tx.Get(ctx, l.Key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if v != l.Token {
		return fmt.Errorf("%s: %w", l.Key, ErrLockLost)
	}
	return nil
}
