package sched

// The clock of clients that run in a testing/synctest bubble: how the
// explorer advances it, and ends the bubble.

import (
	"slices"
	"time"
)

// end ends the agent, and with it the bubble, once the clients'
// goroutines have: it waits a while for the bubble to close.
func (b *bubble) end() {
	b.set(false, true)
	t := time.NewTimer(endAfterFailure)
	defer t.Stop()
	select {
	case <-b.done:
	case <-t.C:
	}
}

// timerHorizon is how far the clock may run at most when it runs until
// a timer of the clients' code fires: twice the longest lease.
func (e *Explorer) timerHorizon() time.Duration {
	return 2 * max(e.model.TTL, slices.Max(append([]time.Duration{0}, e.model.TTLs...)))
}

// bubbleAdvance, for clients in a bubble, moves its clock towards the
// virtual time at, and returns where it stopped: at, or earlier where a
// timer of the clients' code fired (fired). Without a bubble it returns
// at.
func (e *Explorer) bubbleAdvance(w *world, at time.Duration) (time.Duration, bool, error) {
	b := w.bubble
	w.mu.Lock()
	now := w.Now
	w.mu.Unlock()
	if b == nil || at <= now {
		return at, false, nil
	}
	stuck := time.NewTimer(w.stuckAfter)
	defer stuck.Stop()
	select {
	case b.jobs <- w.Dilate(at):
	case <-b.done:
		return at, false, nil
	case <-stuck.C:
		return at, false, w.stuckError()
	}
	var landed time.Duration
	select {
	case landed = <-b.landed:
	case <-stuck.C:
		return at, false, w.stuckError()
	}
	v := max(w.Undilate(landed), now)
	if v >= at {
		return at, false, nil
	}
	w.mu.Lock()
	w.timersFired++
	w.mu.Unlock()
	return v, true, nil
}
