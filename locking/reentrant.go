package locking

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNoOwner is returned by Reentrant when the context carries no owner
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

// Reentrant is a lock that its owner may take again while holding it
// (seed recipe 8): the key is a hash with one field, owner -> hold count.
// Acquire increments the owner's count when the lock is free or already
// the owner's, and resets the lease; Release decrements it and deletes the
// key at zero. A release by anyone but the owner is refused. Like Mutex it
// is a lease: the whole hold, however deep, expires ttl after its last
// acquisition or extension.
type Reentrant struct {
	rdb     redis.UniversalClient
	key     string
	ttl     time.Duration
	backoff Backoff
}

// NewReentrant returns a reentrant lock on key. Of the options only
// WithBackoff applies.
func NewReentrant(rdb redis.UniversalClient, key string, ttl time.Duration, opts ...Option) *Reentrant {
	m := NewMutex(rdb, key, ttl, opts...)
	return &Reentrant{rdb: rdb, key: key, ttl: ttl, backoff: m.backoff}
}

// Key is the Redis key of the lock.
func (r *Reentrant) Key() string { return r.key }

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

func (r *Reentrant) owner(ctx context.Context) (string, error) {
	o, ok := OwnerFrom(ctx)
	if !ok {
		return "", ErrNoOwner
	}
	if err := checkTTL(r.ttl); err != nil {
		return "", err
	}
	return o, nil
}

// TryAcquire makes one attempt for the owner in ctx. It returns the
// owner's hold count after it (1 on a first acquisition), ErrNotAcquired
// when another owner holds the lock, or ErrNoOwner.
func (r *Reentrant) TryAcquire(ctx context.Context) (int, error) {
	o, err := r.owner(ctx)
	if err != nil {
		return 0, err
	}
	n, err := reentrantAcquireScript.Run(ctx, r.rdb, []string{r.key}, o, r.ttl.Milliseconds()).Int()
	if err != nil {
		return 0, fmt.Errorf("locking: acquire %s: %w", r.key, err)
	}
	if n == 0 {
		return 0, ErrNotAcquired
	}
	return n, nil
}

// Acquire retries TryAcquire with backoff until it succeeds or ctx ends
// (then the error wraps ErrNotAcquired and the context's error).
func (r *Reentrant) Acquire(ctx context.Context) (int, error) {
	for n := 0; ; n++ {
		c, err := r.TryAcquire(ctx)
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, ErrNotAcquired) {
			return 0, endedWhileWaiting(ctx, err)
		}
		if err := Sleep(ctx, r.backoff.Delay(n)); err != nil {
			return 0, fmt.Errorf("%w: %s after %d attempts: %w", ErrNotAcquired, r.key, n+1, err)
		}
	}
}

// Release gives back one hold of the owner in ctx and returns how many
// remain; at 0 the lock is free. It returns ErrNotHeld when the owner
// holds no count (it is someone else's lock, or the lease expired).
func (r *Reentrant) Release(ctx context.Context) (int, error) {
	o, err := r.owner(ctx)
	if err != nil {
		return 0, err
	}
	n, err := reentrantReleaseScript.Run(ctx, r.rdb, []string{r.key}, o).Int()
	if err != nil {
		return 0, fmt.Errorf("locking: release %s: %w", r.key, err)
	}
	if n < 0 {
		return 0, ErrNotHeld
	}
	return n, nil
}

// Extend resets the lease of the owner in ctx to ttl from now, or returns
// ErrNotHeld. With it a Reentrant can be kept alive by KeepAlive (whose
// extensions keep ctx's values, and so the owner).
func (r *Reentrant) Extend(ctx context.Context, ttl time.Duration) error {
	o, err := r.owner(ctx)
	if err != nil {
		return err
	}
	if err := checkTTL(ttl); err != nil {
		return err
	}
	n, err := reentrantExtendScript.Run(ctx, r.rdb, []string{r.key}, o, ttl.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("locking: extend %s: %w", r.key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// Count returns how many holds the owner in ctx has (0 when none).
func (r *Reentrant) Count(ctx context.Context) (int, error) {
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
