// Package halt is the stop signal of the workers that put load on a
// market (the simulator's and the fault runs'): a channel that is closed
// once, which each worker checks between operations and which cuts its
// pauses short.
package halt

import "time"

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
