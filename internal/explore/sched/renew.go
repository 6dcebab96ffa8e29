package sched

import (
	"context"
	"errors"
	"time"

	"github.com/lockmarket/lockmarket/locking"
)

// renewEvery runs a watchdog of its own for hold h: every d of virtual time
// (the clock's sleeps are dilated) it extends h, until stop is called; the
// work context it returns is cancelled when an extension is refused (the hold
// is lost). stop waits for the watchdog to finish (its extension in flight
// too), on the clock, so that the scheduler sees the wait.
func renewEvery(ctx context.Context, clk Clock, h Held, d time.Duration) (context.Context, func()) {
	work, lost := context.WithCancel(ctx)
	quit, quitNow := context.WithCancel(work)
	done, finished := context.WithCancel(context.Background())
	clk.Go(func() {
		defer finished()
		for {
			if clk.Sleep(quit, clk.c.world.Dilate(d)) != nil {
				return
			}
			if err := h.Extend(ctx); err != nil {
				if errors.Is(err, locking.ErrNotHeld) {
					lost()
				}
				return
			}
		}
	})
	return work, func() {
		quitNow()
		clk.Sleep(done, locking.Forever)
		lost()
	}
}

// renewedHold is a hold that renewEvery extends in the background: the
// critical section's own extend sends nothing.
type renewedHold struct{ Held }

func (renewedHold) Extend(context.Context) error { return nil }

// nest takes the lock a second time, nested in the hold just taken, for
// a reentrant target: one attempt, by the same client. It returns nil
// when the target is not reentrant or the lock refused (the lock does
// not reenter: the client goes on with its first hold).
func (t *Target) nest(ctx context.Context, lk Locker, write bool) (Held, error) {
	if !t.lock().Reentrant {
		return nil, nil
	}
	h, err := lk.Acquire(ctx, write)
	if errors.Is(err, locking.ErrNotAcquired) {
		return nil, nil
	}
	return h, err
}
