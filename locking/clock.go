package locking

import (
	"context"
	"math"
	"time"
)

// Clock is where the locks of this package read the time, wait, and start
// the goroutines that wait for them (a watchdog, an extension it sends):
// every reading of the time that a lease estimate is made from, every
// backoff sleep, every timer. A lock finds its clock in the context of the
// call (WithClock); without one it uses the real clock, so nothing changes
// for code that never sets one.
//
// The seam exists for deterministic testing: a scheduler that runs lock
// code under a virtual clock (package explore of this module)
// makes backoff sleeps cost virtual time, counts leases on that time, and
// knows at every moment which goroutine of a client is running and which
// is waiting, because each one was started, and waits, through the clock.
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// Sleep waits for d, or until ctx ends (then it returns ctx.Err(), at
	// once if ctx has already ended).
	Sleep(ctx context.Context, d time.Duration) error
	// Go runs f in a new goroutine.
	Go(f func())
}

// Forever is the duration to give Clock.Sleep to wait until its context
// ends and for nothing else.
const Forever = time.Duration(math.MaxInt64)

type clockKey struct{}

// WithClock returns ctx carrying c: the locks of this package called with
// it (and with contexts derived from it) read the time, sleep and start
// their goroutines through c.
func WithClock(ctx context.Context, c Clock) context.Context {
	return context.WithValue(ctx, clockKey{}, c)
}

// ClockFrom returns the clock ctx carries, or the real clock.
func ClockFrom(ctx context.Context) Clock {
	if c, ok := ctx.Value(clockKey{}).(Clock); ok {
		return c
	}
	return RealClock{}
}

// RealClock is the system's clock: time.Now, a timer, the go statement.
type RealClock struct{}

// Now implements Clock.
func (RealClock) Now() time.Time { return time.Now() }

// Sleep implements Clock.
func (RealClock) Sleep(ctx context.Context, d time.Duration) error {
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

// Go implements Clock.
func (RealClock) Go(f func()) { go f() }

// await blocks until done ends, as a sleep of c, so that a virtual clock
// knows the goroutine is waiting (on another goroutine of the clock) and
// not running.
func await(c Clock, done context.Context) {
	c.Sleep(done, Forever)
}
