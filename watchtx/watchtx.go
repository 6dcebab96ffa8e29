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
	"time"

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
	return retry(ctx, opts, func() error { return c.Watch(ctx, fn, keys...) })
}

// retry is the one loop of Run and RunPiped: it calls attempt until it
// returns without redis.TxFailedErr, the retries are used up, or ctx ends,
// and returns how many attempts were aborted by a conflict and the last
// error (ctx.Err() wrapped when ctx ended first).
func retry(ctx context.Context, opts Options, attempt func() error) (retries int, err error) {
	for {
		if err := ctx.Err(); err != nil {
			return retries, fmt.Errorf("watchtx: after %d retries: %w", retries, err)
		}
		err = attempt()
		if !errors.Is(err, redis.TxFailedErr) {
			return retries, err
		}
		retries++
		if opts.MaxRetries > 0 && retries >= opts.MaxRetries {
			return retries, ErrTooManyRetries
		}
	}
}

// Watch queues WATCH keys on a pipeline, so that the WATCH travels in the
// same round trip as the reads that follow it. Use it inside RunPiped,
// which sends UNWATCH when the transaction is abandoned.
func Watch(ctx context.Context, p redis.Pipeliner, keys ...string) *redis.StatusCmd {
	args := make([]any, 0, 1+len(keys))
	args = append(args, "watch")
	for _, k := range keys {
		args = append(args, k)
	}
	cmd := redis.NewStatusCmd(ctx, args...)
	_ = p.Process(ctx, cmd)
	return cmd
}

// conn runs fn on one dedicated connection to the Redis node that serves
// key (the node of key's hash slot on a cluster), with nothing watched yet:
// fn arms its own WATCH with Watch, in the pipeline of its first reads, and
// finishes with MULTI/EXEC (tx.TxPipelined). If fn returns an error other
// than redis.TxFailedErr, the transaction was abandoned before EXEC and
// conn sends UNWATCH (unless fn says, with Unwatched, that it did), so the
// connection goes back to the pool clean.
func conn(ctx context.Context, c redis.UniversalClient, key string, fn func(tx *redis.Tx) error) error {
	wrapped := func(tx *redis.Tx) error {
		err := fn(tx)
		var done unwatchedError
		if errors.As(err, &done) {
			return done.err
		}
		if err != nil && !errors.Is(err, redis.TxFailedErr) {
			// Even when ctx has ended: a connection must not go back to
			// the pool with a WATCH armed.
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			_ = tx.Unwatch(uctx).Err()
			cancel()
		}
		return err
	}
	switch cc := c.(type) {
	case *redis.Client:
		return cc.Watch(ctx, wrapped)
	case *redis.ClusterClient:
		node, err := cc.MasterForKey(ctx, key)
		if err != nil {
			return err
		}
		return node.Watch(ctx, wrapped)
	default:
		// Other clients can only open a transaction by WATCHing a key.
		return c.Watch(ctx, wrapped, key)
	}
}

// RunPiped is Run with fewer round trips: fn runs on one dedicated
// connection to the Redis node that serves key (the node of key's hash
// slot on a cluster), arms its own WATCH with Watch in the pipeline of its
// reads, and is called again on the same connection each time EXEC is
// aborted, with nothing watched. It returns the number of aborted
// attempts and fn's final error. When fn gives up before EXEC (an error
// other than redis.TxFailedErr), RunPiped sends UNWATCH, so that the
// connection goes back to the pool clean, unless fn sent it itself and
// said so (Unwatched); it sends it even when ctx has ended.
//
// Compared with Run, this saves the round trip of a WATCH sent on its own.
func RunPiped(ctx context.Context, c redis.UniversalClient, opts Options, key string, fn func(tx *redis.Tx) error) (retries int, err error) {
	err = conn(ctx, c, key, func(tx *redis.Tx) error {
		var err error
		retries, err = retry(ctx, opts, func() error { return fn(tx) })
		return err
	})
	return retries, err
}

// unwatchedError marks an error returned after the transaction's WATCH was
// already released, so conn need not send UNWATCH.
type unwatchedError struct{ err error }

func (e unwatchedError) Error() string { return e.err.Error() }
func (e unwatchedError) Unwrap() error { return e.err }

// Unwatched wraps err, returned by a RunPiped function that has itself
// sent UNWATCH (with Unwatch, for instance in the same pipeline as other
// clean-up), so that RunPiped does not send another. errors.Is and
// errors.As see through it.
func Unwatched(err error) error {
	if err == nil {
		return nil
	}
	return unwatchedError{err}
}

// Unwatch queues UNWATCH on a pipeline (see Unwatched).
func Unwatch(ctx context.Context, p redis.Pipeliner) *redis.StatusCmd {
	cmd := redis.NewStatusCmd(ctx, "unwatch")
	_ = p.Process(ctx, cmd)
	return cmd
}
