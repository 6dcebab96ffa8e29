package workload

import "time"

// The workers' stop signal is a channel that is closed once: each worker
// checks it between operations, and it cuts their pauses short.

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
