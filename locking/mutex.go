// Package locking holds Redis lock recipes that are correct on their own
// terms, each documented with the guarantee it gives and the one it does
// not. The broken recipes they replace live in package locking/flawed.
//
// Mutex is the single-instance lease lock: SET key token NX PX ttl to take
// it, and one Lua script each to release or extend it only while the stored
// token is still the caller's. A lease can expire while its holder is
// paused; see the fencing and renewal types for the remedies.
package locking

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// ErrNotAcquired is returned when a lock is held by someone else: at once by
// TryAcquire, or by Acquire when its context ends first (then it also wraps
// the context's error).
var ErrNotAcquired = errors.New("locking: lock not acquired")

// ErrNotHeld is returned by Release and Extend when the lock is no longer
// held with the caller's token: it expired, and perhaps someone else took it.
var ErrNotHeld = errors.New("locking: lock not held")

// Backoff is an exponential backoff with full jitter: the n-th wait
// (n from 0) is a uniform random duration in [0, min(Max, Min*2^n)], and
// never below Min/2, so a crowd of waiters spreads out instead of
// retrying in step.
type Backoff struct {
	Min, Max time.Duration
}

// DefaultBackoff starts at 1 ms (the interval the book's lock polls at) and
// doubles up to 16 ms.
var DefaultBackoff = Backoff{Min: time.Millisecond, Max: 16 * time.Millisecond}

// Delay returns the wait before retry number n (0-based).
func (b Backoff) Delay(n int) time.Duration {
	if b.Min <= 0 {
		b.Min = time.Millisecond
	}
	if b.Max < b.Min {
		b.Max = b.Min
	}
	d := b.Max
	if n < 30 && b.Min<<n < b.Max {
		d = b.Min << n
	}
	half := b.Min / 2
	if d <= half {
		return d
	}
	return half + time.Duration(rand.Int64N(int64(d-half)+1))
}

// Option configures a Mutex.
type Option func(*Mutex)

// WithBackoff sets how Acquire waits between attempts.
func WithBackoff(b Backoff) Option { return func(m *Mutex) { m.backoff = b } }

// Mutex is a lease lock on one key of one Redis (or one hash slot of a
// cluster). It is cheap: make one per key as needed. It is safe for
// concurrent use; each acquisition returns its own *Lock.
type Mutex struct {
	rdb     redis.UniversalClient
	key     string
	ttl     time.Duration
	backoff Backoff
}

// NewMutex returns a mutex on key whose holds last ttl unless extended.
// ttl is rounded down to whole milliseconds and must be at least 1 ms.
func NewMutex(rdb redis.UniversalClient, key string, ttl time.Duration, opts ...Option) *Mutex {
	m := &Mutex{rdb: rdb, key: key, ttl: ttl, backoff: DefaultBackoff}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Key is the Redis key the mutex uses.
func (m *Mutex) Key() string { return m.key }

// TTL is the lease length of each hold.
func (m *Mutex) TTL() time.Duration { return m.ttl }

// Lock is one hold of a Mutex, identified by a random token.
type Lock struct {
	key   string
	token string
	rdb   redis.UniversalClient
	// Waits is how many attempts failed before this hold was granted.
	Waits int
}

// Key is the locked key.
func (l *Lock) Key() string { return l.key }

// Token is the random value that identifies this hold.
func (l *Lock) Token() string { return l.token }

// NewToken returns a fresh random owner token.
func NewToken() string { return uuid.NewString() }

func checkTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("locking: ttl %v is below 1ms", ttl)
	}
	return nil
}

// TryAcquire makes one attempt. It returns ErrNotAcquired if the lock is
// held by someone else.
func (m *Mutex) TryAcquire(ctx context.Context) (*Lock, error) {
	if err := checkTTL(m.ttl); err != nil {
		return nil, err
	}
	token := NewToken()
	ok, err := m.rdb.SetNX(ctx, m.key, token, m.ttl).Result()
	if err != nil {
		return nil, fmt.Errorf("locking: acquire %s: %w", m.key, err)
	}
	if !ok {
		return nil, ErrNotAcquired
	}
	return &Lock{key: m.key, token: token, rdb: m.rdb}, nil
}

// Acquire retries TryAcquire with the mutex's backoff until it succeeds or
// ctx ends; give ctx a deadline to bound the wait. On success, Lock.Waits
// says how many attempts failed first. When ctx ends first, the error wraps
// both ErrNotAcquired and the context's error.
func (m *Mutex) Acquire(ctx context.Context) (*Lock, error) {
	for n := 0; ; n++ {
		l, err := m.TryAcquire(ctx)
		if err == nil {
			l.Waits = n
			return l, nil
		}
		if !errors.Is(err, ErrNotAcquired) {
			return nil, err
		}
		if err := Sleep(ctx, m.backoff.Delay(n)); err != nil {
			return nil, fmt.Errorf("%w: %s after %d attempts: %w", ErrNotAcquired, m.key, n+1, err)
		}
	}
}

// Sleep waits for d or until ctx ends, whichever is first, and returns
// ctx.Err() in the second case.
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

// Scripts are sent by EVALSHA, falling back to EVAL once per server.
var (
	releaseScript = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then
	return redis.call("del", KEYS[1])
end
return 0`)
	extendScript = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then
	return redis.call("pexpire", KEYS[1], ARGV[2])
end
return 0`)
)

// Release deletes the lock if it still holds this token, in one atomic
// script. It returns ErrNotHeld if the lease had expired (whoever holds it
// now keeps it).
func (l *Lock) Release(ctx context.Context) error {
	n, err := releaseScript.Run(ctx, l.rdb, []string{l.key}, l.token).Int()
	if err != nil {
		return fmt.Errorf("locking: release %s: %w", l.key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// Extend resets the lease to ttl from now if the lock still holds this
// token. It returns ErrNotHeld otherwise.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if err := checkTTL(ttl); err != nil {
		return err
	}
	n, err := extendScript.Run(ctx, l.rdb, []string{l.key}, l.token, ttl.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("locking: extend %s: %w", l.key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
