// Package halt stops waits short: the stop signal of the workers that
// put load on a market (the simulator's and the fault runs'), a channel
// that is closed once, which each worker checks between operations and
// which cuts its pauses short; and Sleep, a wait that ends with its
// context, for the fault scenarios' waits.
package halt

import (
	"context"
	"time"

	"github.com/lockmarket/lockmarket/locking"
)

// Requested reports whether stop has been closed.
func Requested(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// Pause sleeps for d or until stop is closed, whichever is first.
func Pause(d time.Duration, stop <-chan struct{}) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-stop:
	}
}

// Sleep waits for d or until ctx ends, whichever is first, and returns
// ctx.Err() in the second case (at once if ctx has already ended). It is
// the real clock's sleep (locking.RealClock), for the waits of the fault
// scenarios, which run in real time whatever clock a context carries.
func Sleep(ctx context.Context, d time.Duration) error {
	return locking.RealClock{}.Sleep(ctx, d)
}
