package market

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/watchtx"
)

// ClientForm is how a strategy's commands are grouped into round trips.
// Both forms run the same reads, checks and writes (op.go) and keep every
// audited invariant; they differ in how long an operation takes, and so
// in how long a WATCH stays exposed to conflicting writes.
type ClientForm string

// The client forms.
const (
	// LeanClient pipelines: the WATCH (or the lock's acquisition) travels
	// with the reads, the release of a lock inside the commit's MULTI/EXEC.
	// An uncontended List or Purchase costs two round trips (Lua one).
	LeanClient ClientForm = "lean"
	// BookClient sends what the book's listings send, one command per
	// round trip, in their order: WATCH, then each read, then
	// MULTI...EXEC (listings 4.5 and 4.6); under Coarse and Fine, the
	// lock is taken in round trips of its own before, and released after
	// the commit, around the lock-guarded purchase of 6.2.3/6.2.4 with
	// its listing's bugs fixed
	// (the reads are sent after the WATCH, not through a pipeline that has
	// already run, and the buyer's and seller's "funds" fields are
	// incremented). What this market does beyond the book (a listing
	// count, a purchase's receipt, the seller's credit bound, operation
	// IDs) travels with the book's commands and adds no round trip. Lua is
	// one script per operation in both forms. The book's own lock with
	// timeout (6.2.5: SETNX, then EXPIRE, a TTL check and a 1 ms sleep
	// after each failed attempt; released by WATCH, GET, MULTI DEL EXEC)
	// is one of the flawed recipes, so the market does not take it
	// itself: the simulator supplies it with WithLockFunc. Without a
	// LockFunc the book form takes the default locking.Mutex, unpipelined.
	BookClient ClientForm = "book"
)

// ClientForms lists the forms, the default first.
var ClientForms = []ClientForm{LeanClient, BookClient}

// ParseClientForm parses a client form's name.
func ParseClientForm(s string) (ClientForm, error) {
	for _, f := range ClientForms {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("%w: unknown client form %q (want lean or book)", ErrInvalid, s)
}

// WithClient sets the client form of every operation (default
// LeanClient).
func WithClient(f ClientForm) Option { return func(m *Market) { m.form = f } }

// ClientForm is the market's client form.
func (m *Market) ClientForm() ClientForm { return m.form }

// readSteps are o's read steps, each queueing the commands of one round
// trip of the book's listings on the pipeline it is given.
func readSteps(ctx context.Context, o op) []func(p redis.Pipeliner) {
	var steps []func(p redis.Pipeliner)
	o.read(ctx, func(queue func(p redis.Pipeliner)) { steps = append(steps, queue) })
	return steps
}

// watchAndRead WATCHes keys (none: no WATCH) on tx's connection and sends
// the read steps (see op and readSteps): in the lean form all in one pipeline, behind an
// UNWATCH when unwatch is set; in the book form the WATCH and each step as
// a round trip of its own, in order (nothing is watched yet when the book
// form reads, so it needs no UNWATCH). A failed read's error is left in
// its reply, for the op's check; only a failed WATCH or lean pipeline is
// returned.
//
// When w is not nil, it records when the round trip carrying the WATCH was
// sent and answered.
func (m *Market) watchAndRead(ctx context.Context, tx *redis.Tx, keys []string, unwatch bool,
	steps []func(p redis.Pipeliner), w *watchTimes) error {
	if w != nil {
		w.sent = time.Now()
	}
	if m.form == BookClient {
		if len(keys) > 0 {
			if err := tx.Watch(ctx, keys...).Err(); err != nil {
				return err
			}
		}
		if w != nil {
			w.answered = time.Now()
		}
		for _, step := range steps {
			// The replies carry any error; check reads them.
			_, _ = tx.Pipelined(ctx, func(p redis.Pipeliner) error {
				step(p)
				return nil
			})
		}
		return nil
	}
	defer func() {
		if w != nil {
			w.answered = time.Now()
		}
	}()
	cmds, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
		if unwatch {
			watchtx.Unwatch(ctx, p)
		}
		if len(keys) > 0 {
			watchtx.Watch(ctx, p, keys...)
		}
		for _, step := range steps {
			step(p)
		}
		return nil
	})
	return pipelinedErr(cmds, err)
}

// watchTimes is when the round trip carrying a WATCH was sent and
// answered, as the client saw it.
type watchTimes struct{ sent, answered time.Time }

// window estimates the conflict window of an EXEC sent at execSent and
// answered at execAnswered (see Trace.Exec).
func (w watchTimes) window(execSent, execAnswered time.Time) time.Duration {
	return windowEstimate(w.sent, w.answered, execSent, execAnswered)
}

// windowEstimate is the conflict window of a WATCH sent at watchSent and
// answered at watchAnswered, and of the EXEC that ends it, sent at
// execSent and answered at execAnswered: the time from the WATCH's
// execution in Redis to the EXEC's, which the client cannot see,
// estimated as the mean of the outer span (watchSent to execAnswered, too
// long by the WATCH's way out and the EXEC's way back) and the inner span
// (watchAnswered to execSent, too short by the WATCH's way back and the
// EXEC's way out). The estimate is exact when the two round trips split
// alike between the way out and the way back, however unevenly (a delay
// that holds only the replies, say).
func windowEstimate(watchSent, watchAnswered, execSent, execAnswered time.Time) time.Duration {
	outer := execAnswered.Sub(watchSent)
	inner := execSent.Sub(watchAnswered)
	return (outer + inner) / 2
}
