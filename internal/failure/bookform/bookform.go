// Package bookform supplies the lock of the book's client form: a market
// made with markettrace.WithClient(markettrace.BookClient) sends the book's command
// sequences one per round trip, and under Coarse and Fine it takes the
// lock the simulator gives it through markettrace.WithLockFunc. Lock is the
// book's acquire_lock_with_timeout (section 6.2.5), which is one of the
// flawed recipes (internal/flawed.BookTimeout): it is supplied from here,
// by the tools that reproduce the book's figures, and never by the
// market itself.
package bookform

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/flawed"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// LockPoll is how long the book's lock sleeps between attempts
// (time.sleep(.001) in listing 6.11). A timer this short is not honoured
// exactly: on a busy Linux machine a 1 ms sleep lasts about 1.1 ms or
// more, which the book form then pays.
const LockPoll = time.Millisecond

// Options returns the market options of client form f on rdb: the form
// and, for markettrace.BookClient, the book's lock (Lock), so that Coarse and
// Fine run as the book's listings 6.2.3-6.2.5 do.
func Options(rdb redis.UniversalClient, f markettrace.ClientForm) []market.Option {
	opts := []market.Option{markettrace.WithClient(f)}
	if f == markettrace.BookClient {
		opts = append(opts, markettrace.WithLockFunc(Lock(rdb)))
	}
	return opts
}

// Lock is the book's acquire_lock_with_timeout (section 6.2.5) as a
// markettrace.LockFunc: the recipe is internal/flawed.BookTimeout (SETNX a
// random token, then EXPIRE in whole seconds; after a failed attempt,
// TTL, and EXPIRE when the lock has no expiry), retried by flawed.Acquire
// every LockPoll until ctx ends; the release is BookTimeout's WATCH, GET,
// MULTI DEL EXEC.
func Lock(rdb redis.UniversalClient) markettrace.LockFunc {
	return func(ctx context.Context, key string, ttl time.Duration) (markettrace.Lease, error) {
		l := &flawed.BookTimeout{RDB: rdb, Key: key, TTL: ttl}
		token, waits, err := flawed.Acquire(ctx, givingBack{l}, poll(LockPoll))
		if err != nil {
			return markettrace.Lease{}, err
		}
		return markettrace.Lease{Token: token, Waits: waits, Release: func(ctx context.Context) error {
			return l.Release(ctx, token)
		}}, nil
	}
}

// givingBack is the book's lock, except that an attempt whose SETNX won
// but whose EXPIRE failed gives the lock back rather than leave it
// without an expiry.
type givingBack struct{ *flawed.BookTimeout }

func (l givingBack) TryAcquire(ctx context.Context) (string, error) {
	token, err := l.BookTimeout.TryAcquire(ctx)
	if err != nil && token != "" {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_ = l.Release(rctx, token)
		cancel()
		return "", err
	}
	return token, err
}

// poll waits the same time after every attempt, as the book's lock does.
type poll time.Duration

func (p poll) Wait(ctx context.Context, _ int) error {
	return locking.ClockFrom(ctx).Sleep(ctx, time.Duration(p))
}
