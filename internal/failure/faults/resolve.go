package faults

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lockmarket/lockmarket/internal/failure/history"
	"github.com/lockmarket/lockmarket/locking"
)

// How a client resolves an operation whose reply was lost: it runs the
// operation again with the same operation ID (market.OpID), every
// retryPause, for at most retryFor after the first loss. A repeat of an
// operation that had applied applies nothing and succeeds (Cost.Replayed);
// one that had not applied runs now. Either way the answer is the outcome.
const (
	retryPause = 10 * time.Millisecond
	retryFor   = 5 * time.Second
)

// resolver retries operations of unknown outcome with their IDs and counts
// them. It is safe for concurrent use.
type resolver struct {
	retried, resolved atomic.Int64
}

// do runs try, and while its outcome is unknown (history.Classify) runs it
// again, within retryFor; it returns the last error. try must send the
// same operation with the same ID each time; op is its record.
func (r *resolver) do(ctx context.Context, op *history.Pending, try func() error) error {
	return r.retry(ctx, op, try(), try)
}

// retry resolves an operation whose first attempt ended with err: if err
// leaves the outcome unknown, it marks op retried and runs try (the same
// operation, with the same ID) until answered (answered), within
// retryFor, and returns the answer; unanswered, an error of unknown
// outcome.
func (r *resolver) retry(ctx context.Context, op *history.Pending, err error, try func() error) error {
	if !unknown(err) {
		return err
	}
	op.Retry()
	r.retried.Add(1)
	first := err
	deadline := time.Now().Add(retryFor)
	for time.Now().Before(deadline) {
		if (locking.RealClock{}).Sleep(ctx, retryPause) != nil {
			break
		}
		if err = try(); answered(err) {
			r.resolved.Add(1)
			return err
		}
	}
	if unknown(err) {
		return err
	}
	return first
}

// answered reports whether err, a retry's outcome, says what became of
// the operation: it succeeded (or had applied before: the repeat finds
// its record), or the market refused it for a reason of the item, which
// it checks after the record. A retry that did not reach that check (a
// connection refused while the server restarts, LOADING, a lock not
// acquired, contention) says nothing of the first attempt, which may have
// applied.
func answered(err error) bool {
	switch o, reason := history.Classify(err); o {
	case history.Ok:
		return true
	case history.Fail:
		return reason != history.ReasonOther && reason != history.ReasonLockNotAcquired
	}
	return false
}

// add folds the counts into res.
func (r *resolver) add(res *Result) {
	res.Retried += int(r.retried.Load())
	res.Resolved += int(r.resolved.Load())
}

func unknown(err error) bool {
	o, _ := history.Classify(err)
	return o == history.Unknown
}

// opID is the operation ID of the n-th operation of worker w in a trial.
func opID(w, n int) string { return fmt.Sprintf("w%d-%d", w, n) }
