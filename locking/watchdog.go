package locking

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrLockLost is the cause (context.Cause) of a work context cancelled by a
// watchdog: an extension was refused because the lease had passed to
// someone else or expired, or Redis could not be reached before the lease
// ran out.
var ErrLockLost = errors.New("locking: lock lost")

// Extender is a hold whose lease can be renewed: every hold type of this
// package and of locking/queue implements it.
type Extender interface {
	// Extend resets the lease to ttl from now, or returns ErrNotHeld when
	// the hold is gone.
	Extend(ctx context.Context, ttl time.Duration) error
}

// expirer is implemented by holds that know when their lease ends.
type expirer interface{ Expires() time.Time }

// KeepAlive runs a watchdog that extends h's lease to ttl about every ttl/3
// while the work runs. It returns a context derived from ctx for the work,
// and stop, which stops the watchdog and waits for it to finish (call it
// before releasing the lock; calling it more than once is harmless).
//
// The work context is cancelled with cause ErrLockLost (see context.Cause)
// as soon as an extension returns ErrNotHeld (then the cause wraps
// ErrNotHeld too), or when extensions keep
// failing (Redis unreachable or stalled) until the lease would have run
// out. It is also cancelled, with context.Canceled, when stop is called.
// Work that writes to a resource should check the context just before each
// write; between that check and the write the lease can still run out, so
// combine renewal with fencing (Lock.Held) where a stale write must never
// land.
func KeepAlive(ctx context.Context, h Extender, ttl time.Duration) (context.Context, func()) {
	work, cancel := context.WithCancelCause(ctx)
	if err := checkTTL(ttl); err != nil {
		cancel(fmt.Errorf("%w: %w", ErrLockLost, err))
		return work, func() {}
	}
	validUntil := time.Now().Add(ttl)
	if e, ok := h.(expirer); ok {
		validUntil = e.Expires()
	}
	interval := max(ttl/3, time.Millisecond)
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTimer(interval)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-work.Done():
				return
			case <-t.C:
			}
			sent := time.Now()
			if !sent.Before(validUntil) {
				cancel(fmt.Errorf("%w: lease ran out before it could be extended", ErrLockLost))
				return
			}
			// The extension runs in its own goroutine so that a stalled
			// server cannot hold the watchdog past the lease: clients that
			// do not honour context deadlines (go-redis without
			// ContextTimeoutEnabled) block until their read timeout.
			ectx, ecancel := context.WithDeadline(context.WithoutCancel(ctx), validUntil)
			res := make(chan error, 1)
			go func() { res <- h.Extend(ectx, ttl) }()
			expiry := time.NewTimer(time.Until(validUntil))
			var err error
			select {
			case err = <-res:
			case <-expiry.C:
				cancel(fmt.Errorf("%w: no answer from Redis before the lease ran out", ErrLockLost))
				<-res
				ecancel()
				return
			}
			expiry.Stop()
			ecancel()
			switch {
			case err == nil:
				validUntil = sent.Add(ttl)
				t.Reset(interval)
			case errors.Is(err, ErrNotHeld):
				cancel(fmt.Errorf("%w: extension refused: %w", ErrLockLost, err))
				return
			default:
				// Unreachable or slow: try again soon, until validUntil.
				left := time.Until(validUntil)
				if left <= 0 {
					cancel(fmt.Errorf("%w: %w", ErrLockLost, err))
					return
				}
				t.Reset(min(max(interval/4, time.Millisecond), left))
			}
		}
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			close(quit)
			<-done
			cancel(context.Canceled)
		})
	}
	return work, stop
}

// AcquireKeepAlive acquires the mutex like Acquire and starts a watchdog
// (KeepAlive) that extends the lease every TTL/3. It returns the hold and
// the context the work must run under: that context is cancelled with
// cause ErrLockLost as soon as the lease is lost. The hold's Release stops
// the watchdog, and waits for it, before it releases the lock.
func (m *Mutex) AcquireKeepAlive(ctx context.Context) (*Lock, context.Context, error) {
	l, err := m.Acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	work, stop := KeepAlive(ctx, l, m.ttl)
	l.stop = stop
	return l, work, nil
}
