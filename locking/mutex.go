// Package locking holds Redis lock recipes that are correct on their own
// terms, each documented with the guarantee it gives and the one it does
// not. The broken recipes they replace live in package locking/flawed.
//
//   - Mutex is the single-instance lease lock: SET key token NX PX ttl to
//     take it, and one Lua script each to release or extend it only while
//     the stored token is still the caller's. Options add fencing tokens
//     (WithFencing) and pub/sub wake-ups for waiters (WithWakeups).
//   - KeepAlive and Mutex.Hold renew a lease in the background and cancel
//     the holder's work context when the lease is lost.
//   - Reentrant is a hash of owner -> hold count, the owner carried in a
//     context.Context (WithOwner).
//   - RWMutex admits many readers or one writer, each releasing only its own
//     hold, with waiting writers served before new readers.
//   - Redlock takes a lease on a majority of independent Redis servers.
//   - QueueMutex is a FIFO lease lock whose release hands the lock to the
//     next waiter inside Redis; waiters block in BLPOP instead of polling.
//
// A lease can expire while its holder is paused (a GC pause, a stalled
// network): then two clients believe they hold it. Renewal makes that
// rarer; only a check at the resource, against the lock key or its fencing
// token, rules it out (see Lock.Held and Lock.Fence).
package locking

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
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

// WithFencing makes every acquisition also increment a counter stored next
// to the lock key (FenceKey), in the same script as the SET, and hand the
// new value out as Lock.Fence: a number strictly greater than any earlier
// holder's of the same key, which a resource can use to refuse writes from
// an older holder.
func WithFencing() Option { return func(m *Mutex) { m.fencing = true } }

// WithWakeups makes Release publish on the lock's channel (WakeupChannel)
// and Acquire wait on that channel between attempts, so a waiter is woken
// as soon as the lock is released instead of sleeping out its backoff. The
// backoff still bounds each wait, so a lost message costs one backoff
// interval, never a hang. Every mutex on one key should use the option, or
// the releases of those without it wake nobody.
func WithWakeups() Option { return func(m *Mutex) { m.wakeups = true } }

// Mutex is a lease lock on one key of one Redis (or one hash slot of a
// cluster). It is cheap: make one per key as needed. It is safe for
// concurrent use; each acquisition returns its own *Lock.
type Mutex struct {
	rdb     redis.UniversalClient
	key     string
	ttl     time.Duration
	backoff Backoff
	fencing bool
	wakeups bool
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
	key     string
	token   string
	rdb     redis.UniversalClient
	fence   int64
	channel string // non-empty when Release must publish a wake-up

	mu      sync.Mutex
	expires time.Time

	// Waits is how many attempts failed before this hold was granted.
	Waits int
}

// Fence is the hold's fencing token: strictly greater than that of every
// earlier hold of the same key. It is 0 unless the mutex was made
// WithFencing.
func (l *Lock) Fence() int64 { return l.fence }

// Expires is a conservative estimate of when the lease ends: the lease
// length counted from just before the acquiring (or last extending)
// command was sent. The server's expiry is never earlier, unless clocks
// drift.
func (l *Lock) Expires() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.expires
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
	sent := time.Now()
	l := &Lock{key: m.key, token: token, rdb: m.rdb, expires: sent.Add(m.ttl)}
	if m.wakeups {
		l.channel = WakeupChannel(m.key)
	}
	if m.fencing {
		fence, err := fencedAcquireScript.Run(ctx, m.rdb, []string{m.key, FenceKey(m.key)}, token, m.ttl.Milliseconds()).Int64()
		if err != nil {
			return nil, fmt.Errorf("locking: acquire %s: %w", m.key, err)
		}
		if fence == 0 {
			return nil, ErrNotAcquired
		}
		l.fence = fence
		return l, nil
	}
	ok, err := m.rdb.SetNX(ctx, m.key, token, m.ttl).Result()
	if err != nil {
		return nil, fmt.Errorf("locking: acquire %s: %w", m.key, err)
	}
	if !ok {
		return nil, ErrNotAcquired
	}
	return l, nil
}

// Acquire retries TryAcquire with the mutex's backoff until it succeeds or
// ctx ends; give ctx a deadline to bound the wait. On success, Lock.Waits
// says how many attempts failed first. When ctx ends first, the error wraps
// both ErrNotAcquired and the context's error.
func (m *Mutex) Acquire(ctx context.Context) (*Lock, error) {
	if m.wakeups {
		return m.acquireWoken(ctx)
	}
	for n := 0; ; n++ {
		l, err := m.TryAcquire(ctx)
		if err == nil {
			l.Waits = n
			return l, nil
		}
		if !errors.Is(err, ErrNotAcquired) {
			return nil, endedWhileWaiting(ctx, err)
		}
		if err := Sleep(ctx, m.backoff.Delay(n)); err != nil {
			return nil, fmt.Errorf("%w: %s after %d attempts: %w", ErrNotAcquired, m.key, n+1, err)
		}
	}
}

// endedWhileWaiting marks an attempt's error as ErrNotAcquired when it
// failed because ctx ended (a deadline that expired during the command
// rather than between attempts), so callers see one error for "gave up".
func endedWhileWaiting(ctx context.Context, err error) error {
	if ctx.Err() != nil && !errors.Is(err, ErrNotAcquired) {
		return fmt.Errorf("%w: %w", ErrNotAcquired, err)
	}
	return err
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
	var n int
	var err error
	if l.channel != "" {
		n, err = releasePublishScript.Run(ctx, l.rdb, []string{l.key}, l.token, l.channel).Int()
	} else {
		n, err = releaseScript.Run(ctx, l.rdb, []string{l.key}, l.token).Int()
	}
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
	sent := time.Now()
	n, err := extendScript.Run(ctx, l.rdb, []string{l.key}, l.token, ttl.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("locking: extend %s: %w", l.key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	l.mu.Lock()
	l.expires = sent.Add(ttl)
	l.mu.Unlock()
	return nil
}
