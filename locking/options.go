package locking

import (
	"fmt"
	"time"
)

// Each lock kind takes its own option type, and an option is offered only
// to the kinds it applies to, so a constructor given an option that does
// not apply to it (fencing for an RWMutex, say) does not compile.

// MutexOption configures a Mutex (NewMutex): WithBackoff, WithFencing,
// WithWakeups.
type MutexOption interface{ applyMutex(*Mutex) }

// RWMutexOption configures an RWMutex (NewRWMutex): WithBackoff.
type RWMutexOption interface{ applyRWMutex(*RWMutex) }

// ReentrantMutexOption configures a ReentrantMutex (NewReentrantMutex):
// WithBackoff.
type ReentrantMutexOption interface {
	applyReentrantMutex(*ReentrantMutex)
}

// RedlockMutexOption configures a RedlockMutex (NewRedlockMutex):
// WithBackoff, WithNodeTimeout.
type RedlockMutexOption interface {
	applyRedlockMutex(*RedlockMutex)
}

// BackoffOption sets how Acquire waits between attempts. It applies to
// every kind that retries by polling: Mutex, RWMutex, ReentrantMutex and
// RedlockMutex.
type BackoffOption struct{ b Backoff }

// WithBackoff sets how Acquire waits between attempts.
func WithBackoff(b Backoff) BackoffOption { return BackoffOption{b} }

func (o BackoffOption) applyMutex(m *Mutex)                   { m.backoff = o.b }
func (o BackoffOption) applyRWMutex(rw *RWMutex)              { rw.backoff = o.b }
func (o BackoffOption) applyReentrantMutex(r *ReentrantMutex) { r.backoff = o.b }
func (o BackoffOption) applyRedlockMutex(r *RedlockMutex)     { r.backoff = o.b }

// mutexOption is an option that applies to Mutex only.
type mutexOption func(*Mutex)

func (o mutexOption) applyMutex(m *Mutex) { o(m) }

// WithFencing makes every acquisition also increment a counter stored next
// to the lock key (in the same hash slot), in the same script as the SET,
// and hand the new value out as Lock.Fence: a number strictly greater than
// any earlier holder's of the same key, which a resource can use to refuse
// writes from an older holder (FencedWrite).
func WithFencing() MutexOption { return mutexOption(func(m *Mutex) { m.fencing = true }) }

// WithWakeups makes Release publish on a channel named after the lock key
// and Acquire wait on that channel between attempts, so a waiter is woken
// as soon as the lock is released instead of sleeping out its backoff. The
// backoff still bounds each wait, so a lost message costs one backoff
// interval, never a hang. Every mutex on one key should use the option, or
// the releases of those without it wake nobody.
func WithWakeups() MutexOption { return mutexOption(func(m *Mutex) { m.wakeups = true }) }

// redlockOption is an option that applies to RedlockMutex only.
type redlockOption func(*RedlockMutex)

func (o redlockOption) applyRedlockMutex(r *RedlockMutex) { o(r) }

// WithNodeTimeout bounds each per-server command of a RedlockMutex
// (default: ttl/100, at least 5 ms and at most 500 ms). It must be small
// compared to the lease, so that a dead server does not eat the validity
// time: WithNodeTimeout panics if d is not positive, and NewRedlockMutex
// if d is not below the lease.
func WithNodeTimeout(d time.Duration) RedlockMutexOption {
	if d <= 0 {
		panic(fmt.Sprintf("locking: WithNodeTimeout: %v is not positive", d))
	}
	return redlockOption(func(r *RedlockMutex) { r.nodeTimeout, r.nodeTimeoutSet = d, true })
}

// KeepAliveOption configures KeepAlive and Mutex.AcquireKeepAlive:
// WithDrift.
type KeepAliveOption func(*keepAlive)

// keepAlive is the watchdog's configuration.
type keepAlive struct {
	drift time.Duration
}

// WithDrift sets the watchdog's drift allowance: the work context is
// cancelled that long before the lease the watchdog knows of ends, to
// allow for the server's clock running faster than the client's and for
// timers firing late. The default is ttl/100 + 2 ms, the allowance of the
// Redlock validity formula (RedlockMutex.Drift). It must be at least 0
// and below ttl: KeepAlive panics otherwise.
func WithDrift(d time.Duration) KeepAliveOption {
	return func(k *keepAlive) { k.drift = d }
}
