// Package attempt is the retry loop of package locking's lease locks:
// attempt, wait after a refusal, and give up the way they all do. Locks
// built outside package locking on its model (the flawed recipes the
// project's tools demonstrate) use it so that they give up the same way;
// a user of package locking never needs it.
package attempt

import (
	"context"
	"errors"
	"fmt"
)

// Retry says how Loop retries: after a refusal, an error for which
// Refused reports true (nil: one that wraps NotAcquired), it calls Wait
// before the next attempt.
type Retry struct {
	// Key names the lock in the error of a wait that fails ("": none).
	Key string
	// NotAcquired is the error of a lock not acquired.
	NotAcquired error
	// Refused reports whether an attempt's error is a refusal to retry.
	Refused func(err error) bool
	// Wait waits after failed attempt n (from 0), or returns why it could
	// not (the context's error, say).
	Wait func(ctx context.Context, n int) error
}

// Loop calls try(ctx, n) for attempt n (from 0) until one succeeds, and
// returns its hold and how many attempts failed first. It gives up when
// an attempt fails with an error that is not a refusal, returning that
// error (marked NotAcquired when ctx had ended: EndedWhileWaiting), or
// when a wait fails, returning an error that wraps the last refusal and
// the wait's error.
func Loop[H any](ctx context.Context, r Retry, try func(ctx context.Context, n int) (H, error)) (H, int, error) {
	refused := r.Refused
	if refused == nil {
		refused = func(err error) bool { return errors.Is(err, r.NotAcquired) }
	}
	for n := 0; ; n++ {
		h, err := try(ctx, n)
		if err == nil {
			return h, n, nil
		}
		if !refused(err) {
			return h, n, EndedWhileWaiting(ctx, err, r.NotAcquired)
		}
		if werr := r.Wait(ctx, n); werr != nil {
			if r.Key != "" {
				return h, n, fmt.Errorf("%w: %s after %d attempts: %w", err, r.Key, n+1, werr)
			}
			return h, n, fmt.Errorf("%w: after %d attempts: %w", err, n+1, werr)
		}
	}
}

// EndedWhileWaiting marks an attempt's error with notAcquired when it
// failed because ctx ended (a deadline that expired during the command
// rather than between attempts), so callers see one error for "gave up".
func EndedWhileWaiting(ctx context.Context, err, notAcquired error) error {
	if ctx.Err() != nil && !errors.Is(err, notAcquired) {
		return fmt.Errorf("%w: %w", notAcquired, err)
	}
	return err
}
