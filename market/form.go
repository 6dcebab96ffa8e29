package market

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/market/internal/plug"
	"github.com/lockmarket/lockmarket/watchtx"
)

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
	if m.plug.Form == plug.Book {
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
