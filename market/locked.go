package market

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/faultpoint"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/watchtx"
)

// Lease is one hold of the lock a Coarse or Fine operation runs under, as
// returned by a LockFunc.
type Lease struct {
	// Token is the value stored at the lock's key while this lease holds
	// the lock; empty if the lock stores none (then WithFencing cannot
	// check it).
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
// f instead of the default locking.Mutex, e.g. to run the market under one
// of the flawed recipes of package locking/flawed and watch what breaks.
// The operation is otherwise the same; only the default mutex can send its
// acquisition with the reads and its release with the commit, so f costs
// the round trips of its own commands.
func WithLockFunc(f LockFunc) Option { return func(m *Market) { m.lockFunc = f } }

// WithFencing makes the Coarse and Fine strategies commit only while their
// lock is still theirs: the commit's transaction also WATCHes the lock key
// and first checks that it still holds the lease's token, so a holder that
// was paused past its lease (and perhaps replaced by another) has its
// write refused with locking.ErrLockLost instead of applying it beside the
// new holder's. Leases without a token are not fenced.
func WithFencing() Option { return func(m *Market) { m.fencing = true } }

// hold is the lock an operation runs under, however it was taken.
type hold struct {
	token string
	waits int
	// readsSent is true when the reads queued with the acquisition
	// travelled with the winning attempt, so they ran under the lock.
	readsSent bool
	// queueRelease queues the release inside the commit's transaction;
	// nil when the lock can only be released by release, afterwards.
	queueRelease func(ctx context.Context, p redis.Pipeliner) func() error
	release      func(ctx context.Context) error
}

// lockKey is the lock of a Coarse (the market's) or Fine (the listing's)
// operation.
func (m *Market) lockKey(s Strategy, item, seller string) string {
	if s == Fine {
		return m.keys.ItemLock(item, seller)
	}
	return m.keys.MarketLock()
}

// takeLock takes the lock on key: by default a locking.Mutex, whose first
// attempt travels with the commands first queues (the WATCH and the
// reads); with WithLockFunc, the market's LockFunc.
func (m *Market) takeLock(ctx context.Context, tx *redis.Tx, key string, first func(p redis.Pipeliner)) (hold, error) {
	if m.lockFunc != nil {
		l, err := m.lockFunc(ctx, key, m.lockTTL)
		if err != nil {
			return hold{}, err
		}
		return hold{token: l.Token, waits: l.Waits, release: l.Release}, nil
	}
	mu := locking.NewMutex(m.rdb, key, m.lockTTL, locking.WithBackoff(m.backoff))
	if m.form == BookClient {
		// The book form sends the acquisition on its own and the release
		// after the commit.
		l, err := mu.Acquire(ctx)
		if err != nil {
			return hold{}, err
		}
		return hold{token: l.Token(), waits: l.Waits, release: l.Release}, nil
	}
	l, err := mu.AcquirePiped(ctx, tx, first)
	if err != nil {
		return hold{}, err
	}
	return hold{token: l.Token(), waits: l.Waits, readsSent: l.Waits == 0,
		queueRelease: l.QueueRelease, release: l.Release}, nil
}

// runLocked is the Coarse and Fine strategies (book 6.2.3, 6.2.4): take
// the lock on key, WATCH watch (and, under fencing, the lock key) and
// read; check; then MULTI, the writes, the lock's release, EXEC. With the
// default mutex the acquisition, the WATCH and the reads travel in the
// first round trip and the release in the commit's, so an uncontended
// operation costs two round trips, and the commit and the release apply
// together: if EXEC is aborted the release did not run either, and the
// lock is still held for the retry. In the book form (ClientForm) the
// lock is taken on its own, the WATCH and each read are round trips of
// their own, and the lock is released after the commit: with the book's
// lock (supplied by WithLockFunc), seven round trips for an uncontended
// listing, nine for a purchase.
func (m *Market) runLocked(ctx context.Context, s Strategy, name, key string, o op, cost *Cost, watch ...string) error {
	var h hold
	held, released := false, false
	defer func() {
		if held && !released && h.release != nil {
			// Release even if ctx has ended, but do not wait long for it.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
			if err := h.release(rctx); errors.Is(err, locking.ErrNotHeld) {
				cost.LockLost = true
			}
		}
	}()
	fenced := m.fencing // known before the acquisition for the default mutex
	var fence *redis.StringCmd
	watched := func() []string {
		if fenced {
			return append(slices.Clip(watch), key)
		}
		return watch
	}
	// read is the op's read steps, the fence's GET in the first.
	read := func(step func(queue func(p redis.Pipeliner))) {
		first := true
		o.read(ctx, func(queue func(p redis.Pipeliner)) {
			step(func(p redis.Pipeliner) {
				if first && fenced {
					fence = p.Get(ctx, key)
				}
				first = false
				queue(p)
			})
		})
	}
	err := watchtx.Conn(ctx, m.rdb, key, func(tx *redis.Tx) error {
		var err error
		h, err = m.takeLock(ctx, tx, key, func(p redis.Pipeliner) {
			if keys := watched(); len(keys) > 0 {
				watchtx.Watch(ctx, p, keys...)
			}
			read(func(queue func(p redis.Pipeliner)) { queue(p) })
		})
		if err != nil {
			if errors.Is(err, locking.ErrNotAcquired) {
				return fmt.Errorf("%w: %w", ErrContended, err)
			}
			return err
		}
		held = true
		cost.LockWaits = h.waits
		fenced = m.fencing && h.token != ""
		if !h.readsSent {
			// Watch afresh: changes seen by a WATCH of the first attempt
			// while we waited must not abort our EXEC.
			if err := m.watchAndRead(ctx, tx, watched(), true, read, nil); err != nil {
				return err
			}
		}
		for {
			var err error
			if fenced && fence.Val() != h.token {
				err = fmt.Errorf("%s: %w: %w", key, locking.ErrLockLost, locking.ErrNotHeld)
			} else {
				err = o.check()
			}
			if err != nil {
				if h.queueRelease == nil {
					return err // Conn unwatches; the deferred release follows
				}
				// Give the lock back in the same round trip as the UNWATCH.
				var rel func() error
				_, perr := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
					watchtx.Unwatch(ctx, p)
					rel = h.queueRelease(ctx, p)
					return nil
				})
				if perr == nil {
					released = true
					if errors.Is(rel(), locking.ErrNotHeld) {
						cost.LockLost = true
					}
				}
				return watchtx.Unwatched(err)
			}
			faultpoint.BeforeCommit(ctx, string(s), name)
			var rel func() error
			cmds, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				o.write(ctx, p)
				if h.queueRelease != nil {
					rel = h.queueRelease(ctx, p)
				}
				return nil
			})
			err = execErr(cmds, err)
			if err == nil {
				if rel != nil {
					released = true
					if errors.Is(rel(), locking.ErrNotHeld) {
						cost.LockLost = true
					}
				}
				return nil
			}
			if !errors.Is(err, redis.TxFailedErr) {
				return err
			}
			// A watched key changed: the buyer, or under fencing the lock.
			cost.Retries++
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := m.watchAndRead(ctx, tx, watched(), false, read, nil); err != nil {
				return err
			}
		}
	})
	if errors.Is(err, locking.ErrLockLost) {
		cost.LockLost = true
	}
	return contended(ctx, cost.Retries, err)
}
