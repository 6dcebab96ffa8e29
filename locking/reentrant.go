package locking

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/locking/internal/lease"
)

// ErrNoOwner is returned by ReentrantMutex when the context carries no owner
// (see WithOwner).
var ErrNoOwner = errors.New("locking: no lock owner in context")

type ownerKey struct{}

// WithOwner returns a context that carries owner as the identity of the
// reentrant lock holder. Go has no thread identity, so the identity that a
// Java lock takes from the current thread travels in the context: every
// call made with a context derived from this one acts as the same owner.
func WithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// OwnerFrom returns the owner carried by ctx, if any.
func OwnerFrom(ctx context.Context) (string, bool) {
	o, ok := ctx.Value(ownerKey{}).(string)
	return o, ok && o != ""
}

// ReentrantMutex is a lock that its owner may take again while holding
// it (seed recipe 8): the key is a hash with one field, owner -> hold
// count. Acquire increments the owner's count when the lock is free or
// already the owner's, and resets the lease; each hold's Release
// decrements it and deletes the key at zero. A release by anyone but the
// owner is refused. Like Mutex it is a lease: the whole hold, however
// deep, expires ttl after its last acquisition or extension.
type ReentrantMutex struct {
	rdb     redis.UniversalClient
	key     string
	ttl     time.Duration
	backoff Backoff
}

// NewReentrantMutex returns a reentrant lock on key whose holds last ttl
// unless extended. It panics if ttl is below 1 ms (see the package doc's
// Configuration).
func NewReentrantMutex(rdb redis.UniversalClient, key string, ttl time.Duration, opts ...ReentrantMutexOption) *ReentrantMutex {
	lease.MustTTL("locking: NewReentrantMutex", ttl)
	r := &ReentrantMutex{rdb: rdb, key: key, ttl: ttl, backoff: DefaultBackoff}
	for _, o := range opts {
		o.applyReentrantMutex(r)
	}
	return r
}

// Key is the Redis key of the lock.
func (r *ReentrantMutex) Key() string { return r.key }

// TTL is the lease length, reset by each acquisition.
func (r *ReentrantMutex) TTL() time.Duration { return r.ttl }

// ReentrantLock is one hold of a ReentrantMutex by one owner, its Token
// (see WithOwner). The owner's other holds of the same lock are separate
// ReentrantLocks; the lock is free once all of them are released. Every
// acquisition and extension by the owner resets the one lease of the
// whole hold, so the lease may last longer than this hold's Expires.
type ReentrantLock struct {
	hold
	r *ReentrantMutex

	mu       sync.Mutex // serializes Release, guards released
	released bool

	// Depth is the owner's hold count right after this acquisition: 1 for
	// a first acquisition, 2 when taken again while held, and so on.
	Depth int
}

var (
	reentrantAcquireScript = redis.NewScript(`
-- KEYS: lock hash; ARGV: owner, ttl ms
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
	local n = redis.call('hincrby', KEYS[1], ARGV[1], 1)
	redis.call('pexpire', KEYS[1], ARGV[2])
	return n
end
return 0`)
	reentrantReleaseScript = redis.NewScript(`
-- KEYS: lock hash; ARGV: owner
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return -1 end
local n = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if n <= 0 then
	redis.call('del', KEYS[1])
	return 0
end
return n`)
	reentrantExtendScript = redis.NewScript(`
-- KEYS: lock hash; ARGV: owner, ttl ms
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
	return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0`)
)

func (r *ReentrantMutex) owner(ctx context.Context) (string, error) {
	o, ok := OwnerFrom(ctx)
	if !ok {
		return "", ErrNoOwner
	}
	return o, nil
}

// TryAcquire makes one attempt for the owner in ctx. It returns the hold
// (its Depth is 1 on a first acquisition), ErrNotAcquired when another
// owner holds the lock, or ErrNoOwner.
func (r *ReentrantMutex) TryAcquire(ctx context.Context) (*ReentrantLock, error) {
	o, err := r.owner(ctx)
	if err != nil {
		return nil, err
	}
	sent := ClockFrom(ctx).Now()
	n, err := reentrantAcquireScript.Run(ctx, r.rdb, []string{r.key}, o, r.ttl.Milliseconds()).Int()
	if err != nil {
		return nil, fmt.Errorf("locking: acquire %s: %w", r.key, err)
	}
	if n == 0 {
		return nil, ErrNotAcquired
	}
	return &ReentrantLock{hold: newHold(r.key, o, sent.Add(r.ttl)), r: r, Depth: n}, nil
}

// Acquire retries TryAcquire with backoff until it succeeds or ctx ends
// (then the error wraps ErrNotAcquired and the context's error).
func (r *ReentrantMutex) Acquire(ctx context.Context) (*ReentrantLock, error) {
	l, waits, err := retry(ctx, r.key, r.backoff.Delay, r.TryAcquire)
	if err != nil {
		return nil, err
	}
	l.h.SetWaits(waits)
	return l, nil
}

// Count returns how many holds the owner in ctx has (0 when none).
func (r *ReentrantMutex) Count(ctx context.Context) (int, error) {
	o, err := r.owner(ctx)
	if err != nil {
		return 0, err
	}
	n, err := r.rdb.HGet(ctx, r.key, o).Int()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, err
}

// Release gives back this hold: the owner's count goes down by one, and at
// 0 the lock is free. It returns ErrNotHeld when the owner holds no count
// any more (the lease expired) or this hold was already released.
func (l *ReentrantLock) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return ErrNotHeld
	}
	n, err := reentrantReleaseScript.Run(ctx, l.r.rdb, []string{l.r.key}, l.Token()).Int()
	if err != nil {
		return fmt.Errorf("locking: release %s: %w", l.r.key, err)
	}
	l.released = true
	if n < 0 {
		return ErrNotHeld
	}
	return nil
}

// Extend resets the lease of the owner's whole hold to ttl from now, or
// returns ErrNotHeld when the owner holds no count any more or this hold
// was released.
func (l *ReentrantLock) Extend(ctx context.Context, ttl time.Duration) error {
	if err := checkTTL(ttl); err != nil {
		return err
	}
	l.mu.Lock()
	released := l.released
	l.mu.Unlock()
	if released {
		return ErrNotHeld
	}
	sent := ClockFrom(ctx).Now()
	n, err := reentrantExtendScript.Run(ctx, l.r.rdb, []string{l.r.key}, l.Token(), ttl.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("locking: extend %s: %w", l.r.key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	l.h.SetExpires(sent.Add(ttl))
	return nil
}
