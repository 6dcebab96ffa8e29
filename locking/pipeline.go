package locking

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// A lock in a transaction's round trips (see the package doc's Mutex):
// AcquirePiped and QueueRelease.

// AcquirePiped takes the lock as Acquire does, but sends each attempt as
// a pipeline on c (typically the *redis.Tx of a WATCH transaction), and
// queues the commands of with (when not nil) in the
// pipeline of the first attempt, behind the acquisition: typically the
// WATCH and the reads of the work the lock guards, so that an uncontended
// acquisition costs no round trip of its own.
//
// The commands queued by with ran under the lock only if the first attempt
// won (the returned Lock's Waits is 0); otherwise they ran while someone
// else held it, and the caller must send them again. Their replies, errors
// included, are the caller's to read: only the acquisition's own reply
// decides the outcome. With WithWakeups, waiters are woken by releases as
// with Acquire; with WithFencing, the hold gets its fence.
func (m *Mutex) AcquirePiped(ctx context.Context, c redis.Cmdable, with func(p redis.Pipeliner)) (*Lock, error) {
	return m.attempts(ctx, func(ctx context.Context, n int) (*Lock, error) { return m.attemptPiped(ctx, c, with, n) })
}

// attemptPiped sends attempt n: the acquisition, and with's commands when
// n is 0. A lost reply is handled as by TryAcquire.
func (m *Mutex) attemptPiped(ctx context.Context, c redis.Cmdable, with func(p redis.Pipeliner), n int) (*Lock, error) {
	l := m.newLock(ctx)
	var set *redis.StatusCmd
	var fenced *redis.Cmd
	_, _ = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		if m.fencing {
			fenced = fencedAcquireScript.Eval(ctx, p, []string{m.key, fenceKey(m.key)}, l.Token(), m.ttl.Milliseconds())
		} else {
			set = p.SetArgs(ctx, m.key, l.Token(), acquireArgs(m.ttl))
		}
		if n == 0 && with != nil {
			with(p)
		}
		return nil
	})
	// Only the acquisition's own reply decides: with's replies are the
	// caller's, and a pipeline that failed as a whole (a broken
	// connection) sets its error on every command.
	if m.fencing {
		fence, err := fenced.Int64()
		l.fence = fence
		return m.outcome(l, fence > 0, err)
	}
	ok, err := acquired(set, l.Token())
	return m.outcome(l, ok, err)
}

// awaitTurn waits after failed attempt n: for the backoff interval, or,
// with wake-ups, until a release is announced (at most that interval).
// *w holds the wake-up subscription, joined on the first wait.
func (m *Mutex) awaitTurn(ctx context.Context, w **waker, n int) error {
	if !m.wakeups {
		return m.backoff.Wait(ctx, n)
	}
	if *w == nil {
		*w = joinWakeups(m.rdb, wakeupChannel(m.key))
		return (*w).awaitReady(ctx, m.backoff.Delay(n))
	}
	t := time.NewTimer(m.backoff.Delay(n))
	defer t.Stop()
	select {
	case <-(*w).wake:
		return nil
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// QueueRelease queues the release of l on a pipeline, typically inside the
// MULTI/EXEC of the commit the lock guarded, so that the commit and the
// release travel in one round trip and apply together (if EXEC is aborted,
// the release did not run either and the lock is still held). The returned
// function, called after the pipeline ran, reports what Release would
// have: nil, ErrNotHeld if the lease had been lost, or the command's error.
// The script is sent as EVAL, so it cannot fail with NOSCRIPT inside a
// transaction.
//
// Like Release, it first stops the watchdog of a hold taken by
// AcquireKeepAlive and waits for it, which cancels the work context (with
// context.Canceled): stopped any later, the watchdog's next extension
// would race the release and could report the lock lost (ErrLockLost)
// after a normal release. So if the release then does not run (an aborted
// EXEC), the lock stays held without renewal until Release or the end of
// its lease.
func (l *Lock) QueueRelease(ctx context.Context, p redis.Pipeliner) func() error {
	if l.stop != nil {
		l.stop()
	}
	var cmd *redis.Cmd
	if l.channel != "" {
		cmd = releasePublishScript.Eval(ctx, p, []string{l.Key()}, l.Token(), l.channel)
	} else {
		cmd = releaseScript.Eval(ctx, p, []string{l.Key()}, l.Token())
	}
	return func() error {
		n, err := cmd.Int()
		if err != nil {
			return fmt.Errorf("locking: release %s: %w", l.Key(), err)
		}
		if n == 0 {
			return ErrNotHeld
		}
		return nil
	}
}
