package locking

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/locking/attempt"
	"github.com/lockmarket/lockmarket/locking/internal/lease"
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
// retrying in step. A Min of 0 or less counts as 1 ms, and a Max below
// Min as Min.
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

// Wait sleeps for Delay(n) on ctx's clock (ClockFrom), or until ctx ends
// (then it returns ctx.Err()).
func (b Backoff) Wait(ctx context.Context, n int) error {
	return ClockFrom(ctx).Sleep(ctx, b.Delay(n))
}

// The lease pieces every kind of this package uses.
var (
	checkTTL      = lease.CheckTTL
	releaseScript = lease.ReleaseScript
	extendScript  = lease.ExtendScript
)

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
	lost    backgroundReleases // of acquisitions whose reply was lost
}

// NewMutex returns a mutex on key whose holds last ttl unless extended.
// ttl is rounded down to whole milliseconds; NewMutex panics if it is
// below 1 ms (see the package doc's Configuration).
func NewMutex(rdb redis.UniversalClient, key string, ttl time.Duration, opts ...MutexOption) *Mutex {
	lease.MustTTL("locking: NewMutex", ttl)
	m := &Mutex{rdb: rdb, key: key, ttl: ttl, backoff: DefaultBackoff}
	for _, o := range opts {
		o.applyMutex(m)
	}
	return m
}

// Key is the Redis key the mutex uses.
func (m *Mutex) Key() string { return m.key }

// TTL is the lease length of each hold.
func (m *Mutex) TTL() time.Duration { return m.ttl }

// fenceKey is the counter a Mutex made WithFencing on key increments on
// every acquisition. It shares key's hash slot.
func fenceKey(key string) string { return lease.Sibling(key, ":fence") }

// wakeupChannel is the pub/sub channel on which a Mutex made WithWakeups
// announces that key was released.
func wakeupChannel(key string) string { return lease.Sibling(key, ":released") }

// Lock is one hold of a Mutex, identified by a random token.
type Lock struct {
	hold
	rdb     redis.UniversalClient
	fence   int64
	channel string // non-empty when Release must publish a wake-up
	stop    func() // stops the watchdog of AcquireKeepAlive, if any
	// lost runs the background release of a Release that Redis did not
	// answer (see releaseUnanswered): the mutex's.
	lost *backgroundReleases
}

// Fence is the hold's fencing token: strictly greater than that of every
// earlier hold of the same key. It is 0 unless the mutex was made
// WithFencing.
func (l *Lock) Fence() int64 { return l.fence }

// TryAcquire makes one attempt. It returns ErrNotAcquired if the lock is
// held by someone else.
//
// When the attempt's reply is lost (a timeout or a broken connection after
// the command was sent), the lock may have been taken all the same, now or
// when a stalled server resumes: TryAcquire returns the error and releases
// the attempt's token in the background as soon as Redis answers again
// (see Settle), so the lock is not left held until its lease ends. An
// attempt the client sent twice (go-redis retries a command whose reply
// timed out) and that finds its own token in the key is granted.
func (m *Mutex) TryAcquire(ctx context.Context) (*Lock, error) {
	l := m.newLock(ctx)
	if m.fencing {
		fence, err := fencedAcquireScript.Run(ctx, m.rdb, []string{m.key, fenceKey(m.key)}, l.Token(), m.ttl.Milliseconds()).Int64()
		l.fence = fence
		return m.outcome(l, fence > 0, err)
	}
	ok, err := acquired(m.rdb.SetArgs(ctx, m.key, l.Token(), acquireArgs(m.ttl)), l.Token())
	return m.outcome(l, ok, err)
}

// newLock is the hold an attempt would grant: a fresh token, and a lease
// counted from now on ctx's clock, just before the attempt is sent.
func (m *Mutex) newLock(ctx context.Context) *Lock {
	l := &Lock{hold: newHold(m.key, lease.NewToken(), ClockFrom(ctx).Now().Add(m.ttl)), rdb: m.rdb}
	if m.wakeups {
		l.channel = wakeupChannel(m.key)
	}
	l.lost = &m.lost
	return l
}

// acquireArgs makes SET ... NX PX ttl GET: the reply is the key's previous
// value, so an attempt can tell its own token from someone else's.
func acquireArgs(ttl time.Duration) redis.SetArgs {
	return redis.SetArgs{Mode: "NX", TTL: ttl, Get: true}
}

// acquired reads the reply of a SET made with acquireArgs: no previous
// value means the key was free and now holds token; token itself means an
// earlier send of this very command (a client retry after a lost reply)
// took it.
func acquired(cmd *redis.StatusCmd, token string) (bool, error) {
	old, err := cmd.Result()
	if errors.Is(err, redis.Nil) {
		return true, nil
	}
	return err == nil && old == token, err
}

// outcome turns an attempt's reply into its result: l if granted,
// ErrNotAcquired, or the attempt's error, after starting the background
// release of l's token when the attempt may have been applied.
func (m *Mutex) outcome(l *Lock, granted bool, err error) (*Lock, error) {
	switch {
	case err != nil && maybeApplied(err, m.fencing):
		m.releaseLost(l.Token())
		return nil, fmt.Errorf("locking: acquire %s (reply lost; releasing it in the background): %w", m.key, err)
	case err != nil:
		return nil, fmt.Errorf("locking: acquire %s: %w", m.key, err)
	case !granted:
		return nil, ErrNotAcquired
	}
	return l, nil
}

// Acquire retries TryAcquire with the mutex's backoff until it succeeds or
// ctx ends; give ctx a deadline to bound the wait. On success, Lock.Waits
// says how many attempts failed first. When ctx ends first, the error wraps
// both ErrNotAcquired and the context's error.
func (m *Mutex) Acquire(ctx context.Context) (*Lock, error) {
	return m.attempts(ctx, func(ctx context.Context, _ int) (*Lock, error) { return m.TryAcquire(ctx) })
}

// attempts makes attempt n with try until one succeeds (attempt.Loop),
// waiting after each refusal for the backoff interval or, with wake-ups,
// a release (awaitTurn).
func (m *Mutex) attempts(ctx context.Context, try func(ctx context.Context, n int) (*Lock, error)) (*Lock, error) {
	var w *waker
	defer func() {
		if w != nil {
			w.leave()
		}
	}()
	l, waits, err := attempt.Loop(ctx, attempt.Retry{Key: m.key, NotAcquired: ErrNotAcquired,
		Wait: func(ctx context.Context, n int) error { return m.awaitTurn(ctx, &w, n) }}, try)
	if err != nil {
		return nil, err
	}
	l.h.SetWaits(waits)
	return l, nil
}

// retry calls try until it succeeds, fails with an error other than
// ErrNotAcquired, or ctx ends while it waits delay(n) after failed attempt
// n (from 0) on ctx's clock (attempt.Loop). It returns the hold and how
// many attempts failed first.
func retry[H any](ctx context.Context, key string, delay func(n int) time.Duration, try func(context.Context) (H, error)) (H, int, error) {
	return attempt.Loop(ctx, attempt.Retry{Key: key, NotAcquired: ErrNotAcquired,
		Wait: func(ctx context.Context, n int) error { return ClockFrom(ctx).Sleep(ctx, delay(n)) }},
		func(ctx context.Context, _ int) (H, error) { return try(ctx) })
}

// Release deletes the lock if it still holds this token, in one atomic
// script. It returns ErrNotHeld if the lease had expired (whoever holds it
// now keeps it). A hold taken by AcquireKeepAlive stops its watchdog, and
// waits for it, first. When Redis does not answer (it is down, or the
// reply is lost) or refuses the release for a while (LOADING after a
// restart, MASTERDOWN, TRYAGAIN), Release returns the error and sends the
// release again in the background until Redis answers or the lease ends
// (see Settle), so a lock that Redis keeps across a restart does not block
// everyone until its lease ends.
func (l *Lock) Release(ctx context.Context) error {
	if l.stop != nil {
		l.stop()
	}
	n, err := l.releaseOnce(ctx)
	if err != nil {
		if l.releaseUnanswered(err) {
			return fmt.Errorf("locking: release %s (not answered or refused for now; releasing it in the background): %w", l.Key(), err)
		}
		return fmt.Errorf("locking: release %s: %w", l.Key(), err)
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
	sent := ClockFrom(ctx).Now()
	n, err := extendScript.Run(ctx, l.rdb, []string{l.Key()}, l.Token(), ttl.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("locking: extend %s: %w", l.Key(), err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	l.h.SetExpires(sent.Add(ttl))
	return nil
}
