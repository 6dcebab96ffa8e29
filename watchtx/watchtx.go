// Package watchtx runs optimistic Redis transactions: WATCH some keys, read,
// decide, then MULTI/EXEC, and start again when another client changed a
// watched key in between (EXEC aborted, redis.TxFailedErr).
//
// It is the helper behind the market's "watch" strategy, and the lock
// strategies use it to WATCH the buyer's hash while they hold a lock.
package watchtx

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// ErrTooManyRetries is returned when every allowed attempt was aborted by a
// conflicting write. It wraps redis.TxFailedErr.
var ErrTooManyRetries = fmt.Errorf("watchtx: too many conflicting retries: %w", redis.TxFailedErr)

// Options bounds the retries. The context's deadline bounds them too.
type Options struct {
	// MaxRetries is how many aborted attempts are tolerated before giving up
	// with ErrTooManyRetries; 0 means no limit but the context.
	MaxRetries int
}

// Run calls fn with a transaction that WATCHes keys, as often as needed
// until fn returns without redis.TxFailedErr, the retries are used up, or
// ctx ends. fn reads through tx, then writes with tx.TxPipelined; it must
// have no side effects outside Redis, since it may run several times.
//
// Run returns how many attempts were aborted by a conflict (the "retries")
// and fn's final error. On a context error it returns ctx.Err() wrapped.
func Run(ctx context.Context, c redis.UniversalClient, opts Options, fn func(tx *redis.Tx) error, keys ...string) (retries int, err error) {
	for {
		if err := ctx.Err(); err != nil {
			return retries, fmt.Errorf("watchtx: after %d retries: %w", retries, err)
		}
		err = c.Watch(ctx, fn, keys...)
		if !errors.Is(err, redis.TxFailedErr) {
			return retries, err
		}
		retries++
		if opts.MaxRetries > 0 && retries >= opts.MaxRetries {
			return retries, ErrTooManyRetries
		}
	}
}
