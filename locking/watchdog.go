package locking

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockmarket/lockmarket/locking/internal/lease"
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
// ErrNotHeld too), or when extensions keep failing or go unanswered (Redis
// unreachable or stalled) until the drift allowance (WithDrift; default
// ttl/100 + 2 ms) before the lease would end: the lease counts from just
// before the acquiring or last successful extending command was sent
// (h.Expires(), when h has it), so the work is cancelled before the lease
// can have ended on the server, unless the server's clock runs faster than
// the allowance covers. It is also cancelled, with context.Canceled, when
// stop is called. Work that writes to a resource should check the context
// just before each write; between that check and the write the lease can
// still run out, so combine renewal with fencing (Lock.Held, FencedWrite)
// where a stale write must never land.
//
// KeepAlive panics, before it starts anything, if ttl is below 1 ms or the
// drift allowance is not in [0, ttl): a configuration that cannot keep a
// lease is a programming error, not a lost lock (see the package doc's
// Configuration).
func KeepAlive(ctx context.Context, h Extender, ttl time.Duration, opts ...KeepAliveOption) (context.Context, func()) {
	k := keepAliveConfig("locking: KeepAlive", ttl, opts)
	work, cancel := context.WithCancelCause(ctx)
	clock := ClockFrom(ctx)
	w := &watchdog{h: h, ttl: ttl, drift: k.drift, interval: max(ttl/3, time.Millisecond),
		clock: clock, ctx: ctx, cancel: cancel, validUntil: clock.Now().Add(ttl)}
	if e, ok := h.(expirer); ok {
		w.validUntil = e.Expires()
	}
	w.validUntil = w.validUntil.Add(-k.drift)
	// quit ends the watchdog's waits: stop cancels it, and so does the end
	// of the work. done ends when the watchdog has returned.
	quit, quitNow := context.WithCancel(work)
	done, finished := context.WithCancel(context.Background())
	clock.Go(func() {
		defer finished()
		w.run(quit)
	})
	var once sync.Once
	stop := func() {
		once.Do(func() {
			quitNow()
			await(clock, done)
			cancel(context.Canceled)
		})
	}
	return work, stop
}

// keepAliveConfig is the watchdog's configuration for a lease of ttl with
// opts; it panics, naming fn, if it cannot keep the lease.
func keepAliveConfig(fn string, ttl time.Duration, opts []KeepAliveOption) keepAlive {
	lease.MustTTL(fn, ttl)
	k := keepAlive{drift: lease.Drift(ttl)}
	for _, o := range opts {
		o(&k)
	}
	if k.drift < 0 || k.drift >= ttl {
		panic(fmt.Sprintf("%s: drift allowance %v leaves nothing of the %v lease", fn, k.drift, ttl))
	}
	return k
}

// watchdog is the goroutine of KeepAlive: it extends h's lease to ttl
// every interval, and cancels the work (cancel) when the lease is lost or
// about to run out (validUntil, the lease's end less its drift allowance)
// without an answer.
type watchdog struct {
	h                    Extender
	ttl, drift, interval time.Duration
	clock                Clock
	ctx                  context.Context // the caller's, for the extensions
	cancel               context.CancelCauseFunc
	validUntil           time.Time
}

// run extends the lease until quit ends or the lease is lost.
func (w *watchdog) run(quit context.Context) {
	// A hold whose lease ends sooner than one interval is renewed when it
	// ends, that is, found lost.
	wait := min(w.interval, max(w.validUntil.Sub(w.clock.Now()), 0))
	for {
		if w.clock.Sleep(quit, wait) != nil {
			return
		}
		var ok bool
		if wait, ok = w.extend(); !ok {
			return
		}
	}
}

// extend sends one extension and judges its answer: it returns how long
// to wait before the next, or false when it cancelled the work.
func (w *watchdog) extend() (time.Duration, bool) {
	sent := w.clock.Now()
	if !sent.Before(w.validUntil) {
		w.cancel(fmt.Errorf("%w: lease (less its drift allowance) ran out before it could be extended", ErrLockLost))
		return 0, false
	}
	answered, err := w.send(sent)
	switch {
	case !answered:
		return 0, false
	case err == nil:
		w.validUntil = sent.Add(w.ttl - w.drift)
		return w.interval, true
	case errors.Is(err, ErrNotHeld):
		w.cancel(fmt.Errorf("%w: extension refused: %w", ErrLockLost, err))
		return 0, false
	}
	// Unreachable or slow: try again soon, until validUntil.
	left := w.validUntil.Sub(w.clock.Now())
	if left <= 0 {
		w.cancel(fmt.Errorf("%w: %w", ErrLockLost, err))
		return 0, false
	}
	return min(max(w.interval/4, time.Millisecond), left), true
}

// send runs one extension, sent at sent, in its own goroutine, so that a
// stalled server cannot hold the watchdog past validUntil: clients that do
// not honour context deadlines (go-redis without ContextTimeoutEnabled)
// block until their read timeout. Without an answer by validUntil it
// cancels the work, waits for the extension to return, and returns false.
func (w *watchdog) send(sent time.Time) (answered bool, err error) {
	ectx, ecancel := context.WithDeadline(context.WithoutCancel(w.ctx), w.validUntil)
	defer ecancel()
	reply, replied := context.WithCancel(context.Background())
	res := make(chan error, 1)
	w.clock.Go(func() {
		defer replied()
		res <- w.h.Extend(ectx, w.ttl)
	})
	if w.clock.Sleep(reply, w.validUntil.Sub(sent)) == nil {
		w.cancel(fmt.Errorf("%w: no answer from Redis within the lease (less its drift allowance)", ErrLockLost))
		await(w.clock, reply)
		return false, nil
	}
	// The sleep ended with the reply, or because the clock stopped the
	// watchdog (then the extension ends at once too): the answer is taken
	// over a channel, never from a variable the extension may still write.
	return true, <-res
}

// AcquireKeepAlive acquires the mutex like Acquire and starts a watchdog
// (KeepAlive, with opts) that extends the lease every TTL/3. It returns
// the hold and the context the work must run under: that context is
// cancelled with cause ErrLockLost as soon as the lease is lost, or is
// about to run out without an answer from Redis. Releasing the hold
// (Release, or QueueRelease) stops the watchdog, and waits for it, before
// the release is sent. Like KeepAlive, it panics if opts cannot keep the
// mutex's lease, before it acquires anything.
func (m *Mutex) AcquireKeepAlive(ctx context.Context, opts ...KeepAliveOption) (*Lock, context.Context, error) {
	keepAliveConfig("locking: AcquireKeepAlive", m.ttl, opts)
	l, err := m.Acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	work, stop := KeepAlive(ctx, l, m.ttl, opts...)
	l.stop = stop
	return l, work, nil
}
