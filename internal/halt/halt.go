// Package halt stops waits short: the stop signal of the workers that
// put load on a market (the simulator's and the fault runs'), a channel
// that is closed once, which each worker checks between operations and
// which cuts its pauses short; and Sleep, a wait that ends with its
// context, for everything else that waits (lock retries, the book's lock
// poll, the fault scenarios).
package halt

import (
	"context"
	"time"
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
// ctx.Err() in the second case (at once if ctx has already ended).
func Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
