package locking

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/locking/attempt"
	"github.com/lockmarket/lockmarket/locking/internal/lease"
)

// ErrTaken is returned by RedlockMutex when too few servers granted the lock
// because others hold it there (or the grant took longer than the lease).
// It wraps ErrNotAcquired.
var ErrTaken = fmt.Errorf("%w: held elsewhere on a majority of servers", ErrNotAcquired)

// ErrQuorumUnreachable is returned by RedlockMutex when so many servers failed
// to answer within the per-server timeout that no majority could be
// reached, whoever holds the lock.
var ErrQuorumUnreachable = errors.New("locking: redlock quorum unreachable")

// RedlockMutex is the lock of the Redis documentation's "Distributed Locks with
// Redis" over N independent Redis servers (not replicas of each other):
// SET key token NX PX ttl on every server, each with a short timeout;
// the lock is held when a majority (N/2+1) granted it and the time spent
// is less than the lease, and it is then valid for
// ttl - elapsed - drift, where drift = ttl/100 + 2 ms allows for clock
// rate differences between the servers. On failure, and on release, the
// token is deleted from every server.
//
// Guarantee: while validity remains and no server loses its keys (a crash
// without persistence followed by a restart within ttl breaks it), no two
// clients hold the lock. It assumes bounded clock drift and bounded pauses
// of the holder; as with any lease, pair it with fencing where a stale
// write must never land.
type RedlockMutex struct {
	clients     []redis.UniversalClient
	key         string
	ttl         time.Duration
	nodeTimeout time.Duration
	backoff     Backoff
	// nodeTimeoutSet is true when WithNodeTimeout set nodeTimeout.
	nodeTimeoutSet bool
}

// NewRedlockMutex returns a RedlockMutex on key over clients, one per
// independent server. Its default backoff is 5-100 ms. It panics if ttl
// is below 1 ms, or if WithNodeTimeout gave a timeout that is not below
// ttl (see the package doc's Configuration).
func NewRedlockMutex(clients []redis.UniversalClient, key string, ttl time.Duration, opts ...RedlockMutexOption) *RedlockMutex {
	lease.MustTTL("locking: NewRedlockMutex", ttl)
	r := &RedlockMutex{
		clients: clients, key: key, ttl: ttl,
		nodeTimeout: min(max(ttl/100, 5*time.Millisecond), 500*time.Millisecond),
		backoff:     Backoff{Min: 5 * time.Millisecond, Max: 100 * time.Millisecond},
	}
	for _, o := range opts {
		o.applyRedlockMutex(r)
	}
	if r.nodeTimeoutSet && r.nodeTimeout >= ttl {
		panic(fmt.Sprintf("locking: NewRedlockMutex: node timeout %v is not below the %v lease", r.nodeTimeout, ttl))
	}
	return r
}

// Key is the Redis key the lock uses on every server.
func (r *RedlockMutex) Key() string { return r.key }

// TTL is the lease length of each hold.
func (r *RedlockMutex) TTL() time.Duration { return r.ttl }

// Quorum is the number of servers that must agree: N/2+1.
func (r *RedlockMutex) Quorum() int { return len(r.clients)/2 + 1 }

// Drift is the clock-drift allowance subtracted from a lease: ttl/100 + 2 ms.
func (r *RedlockMutex) Drift(ttl time.Duration) time.Duration { return lease.Drift(ttl) }

// RedlockLock is one hold of a RedlockMutex. Its Expires is when its
// validity ends, by the local clock.
type RedlockLock struct {
	hold
	r *RedlockMutex
}

// Validity is how much of the hold's validity is left.
func (h *RedlockLock) Validity() time.Duration { return time.Until(h.Expires()) }

// onAll runs fn on every server in parallel, each under the per-server
// timeout, and returns how many returned true, false and an error. The
// goroutines are started, and waited for, through the context's clock.
func (r *RedlockMutex) onAll(ctx context.Context, fn func(ctx context.Context, c redis.UniversalClient) (bool, error)) (yes, no, failed int, firstErr error) {
	clock := ClockFrom(ctx)
	var mu sync.Mutex
	left := len(r.clients)
	// done ends when the last server has answered.
	done, finished := context.WithCancel(context.Background())
	defer finished()
	for _, c := range r.clients {
		clock.Go(func() {
			nctx, cancel := context.WithTimeout(ctx, r.nodeTimeout)
			defer cancel()
			ok, err := fn(nctx, c)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				failed++
				if firstErr == nil {
					firstErr = err
				}
			case ok:
				yes++
			default:
				no++
			}
			if left--; left == 0 {
				finished()
			}
		})
	}
	if len(r.clients) > 0 {
		await(clock, done)
		<-done.Done() // a clock whose sleep ended early (a stopped one)
	}
	mu.Lock()
	defer mu.Unlock()
	return yes, no, failed, firstErr
}

// TryAcquire makes one attempt on all servers. It returns ErrTaken when
// enough servers answered but too few granted the lock, and
// ErrQuorumUnreachable when fewer than a majority answered at all.
func (r *RedlockMutex) TryAcquire(ctx context.Context) (*RedlockLock, error) {
	if len(r.clients) == 0 {
		return nil, fmt.Errorf("%w: no servers", ErrQuorumUnreachable)
	}
	token := lease.NewToken()
	start := ClockFrom(ctx).Now()
	yes, _, failed, firstErr := r.onAll(ctx, func(ctx context.Context, c redis.UniversalClient) (bool, error) {
		return c.SetNX(ctx, r.key, token, r.ttl).Result()
	})
	validity := r.ttl - ClockFrom(ctx).Now().Sub(start) - r.Drift(r.ttl)
	if yes >= r.Quorum() && validity > 0 {
		return &RedlockLock{hold: newHold(r.key, token, start.Add(r.ttl-r.Drift(r.ttl))), r: r}, nil
	}
	r.releaseAll(ctx, token)
	if len(r.clients)-failed < r.Quorum() {
		return nil, fmt.Errorf("%w: %d of %d servers failed (first: %w)", ErrQuorumUnreachable, failed, len(r.clients), firstErr)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotAcquired, ctx.Err())
	}
	return nil, ErrTaken
}

// Acquire retries TryAcquire with backoff while the lock is taken or the
// quorum unreachable, until it succeeds or ctx ends; the error then wraps
// the last attempt's error and the context's.
func (r *RedlockMutex) Acquire(ctx context.Context) (*RedlockLock, error) {
	h, waits, err := attempt.Loop(ctx, attempt.Retry{Key: r.key, NotAcquired: ErrNotAcquired,
		Refused: func(err error) bool { return errors.Is(err, ErrNotAcquired) || errors.Is(err, ErrQuorumUnreachable) },
		Wait:    r.backoff.Wait},
		func(ctx context.Context, _ int) (*RedlockLock, error) { return r.TryAcquire(ctx) })
	if err != nil {
		return nil, err
	}
	h.h.SetWaits(waits)
	return h, nil
}

func (r *RedlockMutex) releaseAll(ctx context.Context, token string) int {
	yes, _, _, _ := r.onAll(context.WithoutCancel(ctx), func(ctx context.Context, c redis.UniversalClient) (bool, error) {
		n, err := releaseScript.Run(ctx, c, []string{r.key}, token).Int()
		return n == 1, err
	})
	return yes
}

// Release deletes the hold's token from every server (whichever still
// holds it). It returns ErrNotHeld when no server held it any more.
func (h *RedlockLock) Release(ctx context.Context) error {
	h.h.SetExpires(time.Time{})
	if h.r.releaseAll(ctx, h.Token()) == 0 {
		return ErrNotHeld
	}
	return nil
}

// Extend resets the lease to ttl on every server that still holds the
// token; it succeeds when a majority did so in less than ttl, and the
// validity is then recomputed as for an acquisition. Otherwise it returns
// ErrNotHeld (a majority refused) or ErrQuorumUnreachable (too many
// servers failed), and the hold should be treated as lost.
func (h *RedlockLock) Extend(ctx context.Context, ttl time.Duration) error {
	if err := checkTTL(ttl); err != nil {
		return err
	}
	r := h.r
	start := ClockFrom(ctx).Now()
	yes, _, failed, firstErr := r.onAll(ctx, func(ctx context.Context, c redis.UniversalClient) (bool, error) {
		n, err := extendScript.Run(ctx, c, []string{r.key}, h.Token(), ttl.Milliseconds()).Int()
		return n == 1, err
	})
	if yes >= r.Quorum() && ClockFrom(ctx).Now().Sub(start) < ttl-r.Drift(ttl) {
		h.h.SetExpires(start.Add(ttl - r.Drift(ttl)))
		return nil
	}
	if len(r.clients)-failed < r.Quorum() {
		return fmt.Errorf("%w: %d of %d servers failed (first: %w)", ErrQuorumUnreachable, failed, len(r.clients), firstErr)
	}
	return ErrNotHeld
}
